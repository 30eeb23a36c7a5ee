package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/pkg/version"
)

func newVersionCommand(s Streams) *cobra.Command {
	var short bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the versions of kubeboot and of the components it embeds",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if short {
				fmt.Fprintln(s.Out, version.Kubernetes)
				return nil
			}
			fmt.Fprintf(s.Out, "kubeboot: %s", version.Kubeboot)
			if version.GitCommit != "" {
				fmt.Fprintf(s.Out, " (%s)", version.GitCommit)
			}
			fmt.Fprintf(s.Out, "\nKubernetes: %s\netcd: %s\nGo: %s %s/%s\n", version.Kubernetes, version.Etcd, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "Print only the Kubernetes version")
	return cmd
}
