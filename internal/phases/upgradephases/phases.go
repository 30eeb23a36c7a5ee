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
	"path/filepath"
	"strings"
	"time"

	"github.com/kubeboot/kubeboot/internal/workflow"
	"github.com/kubeboot/kubeboot/pkg/component"
	"github.com/kubeboot/kubeboot/pkg/etcdbackup"
	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/upgrade"
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
	d.State.From, d.State.To = "v"+t.APIServer.String(), "v"+t.Version.String()
	return t, nil
}

type phase = workflow.Phase[*Data]

// ApplyPhases is the tree of `upgrade apply`.
func ApplyPhases() []phase {
	return []phase{
		{Name: "preflight", Short: "Check kubeadm's version-skew policy against the cluster, and ask", Run: runApplyPreflight},
		{Name: "etcd-snapshot", Short: "Save etcd with the cluster's keys before anything changes", RunIf: hasLocalEtcd, Run: runEtcdSnapshot},
		binaryPhase(), componentsPhase(),
	}
}

// NodePhases is the tree of `upgrade node`.
func NodePhases() []phase {
	return []phase{
		{Name: "preflight", Short: "Check that the node stays within the version skew of the API server", Run: runNodePreflight},
		binaryPhase(), componentsPhase(),
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

func hasLocalEtcd(d *Data) bool { return fsys.Exists(d.FS, component.SpecPath(component.Etcd)) }

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
	m, err := etcdbackup.Save(ctx, d.FS, cfg, etcdbackup.MemberName(d.FS), file)
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
