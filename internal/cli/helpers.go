package cli

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/internal/host/helpers"
	"github.com/kubeboot/kubeboot/internal/host/node"
)

func newHelpersCommand(g *GlobalFlags, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "helpers",
		Short: "List the per-pod helpers kubeboot carries (runc shim, pause, CNI plugins), or write them under --root",
		Long: `What runs once per pod is not the kubeboot binary but small static
binaries built from their upstream main packages and carried inside it:
containerd's runc shim, the pod sandbox's pause and the CNI plugins.
init and join write them under --root, into a directory named by their
digest, and the node daemon verifies them by sha256 at every start.

"kubeboot helpers" lists them; "kubeboot helpers install" writes them,
for a containerd of kubeboot's configuration that kubeboot did not start.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			m, err := helpers.Load()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSIZE\tSHA256\tPACKAGE")
			for _, e := range m.Helpers {
				fmt.Fprintf(tw, "%s\t%.1fMiB\t%s\t%s\n", e.Name, float64(e.Size)/(1<<20), e.SHA256[:16], e.Package)
			}
			for _, name := range slices.Sorted(maps.Keys(m.Links)) {
				fmt.Fprintf(tw, "%s\t-> %s\t\t\n", name, m.Links[name])
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "install",
		Short: "Write the helpers under --root, verified by sha256",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			dir := g.FS(false, nil).Path(node.HelpersRoot)
			logf := func(format string, args ...any) { fmt.Fprintf(s.Out, format+"\n", args...) }
			res, err := helpers.Install(dir, logf)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "[helpers] %d written, %d already in place, %d links made, in %s (linked from %s)\n", len(res.Written), res.Verified, len(res.Linked), res.Dir, path.Join(dir, helpers.Current))
			return nil
		},
	})
	var to string
	extract := &cobra.Command{
		Use:    "extract NAME...",
		Short:  "Write the named helpers, uncompressed, into the directory --to",
		Hidden: true, // for a process that carries no helpers itself (see nodeup)
		Args:   cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			for _, name := range args {
				if _, err := helpers.Extract(name, to); err != nil {
					return err
				}
			}
			return nil
		},
	}
	extract.Flags().StringVar(&to, "to", "", "Directory to write them to")
	_ = extract.MarkFlagRequired("to")
	cmd.AddCommand(extract)
	return cmd
}
