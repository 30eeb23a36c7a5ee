package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/pkg/apiclient"
	"github.com/kubeboot/kubeboot/pkg/csrapprover"
)

func newCSRApproverCommand(s Streams) *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:    "csr-approver",
		Short:  "Approve the kubelets' serving certificates for known nodes (the node daemon runs it on control planes)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" {
				return fmt.Errorf("--kubeconfig is required")
			}
			c, _, err := apiclient.FromKubeconfig(kubeconfig, "")
			if err != nil {
				return err
			}
			a := &csrapprover.Approver{Client: c, Logf: func(format string, args ...any) {
				fmt.Fprintf(s.Out, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
			}}
			return a.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Credentials bound to the "+csrapprover.RBACName+" ClusterRole")
	return cmd
}
