package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/pkg/apiclient"
	"github.com/kubeboot/kubeboot/pkg/netagent"
)

func newNetAgentCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var nodeName, kubeconfig, podSubnets string
	cmd := &cobra.Command{
		Use:    "netagent",
		Short:  "Run the node network agent (the node daemon runs it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodeName == "" || kubeconfig == "" {
				return fmt.Errorf("--node-name and --kubeconfig are required")
			}
			c, _, err := apiclient.FromKubeconfig(kubeconfig, "")
			if err != nil {
				return err
			}
			a := &netagent.Agent{Client: c, NodeName: nodeName, PodSubnets: podSubnets, FS: g.FS(false, s.Out), Logf: func(format string, args ...any) {
				fmt.Fprintf(s.Out, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
			}}
			return a.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&nodeName, "node-name", "", "This node's name")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Credentials that can list and watch nodes")
	cmd.Flags().StringVar(&podSubnets, "pod-subnets", "", "The cluster's pod network (comma-separated CIDRs), masqueraded when traffic leaves it")
	return cmd
}
