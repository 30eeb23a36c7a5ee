package cli

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/internal/base/version"
)

// versionText is what `kubeboot version` and `kubeboot --version` print.
func versionText() string {
	return "kubeboot: " + version.Get().Release() + fmt.Sprintf("\nKubernetes: %s\netcd: %s\nGo: %s %s/%s\n", version.Kubernetes, version.Etcd, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// errVersionPrinted ends a command that was asked for --version.
var errVersionPrinted = errors.New("version printed")

// addVersionFlag gives every command a boolean --version that prints
// versionText and quits without running the command. Declaring it on root
// shadows the --version that k8s.io/component-base registers on
// pflag.CommandLine (cobra merges that set into every command), which
// would otherwise take the name, print nothing and let `init --version`
// go on to initialise the host.
func addVersionFlag(root *cobra.Command, s Streams) {
	var asked bool
	root.Version = version.Kubeboot // cobra answers on root itself
	root.SetVersionTemplate(versionTemplateEscape(versionText()))
	root.PersistentFlags().BoolVar(&asked, "version", false, "Print the versions of kubeboot and of the components it embeds, and quit")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if asked {
			fmt.Fprint(s.Out, versionText())
			return errVersionPrinted
		}
		return nil
	}
}

// versionTemplateEscape quotes s for a text/template.
func versionTemplateEscape(s string) string {
	return fmt.Sprintf("{{ %q }}", s)
}

func newVersionCommand(s Streams) *cobra.Command {
	var short bool
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the versions of kubeboot and of the components it embeds",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if short {
				output = "short"
			}
			switch output {
			case "":
				fmt.Fprint(s.Out, versionText())
			case "short":
				fmt.Fprintln(s.Out, version.Kubernetes)
			case "json", "yaml":
				return printAs(s.Out, output, version.Get())
			default:
				return checkOutput(output, "json", "yaml", "short")
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format; available options are 'yaml', 'json' and 'short'")
	cmd.Flags().BoolVar(&short, "short", false, "Print only the Kubernetes version (as -o short)")
	return cmd
}
