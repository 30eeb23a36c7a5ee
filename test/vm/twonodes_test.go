package vm

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/host/images"
)

// spread is a Deployment with a pod on each node, its Service, and a
// client pod on the worker.
const spread = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations: [{operator: Exists}]
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      containers:
      - name: web
        image: %[1]s
        imagePullPolicy: Never
        args: ["--port", "8080"]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 2
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: default}
spec:
  nodeName: kbworker
  containers:
  - name: client
    image: %[1]s
    imagePullPolicy: Never
    args: ["--port", "9090"]
`

// TestTwoNodes: a control plane and a worker, each a VM with its own
// kernel, joined with the command init prints; pods on both talk across
// them directly and through a Service, the worker resolves names, and the
// worker's reset leaves the cluster and the VM clean. Run by hand
// (KUBEBOOT_VM=2): two emulated VMs take the machine for ~20 minutes.
func TestTwoNodes(t *testing.T) {
	script, binary := require(t)
	if os.Getenv("KUBEBOOT_VM") != "2" {
		t.Skip("two VMs run with KUBEBOOT_VM=2 (by hand: ~20 minutes under emulation)")
	}
	ensureBase(t, script)
	cp, w := bootControlPlaneAndWorker(t, script)
	cp.Push(binary, "/usr/local/bin/kubeboot")
	w.Push(binary, "/usr/local/bin/kubeboot")
	// Network policy is on by default: kube-router needs ipset, which a
	// stock Debian 12 lacks (TestSingleNode checks preflight says so).
	for _, v := range []*VM{cp, w} {
		install(t, v, "ipset", "libipset13")
	}
	before := w.MustRun(2*time.Minute, snapshot)

	out := cp.MustRun(20*time.Minute, `
kubeboot init > /root/init.log 2>&1 || { tail -40 /root/init.log; exit 1; }
kubeboot token create --print-join-command
`)
	// One line, word-split by the shell as an operator's `$JOIN` is.
	join := regexp.MustCompile(`(?m)^kubeboot join .*$`).FindString(out)
	if join == "" {
		t.Fatalf("token create --print-join-command printed no one-line join command:\n%s", out)
	}
	t.Logf("join command: %s", join)
	start := time.Now()
	out = w.MustRun(20*time.Minute, join+` > /root/join.log 2>&1 || { tail -40 /root/join.log; exit 1; }
grep -E 'kernel module|Set net|Enabled' /root/join.log || true
echo "kubelet driver: $(grep cgroupDriver /var/lib/kubelet/config.yaml)"
`)
	t.Logf("join took %s:\n%s", time.Since(start).Round(time.Second), out)
	if !strings.Contains(out, "kubelet driver: cgroupDriver: systemd") {
		t.Error("the worker's kubelet does not use the systemd driver")
	}

	out = cp.MustRun(20*time.Minute, kubectl+waitFor+`
waitFor 600 "both nodes Ready" k wait --for=condition=Ready node kbcp kbworker --timeout=20s
cat > /root/web.yaml <<'YAML'
`+fmt.Sprintf(spread, images.TestServer)+`YAML
k apply -f /root/web.yaml
waitFor 600 "web Ready on both nodes" k wait --for=condition=Ready pod -l app=web --timeout=20s
waitFor 300 "client Ready" k wait --for=condition=Ready pod/client --timeout=20s
k get pod -o wide
for ip in $(k get pod -l app=web -o jsonpath='{.items[*].status.podIP}'); do
  waitFor 60 "pod $ip from the worker's client" k exec client -- /test-server --get "http://$ip:8080/"
done
waitFor 60 "DNS from the worker" k exec client -- /test-server --resolve kubernetes.default.svc.cluster.local
waitFor 180 "Service by name from the worker" k exec client -- /test-server --get http://web.default.svc.cluster.local/
`)
	t.Logf("across two VMs:\n%s", out)
	if n := strings.Count(out, "kbworker"); n < 2 {
		t.Errorf("no web pod on the worker:\n%s", out)
	}

	out = w.MustRun(10*time.Minute, `
kubeboot reset --force > /root/reset.log 2>&1 || { tail -30 /root/reset.log; exit 1; }
grep -E 'Deleted Node|Unloaded|back to|Removed "/etc/(modules|sysctl)|Stopped|Disabled' /root/reset.log || true
rm -f /root/reset.log /root/join.log
`)
	t.Logf("worker reset:\n%s", out)
	if !strings.Contains(out, `Deleted Node "kbworker"`) {
		t.Error("the worker's reset did not delete its Node")
	}
	after := w.MustRun(2*time.Minute, snapshot)
	if added, _ := diffLines(before, after); len(added) > 0 {
		t.Errorf("the worker's reset left %d things:\n%s", len(added), strings.Join(added, "\n"))
	}
}
