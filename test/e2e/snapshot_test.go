package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/test/nethost"
)

// TestSnapshotRestore saves etcd with the cluster's keys on one node (made
// with default flags: CoreDNS and kube-proxy present, as a user has them), by
// hand and on the daemon's schedule (every 10 s, keeping 2), resets it,
// and brings the cluster back on a fresh node from a scheduled file: 500
// objects made before are all there, the node is Ready, and the old
// cluster's admin.conf still works (same CA).
func TestSnapshotRestore(t *testing.T) {
	requireE2E(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already", n)
	}
	network := newNetwork(t, "kbr-net")
	a := newHostWith(t, "kbr-a", "10.216.0.2", nethost.Options{Network: network})
	b := newHostWith(t, "kbr-b", "10.216.0.3", nethost.Options{Network: network})
	kb(t, a, "init", "--node-name", "a", "--single-node", "--etcd-snapshot-interval", "10s", "--etcd-snapshot-keep", "2")

	// 500 ConfigMaps in one request list.
	var list strings.Builder
	list.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&list, "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: cm-%03d, namespace: default, labels: {backup: test}}\n  data: {i: \"%d\"}\n", i, i)
	}
	f := filepath.Join(t.TempDir(), "cms.yaml")
	os.WriteFile(f, []byte(list.String()), 0o644)
	kubectl(t, a, "create", "-f", f)
	count := func(h *nethost.Host, kc string) (int, error) {
		out, err := nethost.Run(h.Command(h.Binary, "kubectl", "--kubeconfig", kc, "get", "configmaps", "-l", "backup=test", "-o", "name"))
		if err != nil {
			return 0, fmt.Errorf("%v: %s", err, out)
		}
		return len(strings.Fields(out)), nil
	}
	if n, err := count(a, filepath.Join(a.Root, "etc/kubernetes/admin.conf")); err != nil || n != 500 {
		t.Fatalf("before the snapshot: %d ConfigMaps, %v", n, err)
	}

	dir := t.TempDir()
	snap := filepath.Join(dir, "cluster.snapshot")
	start := time.Now()
	// "etcd" first, as an operator types it on a node whose root is "/":
	// kubeboot's command, not the embedded etcd server of the same name.
	out, err := nethost.Run(a.Command(a.Binary, "etcd", "snapshot", "save", "--root", a.Root, snap))
	if err != nil {
		t.Fatalf("etcd snapshot save: %v\n%s", err, out)
	}
	t.Logf("snapshot save took %s: %s", time.Since(start).Round(time.Millisecond), lastLine(strings.TrimSpace(grepLines(out, "Saved etcd"))))
	if st, err := os.Stat(snap); err != nil || st.Mode().Perm() != 0o600 || !strings.Contains(out, "mode 0600") {
		t.Errorf("the snapshot file: %v %v; want mode 0600, and said:\n%s", err, st, out)
	}
	// A scheduled snapshot taken after the objects were made, and only the
	// newest two kept.
	created := time.Now()
	scheduled := filepath.Join(a.Root, "var/lib/kubeboot/etcd-snapshots")
	var newest string
	eventually(t, 60*time.Second, time.Second, "three scheduled snapshots after the objects", func() error {
		files, _ := filepath.Glob(filepath.Join(scheduled, "etcd-a-*.snapshot"))
		log, _ := os.ReadFile(filepath.Join(a.Root, "var/log/kubeboot/etcd-snapshotter.log"))
		if n := strings.Count(string(log), "[snapshot] Removed "); n < 1 || len(files) == 0 {
			return fmt.Errorf("%d snapshots, %d removed", len(files), n)
		}
		newest = files[len(files)-1]
		if st, err := os.Stat(newest); err != nil || !st.ModTime().After(created) {
			return fmt.Errorf("the newest snapshot %s is from before the objects", newest)
		}
		return nil
	})
	if files, _ := filepath.Glob(filepath.Join(scheduled, "etcd-a-*.snapshot")); len(files) != 2 {
		t.Errorf("%d scheduled snapshots kept, want 2: %v", len(files), files)
	}
	if st, err := os.Stat(newest); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("a scheduled snapshot: %v %v, want mode 0600", err, st)
	}
	if st, err := os.Stat(scheduled); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the scheduled snapshots' directory: %v %v, want mode 0700", err, st)
	}
	// reset removes the node's state, its snapshots with it: keep one.
	snap = filepath.Join(dir, "scheduled.snapshot")
	if b, err := os.ReadFile(newest); err != nil || os.WriteFile(snap, b, 0o600) != nil {
		t.Fatalf("copying %s: %v", newest, err)
	}
	oldAdmin := filepath.Join(dir, "old-admin.conf")
	adminConf, _ := os.ReadFile(filepath.Join(a.Root, "etc/kubernetes/admin.conf"))
	os.WriteFile(oldAdmin, adminConf, 0o600)
	kb(t, a, "reset", "--force")

	start = time.Now()
	out = kb(t, b, "etcd", "snapshot", "restore", snap, "--apiserver-advertise-address", "10.216.0.3", "--node-name", "b")
	t.Logf("snapshot restore (init included) took %s", time.Since(start).Round(time.Millisecond))
	for _, want := range []string{"[restore] Snapshot of a at revision", "[restore] Rebuilt the \"cluster-info\" ConfigMap"} {
		if !strings.Contains(out, want) {
			t.Errorf("restore's output lacks %q:\n%s", want, out)
		}
	}
	if n, err := count(b, filepath.Join(b.Root, "etc/kubernetes/admin.conf")); err != nil || n != 500 {
		t.Errorf("after the restore: %d ConfigMaps, %v", n, err)
	}
	waitNodeReady(t, b, b, "b", start)
	// The old cluster's credentials, pointed at the new address.
	o, err := nethost.Run(b.Command(b.Binary, "kubectl", "--kubeconfig", oldAdmin, "--server", "https://10.216.0.3:6443", "get", "configmap", "cm-499", "-o", "jsonpath={.data.i}"))
	if err != nil || o != "499" {
		t.Errorf("the old admin.conf against the restored cluster: %q %v", o, err)
	}
	if o := kb(t, b, "etcd", "members"); !strings.Contains(o, "b ") || !strings.Contains(o, "healthy") || strings.Contains(o, "unhealthy") {
		t.Errorf("etcd members:\n%s", o)
	} else {
		t.Logf("etcd members:\n%s", o)
	}
	// Restoring again onto the same node is refused before anything.
	if o, err := nethost.Run(b.Kubeboot("etcd", "snapshot", "restore", snap, "--apiserver-advertise-address", "10.216.0.3", "--node-name", "b")); err == nil || !strings.Contains(o, "run `kubeboot reset` first") {
		t.Errorf("a restore onto a used node: %v\n%s", err, o)
	}
}
