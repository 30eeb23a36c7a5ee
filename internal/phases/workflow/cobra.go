package workflow

import (
	"context"

	"github.com/spf13/cobra"
)

// Selection is what a command's phase flag and subcommands select.
type Selection struct {
	// Only is the phase a `phase` subcommand runs ("certs/apiserver");
	// "" is the whole workflow.
	Only string
	// Skip lists the phases --skip-phases leaves out.
	Skip []string
}

// Setup registers a command's flags and returns how to run it once the
// flags and arguments are parsed. It is called once per command the
// workflow binds, so every command has its own flag values.
type Setup func(cmd *cobra.Command) func(ctx context.Context, args []string, sel Selection) error

// BindToCommand makes cmd run the workflow, as kubeadm's BindToCommand
// does: the phase list in its help, --skip-phases, and a `phase`
// subcommand with one subcommand per phase, nested as the tree is, and an
// `all` subcommand under every phase that has sub-phases.
func (r *Runner[D]) BindToCommand(cmd *cobra.Command, setup Setup) {
	cmd.Long += r.Help(cmd.Name())
	cmd.Args = r.args()
	run := setup(cmd)
	var skip []string
	cmd.Flags().StringSliceVar(&skip, "skip-phases", nil, "List of phases to be skipped")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return run(cmd.Context(), args, Selection{Skip: skip})
	}
	phases := &cobra.Command{
		Use:   "phase",
		Short: "Use this command to invoke single phase of the workflow",
		Args:  cobra.NoArgs,
	}
	for _, p := range r.Phases {
		phases.AddCommand(r.phaseCommand(p, p.Name, setup))
	}
	cmd.AddCommand(phases)
}

func (r *Runner[D]) phaseCommand(p Phase[D], path string, setup Setup) *cobra.Command {
	short := p.Short
	if p.Pending != "" {
		short += " (not implemented yet)"
	}
	cmd := &cobra.Command{
		Use:   p.Name,
		Short: short,
		Long:  p.Long,
		Args:  r.args(),
	}
	r.bindPhase(cmd, path, setup)
	if len(p.Phases) > 0 {
		all := &cobra.Command{Use: "all", Short: "Run all of " + p.Name + "'s sub-phases", Args: r.args()}
		r.bindPhase(all, path, setup)
		cmd.AddCommand(all)
		for _, sub := range p.Phases {
			cmd.AddCommand(r.phaseCommand(sub, path+"/"+sub.Name, setup))
		}
	}
	return cmd
}

func (r *Runner[D]) bindPhase(cmd *cobra.Command, path string, setup Setup) {
	run := setup(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return run(cmd.Context(), args, Selection{Only: path})
	}
}

func (r *Runner[D]) args() cobra.PositionalArgs {
	if r.Args != nil {
		return r.Args
	}
	return cobra.NoArgs
}
