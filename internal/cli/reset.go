package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/internal/phases/resetphases"
	"github.com/kubeboot/kubeboot/internal/workflow"
	"github.com/kubeboot/kubeboot/pkg/explain"
)

// resetOptions are the flags of `reset` and of each `reset phase` command.
type resetOptions struct {
	force, dryRun, explain bool
	certDir                string
}

const resetLong = `Stop the node daemon and every component it runs, then remove every file and
directory kubeboot created on this node: certificates, kubeconfig files,
component specs, etcd data, logs and pid files, the pods' cgroups, network
links and iptables chains. At the machine-wide paths upstream components use
whatever the root prefix (/var/log/containers, /var/lib/cni/results,
/var/lib/kubelet/device-plugins, /run/containerd/s) it removes this node's
entries and nothing of another node's. A worker also deletes its Node object
from the cluster when the API server can be reached. Running it again is a
no-op.

`

func newResetCommand(g *GlobalFlags, s Streams) *cobra.Command {
	runner := &workflow.Runner[*resetphases.Data]{Phases: resetphases.Phases()}
	setup := func(cmd *cobra.Command) func(context.Context, []string) (*resetphases.Data, workflow.Options, error) {
		o := &resetOptions{}
		cmd.Flags().BoolVarP(&o.force, "force", "f", false, "Reset the node without prompting for confirmation")
		cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "Don't apply any changes; just output what would be done")
		cmd.Flags().StringVar(&o.certDir, "cert-dir", "", "A certificates dir outside /etc/kubernetes to remove as well")
		cmd.Flags().BoolVar(&o.explain, "explain", false, "Under each path reset removes, say what it held")
		return func(ctx context.Context, _ []string) (*resetphases.Data, workflow.Options, error) {
			out := s.Out
			if o.explain {
				out = explain.Reset(s.Out, g.FS(false, s.Out).Path("/"))
			}
			d := &resetphases.Data{FS: g.FS(o.dryRun, out), In: s.In, Out: out, Err: s.Err, Force: o.force, CertDir: o.certDir,
				StopDaemon: func(ctx context.Context) error { return stopDaemon(ctx, g, s) }}
			return d, workflow.Options{DryRun: o.dryRun, Out: out}, nil
		}
	}
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Performs a best effort revert of changes made to this host by 'kubeboot init' or 'kubeboot join'",
		Long:  resetLong + runner.Help("reset"),
		Args:  cobra.NoArgs,
	}
	build := setup(cmd)
	var skip []string
	cmd.Flags().StringSliceVar(&skip, "skip-phases", nil, "List of phases to be skipped")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		d, o, err := build(cmd.Context(), args)
		if err != nil {
			return err
		}
		o.Skip = skip
		return runner.Run(cmd.Context(), d, o)
	}
	cmd.AddCommand(runner.PhaseCommand(setup))
	return cmd
}
