package workflow

import (
	"context"

	"github.com/spf13/cobra"
)

// Setup registers a command's flags and returns how to build the run data
// and options once the flags and arguments are parsed. It is called once
// per generated command, so every command has its own flag values.
type Setup[D any] func(cmd *cobra.Command) func(ctx context.Context, args []string) (D, Options, error)

// PhaseCommand returns the `phase` command of a workflow: one subcommand
// per phase, nested as the tree is, and an `all` subcommand under every
// phase that has sub-phases.
func (r *Runner[D]) PhaseCommand(setup Setup[D]) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "phase",
		Short: "Use this command to invoke single phase of the workflow",
		Args:  cobra.NoArgs,
	}
	for _, p := range r.Phases {
		cmd.AddCommand(r.phaseCommand(p, p.Name, setup))
	}
	return cmd
}

func (r *Runner[D]) phaseCommand(p Phase[D], path string, setup Setup[D]) *cobra.Command {
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
	r.bindRun(cmd, path, setup)
	if len(p.Phases) > 0 {
		all := &cobra.Command{Use: "all", Short: "Run all of " + p.Name + "'s sub-phases", Args: r.args()}
		r.bindRun(all, path, setup)
		cmd.AddCommand(all)
		for _, sub := range p.Phases {
			cmd.AddCommand(r.phaseCommand(sub, path+"/"+sub.Name, setup))
		}
	}
	return cmd
}

func (r *Runner[D]) bindRun(cmd *cobra.Command, path string, setup Setup[D]) {
	build := setup(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		d, o, err := build(cmd.Context(), args)
		if err != nil {
			return err
		}
		o.Only = path
		o.Skip = nil
		return r.Run(cmd.Context(), d, o)
	}
}

func (r *Runner[D]) args() cobra.PositionalArgs {
	if r.Args != nil {
		return r.Args
	}
	return cobra.NoArgs
}
