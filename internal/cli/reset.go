package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/cluster"
	"github.com/kubeboot/kubeboot/internal/phases/resetphases"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
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

With a cluster file (` + "`kubeboot reset -f cluster.yaml`" + `: -f is --force, as with
kubeadm), it resets every host of the file over SSH instead, as 'kubeboot
apply' reaches them: the workers first, in parallel, then the control planes
one at a time; and removes the kubeboot binary apply copied.

`

func newResetCommand(g *GlobalFlags, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reset [CLUSTER-FILE]",
		Short: "Performs a best effort revert of changes made to this host by 'kubeboot init' or 'kubeboot join'",
		Long:  resetLong,
	}
	runner := &workflow.Runner[*resetphases.Data]{Phases: resetphases.Phases(), Args: cobra.MaximumNArgs(1)}
	runner.BindToCommand(cmd, func(cmd *cobra.Command) func(context.Context, []string, workflow.Selection) error {
		o := &resetOptions{}
		cmd.Flags().BoolVarP(&o.force, "force", "f", false, "Reset the node without prompting for confirmation")
		cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "Don't apply any changes; just output what would be done")
		cmd.Flags().StringVar(&o.certDir, "cert-dir", "", "A certificates dir outside /etc/kubernetes to remove as well")
		cmd.Flags().BoolVar(&o.explain, "explain", false, "Under each path reset removes, say what it held")
		return func(ctx context.Context, args []string, sel workflow.Selection) error {
			if len(args) > 0 {
				if sel.Only != "" || o.dryRun || o.certDir != "" {
					return fmt.Errorf("a cluster file resets every host of it, whole: it takes no phase, --dry-run or --cert-dir")
				}
				return resetHosts(cmd, s, args[0], o.force)
			}
			opts := cluster.ResetOptions{
				Node:  cluster.Node{Root: g.Root, DryRun: o.dryRun, Explain: o.explain, Out: s.Out, Err: s.Err, Phase: sel.Only, SkipPhases: sel.Skip},
				Force: o.force, Confirm: s.In, CertDir: o.certDir,
			}
			return cluster.Reset(ctx, opts)
		}
	})
	return cmd
}
