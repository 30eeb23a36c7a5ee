package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

func newTokenCommand(_ *GlobalFlags, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage bootstrap tokens",
		Long: `Bootstrap tokens authenticate a joining node to the control plane and, through
the signed cluster-info ConfigMap, let it trust the control plane in return.
A token has the form [a-z0-9]{6}.[a-z0-9]{16}: a public ID and a secret.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "generate",
		Short: "Generate and print a bootstrap token, but do not create it on the server",
		Long: `Generate and print a random bootstrap token. Use it with
"kubeboot init --token" or "kubeboot token create" to create it on the server.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tok, err := bootstraputil.GenerateBootstrapToken()
			if err != nil {
				return err
			}
			fmt.Fprintln(s.Out, tok)
			return nil
		},
	})
	return cmd
}
