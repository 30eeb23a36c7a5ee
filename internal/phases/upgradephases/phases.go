// Package upgradephases declares the phases of `kubeboot upgrade apply`
// and `kubeboot upgrade node`, as kubeadm's phases/upgrade: what each
// reads and changes is package upgrade's.
package upgradephases

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/etcd/etcdbackup"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/upgrade"
)

// Data is one upgrade run.
type Data struct {
	FS  fsys.FS
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// Binary is the kubeboot binary to upgrade to.
	Binary string
	// Apply is `upgrade apply`: the cluster's first control plane, checked
	// against the whole cluster, with an etcd snapshot first. Otherwise
	// `upgrade node`.
	Apply bool
	// Force goes on despite the skew errors that can be skipped; Yes does
	// not ask.
	Force, Yes bool
	// Timeout is how long each component gets to be ready again.
	Timeout time.Duration

	// State is what this run changed, for rollback.
	State  upgrade.State
	target *upgrade.Target
	bin    string
}

func (d *Data) logf(format string, args ...any) { fmt.Fprintf(d.Out, format+"\n", args...) }

// Target reads, once, what the upgrade goes from and to.
func (d *Data) Target(ctx context.Context) (*upgrade.Target, error) {
	if d.target != nil {
		return d.target, nil
	}
	t, err := upgrade.Prepare(ctx, d.FS, d.Binary)
	if err != nil {
		return nil, err
	}
	d.target = t
	d.State.From, d.State.To, d.State.Kubeboot = "v"+t.APIServer.String(), "v"+t.Version.String(), t.Kubeboot
	return t, nil
}

type phase = workflow.Phase[*Data]

// ApplyPhases is the tree of `upgrade apply`.
func ApplyPhases() []phase {
	return []phase{
		{Name: "preflight", Short: "Check kubeadm's version-skew policy against the cluster, and ask", Run: runApplyPreflight},
		{Name: "etcd-snapshot", Short: "Save etcd with the cluster's keys before anything changes", RunIf: hasLocalEtcd, Run: runEtcdSnapshot},
		binaryPhase(), imagesPhase(), componentsPhase(), addOnsPhase(),
	}
}

// NodePhases is the tree of `upgrade node`.
func NodePhases() []phase {
	return []phase{
		{Name: "preflight", Short: "Check that the node stays within the version skew of the API server", Run: runNodePreflight},
		binaryPhase(), imagesPhase(), componentsPhase(), addOnsPhase(),
	}
}

func binaryPhase() phase {
	return phase{Name: "binary", Short: "Install the new kubeboot binary under the root, content-addressed", Run: func(ctx context.Context, d *Data) error {
		_, err := d.install(ctx)
		return err
	}}
}

func componentsPhase() phase {
	return phase{Name: "components", Short: "Restart each component from the new binary, each once the one before is ready", Run: runComponents}
}

func imagesPhase() phase {
	return phase{Name: "images", Short: "Import the new binary's images (pause, CoreDNS, the add-ons') into the node's containerd", Run: runImages}
}

func addOnsPhase() phase {
	return phase{Name: "addon", Short: "Move the add-ons to the new binary's images once every node runs its version (on a control plane; a worker says when)",
		Run: runAddOns}
}

// runImages imports the images the new binary builds, with the new binary
// (they are tagged with its version): the add-ons move to them once every
// node holds them.
func runImages(ctx context.Context, d *Data) error {
	bin, err := d.install(ctx)
	if err != nil {
		return err
	}
	args := []string{"images", "import", "--builtin"}
	sock, err := upgrade.CRISocket(d.FS)
	if err != nil {
		return err
	}
	if sock != "" {
		args = append(args, "--cri-socket", sock)
	}
	out, err := upgrade.RunBinary(ctx, d.FS, bin, args...)
	if err != nil {
		return err
	}
	d.logf("[upgrade/images] %s", strings.TrimSpace(out))
	return nil
}

