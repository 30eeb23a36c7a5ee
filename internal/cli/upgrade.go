package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeboot/kubeboot/pkg/apiclient"
	"github.com/kubeboot/kubeboot/pkg/component"
	"github.com/kubeboot/kubeboot/pkg/daemon"
	"github.com/kubeboot/kubeboot/pkg/etcdbackup"
	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/kubeconfig"
	"github.com/kubeboot/kubeboot/pkg/supervisor"
	"github.com/kubeboot/kubeboot/pkg/upgrade"
)

// inProcessComponents are the components the node daemon runs in its own
// process; they go with the daemon's binary.
func inProcessComponents() map[string]supervisor.InProcessFunc {
	return map[string]supervisor.InProcessFunc{
		// The network agent in the daemon's process: one process fewer on
		// every node, ~30 MiB of PSS.
		component.NetAgent:        inProcess(newNetAgentCommand),
		component.CertRenewer:     inProcess(newCertRenewerCommand),
		component.EtcdSnapshotter: inProcess(newEtcdSnapshotterCommand),
		component.CAAgent:         inProcess(newCAAgentCommand),
	}
}

func isInProcess(name string) bool { _, ok := inProcessComponents()[name]; return ok }

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
node replaced. The node daemon itself, and what it runs in its own process
(netagent, cert-renewer, etcd-snapshotter), move to the new binary when the daemon
is next started from it.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newUpgradePlanCommand(g, s), newUpgradeApplyCommand(g, s), newUpgradeNodeCommand(g, s), newUpgradeRollbackCommand(g, s))
	return cmd
}

// upgradeRun is what the upgrade commands read before they change anything.
type upgradeRun struct {
	fs        fsys.FS
	target    *version.Version
	specs     []component.Spec
	client    kubernetes.Interface
	apiserver *version.Version
	control   bool
}

func (o *upgradeOptions) prepare(ctx context.Context, g *GlobalFlags, s Streams) (*upgradeRun, error) {
	if o.binary == "" {
		return nil, fmt.Errorf("--binary is required: the kubeboot binary to upgrade to")
	}
	bin, err := filepath.Abs(o.binary)
	if err != nil {
		return nil, err
	}
	o.binary = bin
	fs := g.FS(false, s.Out)
	if daemon.Running(fs) == 0 {
		return nil, fmt.Errorf("the kubeboot daemon is not running for %s: this is not a running kubeboot node", fs.Path("/"))
	}
	r := &upgradeRun{fs: fs, control: fsys.Exists(fs, component.SpecPath(component.APIServer))}
	if r.target, err = upgrade.BinaryVersion(ctx, bin); err != nil {
		return nil, err
	}
	if r.specs, err = upgrade.Components(fs, isInProcess); err != nil {
		return nil, err
	}
	// The kubelet's credentials work on every node; a control plane uses
	// admin.conf, which can also list the nodes.
	conf := path.Join(kubeconfig.Dir, kubeconfig.Kubelet)
	if r.control {
		conf = path.Join(kubeconfig.Dir, "admin.conf")
	}
	if r.client, _, err = apiclient.FromKubeconfig(fs.Path(conf), ""); err != nil {
		return nil, err
	}
	info, err := r.client.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	if r.apiserver, err = version.ParseSemantic(info.GitVersion); err != nil {
		return nil, err
	}
	return r, nil
}

// controlPlanePolicy checks kubeadm's policy for the whole cluster.
func (r *upgradeRun) controlPlanePolicy(ctx context.Context) (mandatory, skippable []error, err error) {
	nodes, err := r.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	kubelets := map[string][]string{}
	for _, n := range nodes.Items {
		kubelets[n.Status.NodeInfo.KubeletVersion] = append(kubelets[n.Status.NodeInfo.KubeletVersion], n.Name)
	}
	m, s := upgrade.ControlPlanePolicy(upgrade.Getter{Cluster: r.apiserver, Tool: r.target, Kubelets: kubelets}, r.target, false)
	return m, s, nil
}

// versionsTable lists each component with the version it runs and the
// one it would run.
func (r *upgradeRun) versionsTable(ctx context.Context, s Streams) error {
	daemonExe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", daemon.Running(r.fs)))
	if err != nil {
		return err
	}
	cache := map[string]string{}
	versionOf := func(bin string) string {
		if v, ok := cache[bin]; ok {
			return v
		}
		v := "unknown"
		if parsed, err := upgrade.BinaryVersion(ctx, bin); err == nil {
			v = "v" + parsed.String()
		}
		cache[bin] = v
		return v
	}
	w := tabwriter.NewWriter(s.Out, 4, 4, 3, ' ', 0)
	fmt.Fprintln(w, "COMPONENT\tCURRENT\tTARGET")
	for _, sp := range r.specs {
		bin := sp.Exec
		if bin == "" {
			bin = daemonExe
		}
		fmt.Fprintf(w, "%s\t%s\tv%s\n", sp.Name, versionOf(bin), r.target)
	}
	return w.Flush()
}

