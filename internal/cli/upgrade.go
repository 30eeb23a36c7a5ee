package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/cluster"
	"github.com/kubeboot/kubeboot/internal/phases/upgradephases"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
	"github.com/kubeboot/kubeboot/internal/runtime/upgrade"
)

// upgradeOptions are the flags of `upgrade plan|apply|node`.
type upgradeOptions struct {
	binary  string
	force   bool
	yes     bool
	timeout time.Duration
}

func (o *upgradeOptions) addFlags(cmd *cobra.Command, apply bool) {
	cmd.Flags().StringVar(&o.binary, "binary", "", "The kubeboot binary to upgrade to (required); its components replace this node's")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Minute, "How long each component gets to be ready again")
	if apply {
		cmd.Flags().BoolVarP(&o.force, "force", "f", false, "Go on despite the version-skew errors that can be skipped (kubeadm's --force)")
		cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "Perform the upgrade without prompting for confirmation")
	}
}

// options maps the flags onto the lifecycle API's.
func (o *upgradeOptions) options(g *GlobalFlags, s Streams, apply bool, sel workflow.Selection) cluster.UpgradeOptions {
	return cluster.UpgradeOptions{
		Node:   cluster.Node{Root: g.Root, Out: s.Out, Err: s.Err, Phase: sel.Only, SkipPhases: sel.Skip},
		Binary: o.binary, Apply: apply, Force: o.force, Yes: o.yes, Confirm: s.In, Timeout: o.timeout,
	}
}

func newUpgradeCommand(g *GlobalFlags, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upgrade",
		Short: "Upgrade this node's components to those of another kubeboot binary",
		Long: `Upgrade a cluster the way kubeadm does, one node at a time: ` + "`upgrade apply`" + ` on one
control plane first (kubeadm's version-skew policy is checked against the cluster,
and an etcd snapshot is saved), then ` + "`upgrade node`" + ` on every other control plane and
on each worker (a node is never newer than the API server it talks to).

Each component restarts from the new binary alone, once the previous one is ready
again; pods keep running. ` + "`upgrade rollback`" + ` puts back what the last upgrade of this
node replaced. Each node imports the new binary's images; the add-ons (CoreDNS, storage,
metrics-server) move to them once every node runs the new version (` + "`upgrade addons`" + `).
The node daemon itself, and what it runs in its own process (cert-renewer,
etcd-snapshotter, manifest-applier), move to the new binary when the daemon is next
started from it; so do the pod network's engines (flannel, kube-router), which it
runs from the binary's helpers.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newUpgradePlanCommand(g, s), newUpgradeRunCommand(g, s, true), newUpgradeRunCommand(g, s, false), newUpgradeAddOnsCommand(g, s), newUpgradeRollbackCommand(g, s))
	return cmd
}

func newUpgradePlanCommand(g *GlobalFlags, s Streams) *cobra.Command {
	o := &upgradeOptions{}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Check whether this node can upgrade to a kubeboot binary, and show what would change",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := cluster.PlanUpgrade(cmd.Context(), o.options(g, s, false, workflow.Selection{}))
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "[upgrade/versions] API server version: %s; target version (from %s): %s\n", p.APIServer, p.Binary, p.Target)
			w := tabwriter.NewWriter(s.Out, 4, 4, 3, ' ', 0)
			fmt.Fprintln(w, "COMPONENT\tCURRENT\tTARGET")
			for _, c := range p.Components {
				fmt.Fprintf(w, "%s\t%s\t%s\n", c.Name, c.Current, c.Target)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(p.Problems) > 0 {
				fmt.Fprintf(s.Out, "\n[upgrade/plan] The version-skew policy does not allow this upgrade as it is:\n\t%s\n", strings.Join(p.Problems, "\n\t"))
				return fmt.Errorf("the upgrade to %s is not allowed", p.Target)
			}
			next := "kubeboot upgrade node --binary " + p.Binary
			if p.ControlPlane {
				next = "kubeboot upgrade apply --binary " + p.Binary
			}
			fmt.Fprintf(s.Out, "\n[upgrade/plan] You can upgrade this node to %s with:\n\n\t%s\n", p.Target, next)
			return nil
		},
	}
	o.addFlags(cmd, false)
	return cmd
}

// newUpgradeRunCommand is `upgrade apply` (apply) or `upgrade node`, each
// a phase tree.
func newUpgradeRunCommand(g *GlobalFlags, s Streams, apply bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Upgrade this node (a worker, or a control plane after the first) to a kubeboot binary",
	}
	runner := &workflow.Runner[*upgradephases.Data]{Phases: upgradephases.NodePhases()}
	if apply {
		cmd.Use, cmd.Short = "apply", "Upgrade the cluster's first control plane: skew checks, an etcd snapshot, then each component"
		runner.Phases = upgradephases.ApplyPhases()
	}
	cmd.Long = cmd.Short + ".\n\n"
	runner.BindToCommand(cmd, func(cmd *cobra.Command) func(context.Context, []string, workflow.Selection) error {
		o := &upgradeOptions{}
		o.addFlags(cmd, apply)
		return func(ctx context.Context, _ []string, sel workflow.Selection) error {
			_, err := cluster.Upgrade(ctx, o.options(g, s, apply, sel))
			return err
		}
	})
	return cmd
}

func newUpgradeAddOnsCommand(g *GlobalFlags, s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "addons",
		Short: "Move the cluster's add-ons (CoreDNS, storage, metrics-server) to this binary's images, once every node runs its version",
		Long: `Move the add-ons kubeboot made (CoreDNS, the storage add-on, metrics-server) to the
images of this kubeboot binary. Run it with the new binary, on a control plane, once every
node runs its version: ` + "`upgrade apply` and `upgrade node`" + ` import the new images on each node
and move the add-ons themselves when the node they upgrade is the last; this command is for
when the last node upgraded was a worker. CoreDNS keeps its Corefile and replica count.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return upgrade.MoveAddOns(cmd.Context(), g.FS(false, s.Out), func(format string, args ...any) { fmt.Fprintf(s.Out, format+"\n", args...) })
		},
	}
}

func newUpgradeRollbackCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Put back, one component at a time, what the last upgrade of this node replaced",
		Long: `Put back, in reverse order and each until it is ready, the binaries the last
upgrade of this node replaced. Objects written since stay; the etcd snapshot
` + "`upgrade apply`" + ` saved (its path is in its output) brings back the data too, with
` + "`kubeboot etcd snapshot restore`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := g.FS(false, s.Out)
			st, err := upgrade.Rollback(cmd.Context(), fs, timeout, func(format string, args ...any) { fmt.Fprintf(s.Out, format+"\n", args...) })
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "[upgrade] Rolled back the upgrade from %s to %s on this node\n", st.From, st.To)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "How long each component gets to be ready again")
	return cmd
}