// runAddOns moves the add-ons with the new binary, whose manifests and
// images they take, once no node is left on another version; otherwise
// it says how to finish.
func runAddOns(ctx context.Context, d *Data) error {
	t, err := d.Target(ctx)
	if err != nil {
		return err
	}
	bin, err := d.install(ctx)
	if err != nil {
		return err
	}
	// A worker's kubelet may list the nodes too; only the administrator
	// moves the add-ons.
	admin := fsys.Exists(d.FS, node.AdminKubeconfig)
	conf := path.Join(node.KubernetesDir, kubeconfig.Kubelet)
	if admin {
		conf = node.AdminKubeconfig
	}
	c, _, err := apiclient.FromKubeconfig(d.FS.Path(conf), "")
	if err != nil {
		return err
	}
	want := "v" + t.Version.String()
	behind, err := upgrade.NodesBehind(ctx, c, want)
	if err != nil && !admin {
		d.logf("[upgrade/addons] WARNING: could not list the nodes with the kubelet's credentials (%v): once every node runs %s, move the add-ons to its images with `kubeboot upgrade addons` (the new binary) on a control plane", err, want)
		return nil
	}
	if err != nil {
		return err
	}
	// This node's kubelet, just restarted, reports its new version with
	// its next status update: wait for it, not for the others.
	self := t.NodeName
	isSelf := func(n upgrade.NodeVersion) bool { return n.Name == self }
	if slices.ContainsFunc(behind, isSelf) {
		// At most a minute, then on with the nodes behind; each list on
		// ctx, not cut by that minute.
		var listErr error
		_ = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, false, func(context.Context) (bool, error) {
			behind, listErr = upgrade.NodesBehind(ctx, c, want)
			return !slices.ContainsFunc(behind, isSelf), listErr
		})
		switch {
		case listErr != nil:
			return listErr
		case ctx.Err() != nil:
			return ctx.Err()
		}
	}
	root := ""
	if r := d.FS.Path("/"); r != "/" {
		root = " --root " + r
	}
	switch {
	case len(behind) > 0:
		d.logf("[upgrade/addons] The add-ons (CoreDNS, storage, metrics-server) stay on their images until every node runs %s and holds its images, which `kubeboot upgrade node` imports; still to upgrade: %s. The last `upgrade node` of a control plane moves them; if the last is a worker's, run then on a control plane `kubeboot%s upgrade addons` with the new binary", want, upgrade.List(behind), root)
		return nil
	case !admin:
		d.logf("[upgrade/addons] Every node runs %s now: move the add-ons to its images by running on a control plane `kubeboot upgrade addons` with the new binary (here: %s)", want, bin)
		return nil
	}
	out, err := upgrade.RunBinary(ctx, d.FS, bin, "upgrade", "addons")
	if err != nil {
		return err
	}
	fmt.Fprint(d.Out, out)
	return nil
}

// hasLocalEtcd is the target's when the preflight phase has read it;
// otherwise (the phase run alone, or preflight skipped) the node's
// record says, and when it cannot be read, the snapshot phase runs and
// says why it fails, before anything changes.
func hasLocalEtcd(d *Data) bool {
	if d.target != nil {
		return d.target.LocalEtcd
	}
	rec, err := component.Store{FS: d.FS}.Node()
	return err != nil || rec.Runs(component.Etcd)
}

func runApplyPreflight(ctx context.Context, d *Data) error {
	t, err := d.Target(ctx)
	if err != nil {
		return err
	}
	if !t.ControlPlane {
		return fmt.Errorf("this node runs no API server: run `kubeboot upgrade apply` on a control plane, and `kubeboot upgrade node` here")
	}
	d.logf("[upgrade/version] You have chosen to change the cluster version to \"v%s\"", t.Version)
	m, sk, err := t.Policy(ctx)
	if err != nil {
		return err
	}
	if len(m) > 0 || (len(sk) > 0 && !d.Force) {
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
		fmt.Fprintf(d.Err, "[upgrade/version] WARNING: %v (--force)\n", e)
	}
	if !d.Yes {
		fmt.Fprintf(d.Out, "[upgrade] Are you sure you want to proceed? [y/N]: ")
		answer := ""
		if d.In != nil {
			answer, _ = bufio.NewReader(d.In).ReadString('\n')
		}
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return fmt.Errorf("aborted the upgrade")
		}
	}
	return nil
}

func runNodePreflight(ctx context.Context, d *Data) error {
	t, err := d.Target(ctx)
	if err != nil {
		return err
	}
	if err := upgrade.NodePolicy(t.Version, t.APIServer); err != nil {
		return fmt.Errorf("[upgrade/version] %w", err)
	}
	return nil
}

// runEtcdSnapshot saves etcd with the cluster's keys before anything
// changes, as `kubeboot etcd snapshot save` does.
func runEtcdSnapshot(ctx context.Context, d *Data) error {
	t, err := d.Target(ctx)
	if err != nil {
		return err
	}
	cfg, err := etcdbackup.LocalCluster(ctx, d.FS)
	if err != nil {
		return err
	}
	dir := d.FS.Path(upgrade.SnapshotDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	file := filepath.Join(dir, fmt.Sprintf("pre-upgrade-v%s-%s.snapshot", t.APIServer, time.Now().UTC().Format("20060102T150405Z")))
	m, err := etcdbackup.Save(ctx, d.FS, cfg, component.Store{FS: d.FS}.EtcdMember(), file)
	if err != nil {
		return fmt.Errorf("the etcd snapshot before the upgrade: %w", err)
	}
	d.State.Snapshot = file
	d.logf("[upgrade/etcd] Saved etcd at revision %d with the cluster's keys to %s (mode 0600): `kubeboot etcd snapshot restore` brings the cluster back from it", m.Revision, file)
	return nil
}

// install installs the new binary, once (it is content-addressed: a
// second install of the same binary finds it in place).
func (d *Data) install(ctx context.Context) (string, error) {
	if d.bin != "" {
		return d.bin, nil
	}
	t, err := d.Target(ctx)
	if err != nil {
		return "", err
	}
	bin, err := upgrade.Install(d.FS, t.Binary, t.Version)
	if err != nil {
		return "", err
	}
	d.bin, d.State.Binary = bin, bin
	d.logf("[upgrade] Installed %s as %s", t.Binary, bin)
	return bin, nil
}

func runComponents(ctx context.Context, d *Data) error {
	t, err := d.Target(ctx)
	if err != nil {
		return err
	}
	bin, err := d.install(ctx)
	if err != nil {
		return err
	}
	return upgrade.Replace(ctx, d.FS, t.Specs, bin, &d.State, d.Timeout, d.logf)
}
