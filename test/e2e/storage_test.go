package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// A StatefulSet whose one pod writes a line into its volume, or prints the
// line it finds there.
const statefulApp = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: keeper, namespace: default}
spec:
  serviceName: keeper
  replicas: 1
  selector: {matchLabels: {app: keeper}}
  template:
    metadata: {labels: {app: keeper}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: keeper
        image: %s
        imagePullPolicy: IfNotPresent
        args: ["--port", "8080", "--keep", "/data/stamp"]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 16Mi}}
`

// testStorage proves the storage add-on of the cluster whose control
// plane is h and whose nodes are nodes (by node name): a
// PersistentVolumeClaim of the default StorageClass binds, its data lives
// under the root of the node its pod was scheduled to (and of no other),
// the volume keeps its pod on that node and outlives the pod, and
// deleting the claim removes the data.
func testStorage(t *testing.T, h *nethost.Host, nodes map[string]*nethost.Host) {
	if out := kubectl(t, h, "get", "storageclass", "-o", "jsonpath={range .items[*]}{.metadata.name}:{.metadata.annotations.storageclass\\.kubernetes\\.io/is-default-class}:{.volumeBindingMode}:{.reclaimPolicy} {end}"); strings.TrimSpace(out) != "local-path:true:WaitForFirstConsumer:Delete" {
		t.Fatalf("storage classes: %q, want the default local-path, WaitForFirstConsumer, Delete", out)
	}
	provisioner := func() string {
		return kubectl(t, h, "-n", "kube-system", "get", "deployment", "local-path-provisioner", "-o", "jsonpath={.spec.replicas}")
	}
	// Idle, the provisioner does not run: no claim of its class yet.
	if r := provisioner(); r != "0" {
		t.Errorf("the provisioner has %s replicas before any claim, want 0", r)
	}
	f := filepath.Join(h.Root, "keeper.yaml")
	os.WriteFile(f, []byte(fmt.Sprintf(statefulApp, images.TestServer)), 0o644)
	start := time.Now()
	kubectl(t, h, "apply", "-f", f)
	os.Remove(f)
	kubectl(t, h, "wait", "--for=condition=Ready", "pod/keeper-0", "--timeout=120s")
	t.Logf("a pod with a new volume Ready %s after apply", time.Since(start).Round(time.Millisecond))
	if r := provisioner(); r != "1" {
		t.Errorf("the provisioner has %s replicas with a claim of its class, want 1", r)
	}
	pv := kubectl(t, h, "get", "pvc", "data-keeper-0", "-o", "jsonpath={.spec.volumeName}")
	if pv == "" {
		t.Fatal("the claim data-keeper-0 is not bound")
	}
	nodeName := kubectl(t, h, "get", "pod", "keeper-0", "-o", "jsonpath={.spec.nodeName}")
	on := nodes[nodeName]
	if on == nil {
		t.Fatalf("keeper-0 runs on %q, not one of the test's nodes", nodeName)
	}
	if got := kubectl(t, h, "get", "pv", pv, "-o", "jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}"); got != nodeName {
		t.Errorf("the volume's node affinity names %q, want %s, where its pod first ran", got, nodeName)
	}
	// The volume's directory: under the node's root, named by the node.
	volume := pv + "_default_data-keeper-0"
	dir := filepath.Join(on.Root, node.StorageRoot, nodeName, volume)
	for name, other := range nodes {
		if name == nodeName {
			continue
		}
		if m, _ := filepath.Glob(filepath.Join(other.Root, node.StorageRoot, "*", volume)); len(m) != 0 {
			t.Errorf("the volume of a pod on %s is also on %s: %v", nodeName, name, m)
		}
	}
	stamp, err := os.ReadFile(filepath.Join(dir, "stamp"))
	if err != nil {
		t.Fatalf("the volume's data is not under the node's root: %v", err)
	}
	if !strings.HasPrefix(string(stamp), "written by keeper-0 at ") {
		t.Fatalf("%s/stamp: %q", dir, stamp)
	}
	// A new pod gets the same volume and reads what the first wrote.
	uid := kubectl(t, h, "get", "pod", "keeper-0", "-o", "jsonpath={.metadata.uid}")
	kubectl(t, h, "delete", "pod", "keeper-0", "--wait=true")
	eventually(t, 120*time.Second, 500*time.Millisecond, "a new keeper-0 Ready", func() error {
		out, err := kubectlErr(h, "get", "pod", "keeper-0", "-o", "jsonpath={.metadata.uid} {.status.conditions[?(@.type==\"Ready\")].status}")
		if err != nil || strings.HasPrefix(out, uid) || !strings.HasSuffix(out, " True") {
			return fmt.Errorf("%v: %q", err, out)
		}
		return nil
	})
	if again := kubectl(t, h, "get", "pod", "keeper-0", "-o", "jsonpath={.spec.nodeName}"); again != nodeName {
		t.Errorf("the new keeper-0 runs on %s, its volume is on %s", again, nodeName)
	}
	t.Logf("the volume %s and its pod on node %s", pv, nodeName)
	if logs := kubectl(t, h, "logs", "keeper-0"); !strings.Contains(logs, "kept /data/stamp: "+strings.TrimSpace(string(stamp))) {
		t.Errorf("the new pod did not read the old pod's file: %q, want %q", logs, stamp)
	}
	// Reclaim Delete: the claim's deletion removes the data on the node.
	kubectl(t, h, "delete", "statefulset", "keeper", "--wait=true")
	kubectl(t, h, "delete", "pvc", "data-keeper-0", "--wait=true")
	eventually(t, 120*time.Second, 500*time.Millisecond, "the volume's directory removed", func() error {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			return fmt.Errorf("%s: %v", dir, err)
		}
		if out, err := kubectlErr(h, "get", "pv", pv, "--ignore-not-found", "-o", "name"); err != nil || out != "" {
			return fmt.Errorf("the volume %s is still there: %v %s", pv, err, out)
		}
		return nil
	})
}
