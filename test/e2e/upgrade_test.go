package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/host/nodestate"
	"github.com/kubeboot/kubeboot/internal/runtime/upgrade"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// TestUpgrade upgrades a control plane and a worker to a second build of
// kubeboot that reports the next patch release (KUBEBOOT_NEXT_BINARY, as
// `make test` builds it): the worker is refused before the control
// plane; apply saves an etcd snapshot and restarts each component from
// the new binary; the API server and every kubelet then report the new
// version, and a pod made before is still running, never restarted; a
// rollback puts the worker back.
func TestUpgrade(t *testing.T) {
	requireE2E(t)
	next := os.Getenv("KUBEBOOT_NEXT_BINARY")
	if next == "" {
		next, _ = filepath.Abs("../../_output/kubeboot-next")
	}
	if _, err := os.Stat(next); err != nil {
		t.Fatalf("the next build %s: %v (run `make build-next`, or `make test` which builds it)", next, err)
	}
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already", n)
	}
	network := newNetwork(t, "kbu-net")
	cp := newHostWith(t, "kbu-cp", "10.219.0.2", nethost.Options{Network: network})
	w := newHostWith(t, "kbu-w", "10.219.0.3", nethost.Options{Network: network})
	out := kb(t, cp, "init", "--node-name", "cp", "--skip-phases", "addon/storage,addon/metrics-server")
	j, ok := nethost.ParseJoin(out)
	if !ok {
		t.Fatalf("no join command in init's output:\n%s", out)
	}
	start := time.Now()
	kb(t, w, "join", "10.219.0.2:6443", "--token", j.Token, "--discovery-token-ca-cert-hash", j.Hash, "--node-name", "w")
	waitNodeReady(t, w, cp, "w", start)
	// Each node's record, as init and join wrote it; the worker's then
	// goes, as on a node of a kubeboot from before records were: its
	// upgrade reads its facts from its specs and writes it.
	record := func(h *nethost.Host) nodestate.Node {
		t.Helper()
		n, ok, err := nodestate.Read(fsys.NewRoot(h.Root))
		if !ok || err != nil {
			t.Fatalf("the record of %s: %v, %v", h.Root, ok, err)
		}
		return n
	}
	// The kubeboot release of each build, as it says it.
	release := func(bin string) string {
		t.Helper()
		_, info, err := upgrade.BinaryInfo(t.Context(), bin)
		if err != nil {
			t.Fatal(err)
		}
		return info.Release()
	}
	this, nextRelease := release(binary), release(next)
	if this == nextRelease {
		t.Fatalf("the two builds are the same kubeboot release %q (make build-next sets its own)", this)
	}
	if n := record(cp); n.Name != "cp" || n.Role != nodestate.ControlPlane || n.Etcd == nil || n.Etcd.PeerURL != "https://10.219.0.2:2380" || !n.Runs("kube-apiserver") || n.Version != "v1.37.2" || n.Kubeboot != this {
		t.Errorf("the control plane's record: %+v", n)
	}
	if st, want := kb(t, cp, "status"), "node cp (control-plane), Kubernetes v1.37.2, addresses 10.219.0.2; etcd member cp at https://10.219.0.2:2380; kubeboot "+this; !strings.Contains(st, want) {
		t.Errorf("status lacks the node's record %q:\n%s", want, st)
	}
	wrec := record(w)
	if wrec.Name != "w" || wrec.Role != nodestate.Worker || wrec.Etcd != nil || !slices.Equal(wrec.Addresses, []string{"10.219.0.3"}) || !wrec.Runs("kubelet") || wrec.Runs("kube-apiserver") {
		t.Errorf("the worker's record: %+v", wrec)
	}
	if err := os.Remove(filepath.Join(w.Root, nodestate.File)); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "app.yaml")
	os.WriteFile(f, []byte(strings.Replace(fmt.Sprintf(testApp, images.TestServer), "replicas: 2", "replicas: 1", 1)), 0o644)
	kubectl(t, cp, "apply", "-f", f)
	kubectl(t, cp, "rollout", "status", "deployment/web", "--timeout=120s")
	podBefore := kubectl(t, cp, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.uid} {.items[0].status.containerStatuses[0].restartCount}")

	kubeletVersions := func() string {
		return kubectl(t, cp, "get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.nodeInfo.kubeletVersion} {end}")
	}
	// The worker first: refused, it would be newer than the API server.
	if out, err := nethost.Run(w.Kubeboot("upgrade", "node", "--binary", next)); err == nil || !strings.Contains(out, "upgrade the control planes first") {
		t.Errorf("upgrade node before the control plane: %v\n%s", err, out)
	}
	out = kb(t, cp, "upgrade", "plan", "--binary", next)
	for _, want := range []string{"API server version: v1.37.2; target version", "kubeboot upgrade apply --binary " + next} {
		if !strings.Contains(out, want) {
			t.Errorf("upgrade plan lacks %q:\n%s", want, out)
		}
	}
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[1] == "v1.37.2" && f[2] == "v1.37.3" {
			rows++
		}
	}
	if rows != 7 {
		t.Errorf("upgrade plan lists %d components going from v1.37.2 to v1.37.3, want 7:\n%s", rows, out)
	}

	start = time.Now()
	out = kb(t, cp, "upgrade", "apply", "--binary", next, "--yes")
	t.Logf("upgrade apply of the control plane took %s", time.Since(start).Round(time.Millisecond))
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[upgrade] ") || strings.HasPrefix(l, "[upgrade/etcd]") {
			t.Log(l)
		}
	}
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "containerd", "kubelet", "kube-proxy"} {
		if !strings.Contains(out, "[upgrade] "+c+" runs from ") {
			t.Errorf("upgrade apply did not replace %s:\n%s", c, out)
		}
	}
	if !strings.Contains(out, "[upgrade/successful] SUCCESS!") {
		t.Errorf("upgrade apply:\n%s", out)
	}
	// The new images on this node; the add-ons wait for the worker's.
	if !strings.Contains(grepLines(out, "[upgrade/images] imported "), strings.Replace(images.CoreDNS, "v1.37.2", "v1.37.3", 1)) ||
		!strings.Contains(out, "[upgrade/addons] The add-ons (CoreDNS, storage, metrics-server) stay on their images until every node runs v1.37.3") ||
		!strings.Contains(out, "still to upgrade: w (v1.37.2)") {
		t.Errorf("upgrade apply does not import the new images, or does not say the add-ons wait for the worker:\n%s", grepLines(out, "[upgrade/"))
	}
	corednsImage := func() string {
		return kubectl(t, cp, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
	}
	if img := corednsImage(); img != images.CoreDNS {
		t.Errorf("CoreDNS moved to %s while the worker, which runs it, lacks the image", img)
	}
	snaps, _ := filepath.Glob(filepath.Join(cp.Root, "var/lib/kubeboot/upgrade/snapshots/pre-upgrade-v1.37.2-*.snapshot"))
	if len(snaps) != 1 {
		t.Errorf("the snapshot before the upgrade: %v", snaps)
	}
	eventually(t, 60*time.Second, time.Second, "the API server at v1.37.3", func() error {
		out, err := kubectlErr(cp, "get", "--raw", "/version")
		if err != nil || !strings.Contains(out, `"gitVersion": "v1.37.3"`) {
			return fmt.Errorf("%v %s", err, out)
		}
		return nil
	})

	start = time.Now()
	out = kb(t, w, "upgrade", "node", "--binary", next)
	t.Logf("upgrade node of the worker took %s", time.Since(start).Round(time.Millisecond))
	eventually(t, 60*time.Second, time.Second, "every kubelet at v1.37.3", func() error {
		if v := kubeletVersions(); v != "cp=v1.37.3 w=v1.37.3 " {
			return fmt.Errorf("kubelets %q", v)
		}
		return nil
	})
	if after := kubectl(t, cp, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.uid} {.items[0].status.containerStatuses[0].restartCount}"); after != podBefore {
		t.Errorf("the pod made before the upgrade: %q, was %q", after, podBefore)
	}
	waitNodeReady(t, w, cp, "w", time.Now())
	if n := record(cp); n.Version != "v1.37.3" || n.Kubeboot != nextRelease {
		t.Errorf("the control plane's record after its upgrade gives version %q, kubeboot %q (want %q)", n.Version, n.Kubeboot, nextRelease)
	}
	wrec.Version, wrec.Kubeboot = "v1.37.3", nextRelease
	if n := record(w); !reflect.DeepEqual(n, wrec) {
		t.Errorf("the worker's record, written by its upgrade from its specs:\n%+v\nwant, as join wrote it:\n%+v", n, wrec)
	}
	if !strings.Contains(out, "[upgrade/addons] Every node runs v1.37.3 now: move the add-ons") {
		t.Errorf("upgrade node of the last node does not say the add-ons can move:\n%s", grepLines(out, "[upgrade/"))
	}

	// The add-ons, with the new binary on the control plane: CoreDNS rolls
	// out on the worker, from the image its upgrade imported.
	start = time.Now()
	out, err := nethost.Run(cp.Command(next, "--root", cp.Root, "upgrade", "addons"))
	newCoreDNS := strings.Replace(images.CoreDNS, "v1.37.2", "v1.37.3", 1)
	if err != nil || !strings.Contains(out, "[upgrade/addons] Moved CoreDNS from "+images.CoreDNS+" to "+newCoreDNS) {
		t.Fatalf("upgrade addons: %v\n%s", err, out)
	}
	kubectl(t, cp, "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=120s")
	if img := corednsImage(); img != newCoreDNS {
		t.Errorf("CoreDNS runs %s after upgrade addons", img)
	}
	t.Logf("upgrade addons: CoreDNS rolled out on %s in %s", newCoreDNS, time.Since(start).Round(time.Millisecond))
	if out, err := nethost.Run(cp.Command(next, "--root", cp.Root, "upgrade", "addons")); err != nil || !strings.Contains(out, "Every add-on runs the images of v1.37.3 already") {
		t.Errorf("a second upgrade addons: %v\n%s", err, out)
	}

	out = kb(t, w, "upgrade", "rollback")
	if !strings.Contains(out, "[upgrade] kubelet runs from the node daemon's binary again") {
		t.Errorf("upgrade rollback:\n%s", out)
	}
	eventually(t, 60*time.Second, time.Second, "the worker's kubelet back at v1.37.2", func() error {
		if v := kubeletVersions(); v != "cp=v1.37.3 w=v1.37.2 " {
			return fmt.Errorf("kubelets %q", v)
		}
		return nil
	})
	if out, err := nethost.Run(w.Kubeboot("upgrade", "rollback")); err == nil || !strings.Contains(out, "no upgrade to roll back") {
		t.Errorf("a second rollback: %v\n%s", err, out)
	}
}
