package cli

import (
	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/service"
)

// newOwnComponentCommands are the hidden commands that run one of
// kubeboot's own components by hand (`kubeboot --root R NAME`, under a
// debugger, or in place of the daemon's while swapped out), from the
// typed configuration in the node's spec of it: what the node daemon
// runs in its own process.
func newOwnComponentCommands(g *GlobalFlags, s Streams) []*cobra.Command {
	var cmds []*cobra.Command
	for _, d := range component.Table {
		if d.Own == nil {
			continue
		}
		name := d.Name
		cmds = append(cmds, &cobra.Command{
			Use:    name,
			Short:  d.Own.Does + " (the node daemon runs it, from " + component.SpecPath(name) + ")",
			Hidden: true,
			Args:   cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return service.RunNamed(cmd.Context(), g.FS(false, s.Out), name, s.Out)
			},
		})
	}
	return cmds
}
