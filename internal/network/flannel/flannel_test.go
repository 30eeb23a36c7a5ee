package flannel

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeboot/kubeboot/internal/network/cni"
	"github.com/kubeboot/kubeboot/internal/network/engine/enginetest"
)

func TestNetConf(t *testing.T) {
	b, err := netConf("10.244.0.0/16, fd00:10:244::/56", "vxlan")
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c["Network"] != "10.244.0.0/16" || c["IPv6Network"] != "fd00:10:244::/56" || c["EnableIPv4"] != true || c["EnableIPv6"] != true {
		t.Errorf("dual-stack net-conf: %s", b)
	}
	b, _ = netConf("fd00:10:244::/56", "wireguard")
	c = map[string]any{}
	json.Unmarshal(b, &c)
	if c["EnableIPv4"] != false || c["EnableIPv6"] != true || c["Backend"].(map[string]any)["PersistentKeepaliveInterval"] != float64(25) {
		t.Errorf("IPv6-only wireguard net-conf: %s", b)
	}
	if _, err := netConf("10.244.0.0", "vxlan"); err == nil {
		t.Error("a subnet without a prefix length: no error")
	}
}

func TestWithMTU(t *testing.T) {
	b, err := withMTU([]byte(`{"Type":"vxlan","VNI":4}`), 1380)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil || c["Type"] != "vxlan" || c["VNI"] != 4.0 || c["MTU"] != 1380.0 {
		t.Errorf("withMTU: %s (%v)", b, err)
	}
	if b, err := withMTU(nil, 1430); err != nil || string(b) != `{"MTU":1430}` {
		t.Errorf("withMTU(nil): %s (%v)", b, err)
	}
}

// TestEarlyCNIConf: with the node's pod CIDR known, the CNI configuration
// holds the families of the pod network only, at the MTU of the interface
// that holds the node's address less the overhead; without the overhead
// nothing is written (the lease writes it).
func TestEarlyCNIConf(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface: %v", err)
	}
	dir := t.TempDir()
	o := &options{nodeIP: "127.0.0.1", podSubnets: "10.244.0.0/16", mtuOverhead: -1,
		cniConf: filepath.Join(dir, "10-kubeboot.conflist"), cniNetwork: "kubeboot", cniBridge: "cni0", cniDataDir: dir}
	o.writeEarlyCNIConf([]string{"10.244.3.0/24", "fd00:10:244:3::/64"})
	if _, err := os.Stat(o.cniConf); !os.IsNotExist(err) || o.earlyConf != nil {
		t.Fatalf("with no overhead given, a configuration was written: %v", err)
	}
	o.mtuOverhead = 50
	o.writeEarlyCNIConf([]string{"10.244.3.0/24", "fd00:10:244:3::/64"})
	b, err := os.ReadFile(o.cniConf)
	if err != nil {
		t.Fatal(err)
	}
	want, err := cni.ConfList(cni.Conf{Network: "kubeboot", Bridge: "cni0", Subnets: []string{"10.244.3.0/24"}, MTU: lo.MTU - 50, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(want) || string(o.earlyConf) != string(want) {
		t.Errorf("wrote:\n%s\nwant:\n%s", b, want)
	}

	// A dual-stack network given IPv6 first: IPv4 first all the same, as
	// the lease writes it.
	o.podSubnets = "fd00:10:244::/56,10.244.0.0/16"
	o.writeEarlyCNIConf([]string{"fd00:10:244:3::/64", "10.244.3.0/24"})
	if b, err = os.ReadFile(o.cniConf); err != nil {
		t.Fatal(err)
	}
	if want, err = cni.ConfList(cni.Conf{Network: "kubeboot", Bridge: "cni0", Subnets: []string{"10.244.3.0/24", "fd00:10:244:3::/64"}, MTU: lo.MTU - 50, DataDir: dir}); err != nil {
		t.Fatal(err)
	}
	if string(b) != string(want) {
		t.Errorf("dual-stack, IPv6 first: wrote:\n%s\nwant:\n%s", b, want)
	}
}

// Main hands its run the flags it parsed, and a SIGTERM ends it.
func TestMainRunsWithItsFlags(t *testing.T) {
	dir := t.TempDir()
	enginetest.ServesReadyz(t, Main, "--kubeconfig="+filepath.Join(dir, "none.conf"), "--node-name=n1", "--pod-subnets=10.244.0.0/16", "--state-dir="+filepath.Join(dir, "state"))
}
