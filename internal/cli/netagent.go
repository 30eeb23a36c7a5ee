package cli

import (
	"context"
	"fmt"
	"io"
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

// netAgentInProcess runs the network agent inside the node daemon's
// process, from its spec's args (the same flags `kubeboot netagent`
// takes): one process fewer on every node, ~30 MiB of PSS.
func netAgentInProcess(ctx context.Context, args []string, log io.Writer) error {
	g := &GlobalFlags{}
	root := &cobra.Command{Use: "kubeboot", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().StringVar(&g.Root, "root", "/", "")
	root.AddCommand(newNetAgentCommand(g, Streams{Out: log, Err: log}))
	root.SetArgs(args)
	root.SetOut(log)
	root.SetErr(log)
	return root.ExecuteContext(ctx)
}