func newUpgradePlanCommand(g *GlobalFlags, s Streams) *cobra.Command {
	o := &upgradeOptions{}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Check whether this node can upgrade to a kubeboot binary, and show what would change",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := o.prepare(cmd.Context(), g, s)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "[upgrade/versions] API server version: v%s; target version (from %s): v%s\n", r.apiserver, o.binary, r.target)
			var problems []string
			if r.control {
				m, sk, err := r.controlPlanePolicy(cmd.Context())
				if err != nil {
					return err
				}
				for _, e := range m {
					problems = append(problems, "[ERROR] "+e.Error())
				}
				for _, e := range sk {
					problems = append(problems, "[WARNING, --force skips it] "+e.Error())
				}
			} else if err := upgrade.NodePolicy(r.target, r.apiserver); err != nil {
				problems = append(problems, "[ERROR] "+err.Error())
			}
			if err := r.versionsTable(cmd.Context(), s); err != nil {
				return err
			}
			if len(problems) > 0 {
				fmt.Fprintf(s.Out, "\n[upgrade/plan] The version-skew policy does not allow this upgrade as it is:\n\t%s\n", strings.Join(problems, "\n\t"))
				return fmt.Errorf("the upgrade to v%s is not allowed", r.target)
			}
			next := "kubeboot upgrade node --binary " + o.binary
			if r.control {
				next = "kubeboot upgrade apply --binary " + o.binary
			}
			fmt.Fprintf(s.Out, "\n[upgrade/plan] You can upgrade this node to v%s with:\n\n\t%s\n", r.target, next)
			return nil
		},
	}
	o.addFlags(cmd, false)
	return cmd
}

func newUpgradeApplyCommand(g *GlobalFlags, s Streams) *cobra.Command {
	o := &upgradeOptions{}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Upgrade the cluster's first control plane: skew checks, an etcd snapshot, then each component",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			r, err := o.prepare(ctx, g, s)
			if err != nil {
				return err
			}
			if !r.control {
				return fmt.Errorf("this node runs no API server: run `kubeboot upgrade apply` on a control plane, and `kubeboot upgrade node` here")
			}
			fmt.Fprintf(s.Out, "[upgrade/version] You have chosen to change the cluster version to \"v%s\"\n", r.target)
			m, sk, err := r.controlPlanePolicy(ctx)
			if err != nil {
				return err
			}
			if len(m) > 0 || (len(sk) > 0 && !o.force) {
				var all []string
				for _, e := range append(m, sk...) {
					all = append(all, e.Error())
				}
				hint := ""
				if len(m) == 0 {
					hint = " (--force skips them)"
				}
				return fmt.Errorf("[upgrade/version] the version-skew policy refuses the upgrade%s:\n\t%s", hint, strings.Join(all, "\n\t"))
			}
			for _, e := range sk {
				fmt.Fprintf(s.Err, "[upgrade/version] WARNING: %v (--force)\n", e)
			}
			if !o.yes {
				fmt.Fprintf(s.Out, "[upgrade] Are you sure you want to proceed? [y/N]: ")
				answer, _ := bufio.NewReader(s.In).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
					return fmt.Errorf("aborted the upgrade")
				}
			}
			st := &upgrade.State{From: "v" + r.apiserver.String(), To: "v" + r.target.String()}
			if fsys.Exists(r.fs, component.SpecPath(component.Etcd)) {
				if st.Snapshot, err = preUpgradeSnapshot(ctx, r, s); err != nil {
					return err
				}
			}
			return o.replace(ctx, r, st, s, fmt.Sprintf("[upgrade/successful] SUCCESS! This control plane runs v%s. Upgrade the other control planes, then the workers, with `kubeboot upgrade node --binary <kubeboot v%s>`.", r.target, r.target))
		},
	}
	o.addFlags(cmd, true)
	return cmd
}

// preUpgradeSnapshot saves etcd with the cluster's keys before anything
// changes, as `kubeboot etcd snapshot save` does.
func preUpgradeSnapshot(ctx context.Context, r *upgradeRun, s Streams) (string, error) {
	cfg, err := localCluster(ctx, r.fs)
	if err != nil {
		return "", err
	}
	dir := r.fs.Path(upgrade.SnapshotDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	file := filepath.Join(dir, fmt.Sprintf("pre-upgrade-v%s-%s.snapshot", r.apiserver, time.Now().UTC().Format("20060102T150405Z")))
	m, err := etcdbackup.Save(ctx, r.fs, cfg, etcdMemberName(r.fs), file)
	if err != nil {
		return "", fmt.Errorf("the etcd snapshot before the upgrade: %w", err)
	}
	fmt.Fprintf(s.Out, "[upgrade/etcd] Saved etcd at revision %d with the cluster's keys to %s (mode 0600): `kubeboot etcd snapshot restore` brings the cluster back from it\n", m.Revision, file)
	return file, nil
}

// replace installs the binary and hands each component to it.
func (o *upgradeOptions) replace(ctx context.Context, r *upgradeRun, st *upgrade.State, s Streams, done string) error {
	bin, err := upgrade.Install(r.fs, o.binary, r.target)
	if err != nil {
		return err
	}
	st.Binary = bin
	fmt.Fprintf(s.Out, "[upgrade] Installed %s as %s\n", o.binary, bin)
	logf := func(format string, args ...any) { fmt.Fprintf(s.Out, format+"\n", args...) }
	if err := upgrade.Replace(ctx, r.fs, r.specs, bin, st, o.timeout, logf); err != nil {
		return err
	}
	fmt.Fprintln(s.Out, done)
	return nil
}

func newUpgradeNodeCommand(g *GlobalFlags, s Streams) *cobra.Command {
	o := &upgradeOptions{}
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Upgrade this node (a worker, or a control plane after the first) to a kubeboot binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			r, err := o.prepare(ctx, g, s)
			if err != nil {
				return err
			}
			if err := upgrade.NodePolicy(r.target, r.apiserver); err != nil {
				return fmt.Errorf("[upgrade/version] %w", err)
			}
			st := &upgrade.State{From: "v" + r.apiserver.String(), To: "v" + r.target.String()}
			return o.replace(ctx, r, st, s, fmt.Sprintf("[upgrade] The node runs v%s.", r.target))
		},
	}
	o.addFlags(cmd, false)
	return cmd
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
