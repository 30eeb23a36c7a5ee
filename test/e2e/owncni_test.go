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

// operatorCNI is the CNI configuration an operator's CNI installs: its own
// plugin on a subnet of its own choosing. The plugin is a copy of the
// bridge plugin named flannel, as upstream flannel's CNI names its plugin:
// kubeboot's helpers directory has a "flannel" too (the engine, which is
// no CNI plugin), so the pods get their addresses only if containerd
// takes the operator's plugins first.
const operatorCNI = `{
  "cniVersion": "1.0.0",
  "name": "operator-net",
  "plugins": [{
    "type": "flannel", "bridge": "opbr0", "isGateway": true, "ipMasq": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.250.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}
  }]
}
`

// TestOwnCNI: with --flannel-backend none and --disable-network-policy,
// kubeboot runs no network engine and writes no CNI configuration; the
// node stays NotReady, as with kubeadm, until the operator's CNI puts its
// configuration in /etc/cni/net.d and its plugins in /opt/cni/bin (under
// the root); pods then get their addresses from it.
func TestOwnCNI(t *testing.T) {
	requireE2E(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already; this test needs it free of other kubelets", n)
	}
	h := newHostWith(t, "kbo-cp", "10.210.0.2", nethost.Options{})
	netBefore := netState(t, h)
	kb(t, h, "init", "--node-name", "cp", "--single-node", "--flannel-backend", "none", "--disable-network-policy")

	// No engine, no CNI configuration of kubeboot's: NotReady, and why.
	if _, err := os.Stat(filepath.Join(h.Root, node.CNIConfFile)); err == nil {
		t.Errorf("kubeboot wrote %s with --flannel-backend none", node.CNIConfFile)
	}
	ps := kb(t, h, "status")
	for _, engine := range []string{"flannel", "kube-router"} {
		if strings.Contains(ps, engine) {
			t.Errorf("%s runs with --flannel-backend none --disable-network-policy:\n%s", engine, ps)
		}
	}
	time.Sleep(5 * time.Second)
	ready := kubectlOn(t, h, h, "get", "node", "cp", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`)
	if !strings.HasPrefix(ready, "False") || !strings.Contains(ready, "network") {
		t.Errorf("node without a CNI: Ready %q, want False naming the network", ready)
	}
	t.Logf("before the operator's CNI: Ready %s", ready)

	// The operator's CNI: its plugin in /opt/cni/bin, its configuration.
	bin := filepath.Join(h.Root, node.OperatorCNIBinDir)
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	bridge, err := os.ReadFile(filepath.Join(h.Root, node.CNIBinDir, "bridge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "flannel"), bridge, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(h.Root, node.CNIConfDir, "10-operator.conflist")
	os.MkdirAll(filepath.Dir(conf), 0o755)
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(operatorCNI, filepath.Join(h.Root, node.CNIDataDir, "operator"))), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	took := waitNodeReady(t, h, h, "cp", start)
	t.Logf("node Ready %s after the operator's CNI configuration", took.Round(time.Millisecond))

	kubectlOn(t, h, h, "run", "web-op", "--image", images.TestServer, "--image-pull-policy", "IfNotPresent", "--port", "8080", "--", "--port", "8080")
	if out, err := kubectlErr(h, "wait", "--for=condition=Ready", "pod/web-op", "--timeout=120s"); err != nil {
		desc, _ := kubectlErr(h, "describe", "pod", "web-op")
		t.Fatalf("pod on the operator's network not Ready: %v: %s\n%s", err, out, desc)
	}
	ip := podIP(t, h, "default", "web-op")
	if !strings.HasPrefix(ip, "10.250.0.") {
		t.Errorf("pod address %s is not from the operator's CNI (10.250.0.0/24)", ip)
	}
	webAnswers(t, h, "http://"+ip+":8080/", 30*time.Second, "the pod on the operator's network, from its node")
	// CoreDNS runs on the operator's network too.
	kubectlOn(t, h, h, "-n", "kube-system", "wait", "--for=condition=Ready", "pod", "-l", "k8s-app=kube-dns", "--timeout=120s")

	kb(t, h, "reset", "--force")
	nethost.Reap()
	// reset empties /etc/cni/net.d and /var/lib/cni, the operator's
	// configuration and addresses too (its CNI writes them again at the
	// next init), and leaves the operator's plugins in /opt/cni/bin,
	// which the test then removes as an operator would: then nothing may
	// be left.
	if _, err := os.Stat(conf); err == nil {
		t.Errorf("reset left %s", conf)
	}
	if _, err := os.Stat(filepath.Join(bin, "flannel")); err != nil {
		t.Errorf("reset removed the operator's plugin: %v", err)
	}
	os.RemoveAll(filepath.Join(h.Root, "opt"))
	if files := listAll(h.Root); len(files) != 0 {
		t.Errorf("left under the root: %v", files)
	}
	// The operator's bridge is the operator's CNI's to remove too.
	nethost.Run(h.Command("ip", "link", "del", "opbr0"))
	checkNetworkGone(t, h, netBefore)
}
