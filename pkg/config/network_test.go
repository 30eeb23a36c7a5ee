package config

import (
	"strings"
	"testing"
)

func TestPodNetwork(t *testing.T) {
	d := DefaultPodNetwork()
	if d.Backend != BackendVXLAN || !d.NetworkPolicy || !d.Flannel() || d.Overhead() != 50 {
		t.Errorf("default %+v", d)
	}
	if err := (PodNetwork{Backend: "calico"}).Validate(); err == nil {
		t.Error("an unknown backend: no error")
	}
	if (PodNetwork{Backend: BackendNone}).Flannel() {
		t.Error("backend none runs flannel")
	}
	if got := (PodNetwork{Backend: BackendWireGuard}).FlannelType(); got != "wireguard" {
		t.Errorf("wireguard-native is flannel's %q", got)
	}
	for _, p := range []PodNetwork{d, {Backend: BackendHostGW}, {Backend: BackendNone, NetworkPolicy: true}} {
		back, err := PodNetworkFromData(p.Data())
		if err != nil || back != p {
			t.Errorf("%+v stored and read back as %+v (%v)", p, back, err)
		}
	}
	if _, err := PodNetworkFromData(map[string]string{"backend": "vxlan", "networkPolicy": "yes"}); err == nil {
		t.Error("networkPolicy: yes accepted")
	}
}

// A dual-stack cluster's node gets its address of each family, as
// kubeadm's users write it (kubeletExtraArgs node-ip "v4,v6"): the
// advertised one first, then the host's default route's of the other
// family; a node-ip given is kept; a host without the other family is
// told what to give.
func TestDualStackNodeIP(t *testing.T) {
	doc := `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
networking:
  podSubnet: 10.244.0.0/16,fd00:10:244::/56
  serviceSubnet: 10.96.0.0/16,fd00:10:96::/112
`
	h := Host{Hostname: "a", DefaultIP: "10.0.0.2", DefaultIPv4: "10.0.0.2", DefaultIPv6: "fd00:1::2"}
	c, err := Parse("t.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DefaultInit(h); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("dual-stack refused: %v", err)
	}
	args := c.Init.NodeRegistration.KubeletExtraArgs
	if len(args) != 1 || args[0].Name != "node-ip" || args[0].Value != "10.0.0.2,fd00:1::2" {
		t.Errorf("node-ip: %+v", args)
	}
	// Given: kept.
	c, _ = Parse("t.yaml", []byte(doc+"---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n  - name: node-ip\n    value: 10.0.0.2,fd00:9::9\n"))
	if err := c.DefaultInit(h); err != nil {
		t.Fatal(err)
	}
	if args := c.Init.NodeRegistration.KubeletExtraArgs; len(args) != 1 || args[0].Value != "10.0.0.2,fd00:9::9" {
		t.Errorf("given node-ip changed: %+v", args)
	}
	// No IPv6 on this host.
	c, _ = Parse("t.yaml", []byte(doc))
	err = c.DefaultInit(Host{Hostname: "a", DefaultIP: "10.0.0.2", DefaultIPv4: "10.0.0.2"})
	if err == nil || !strings.Contains(err.Error(), "no IPv6 address") || !strings.Contains(err.Error(), "node-ip: 10.0.0.2,<IPv6>") {
		t.Errorf("host without IPv6: %v", err)
	}
	// Single-stack: nothing added.
	c, _ = Parse("t.yaml", []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"))
	if err := c.DefaultInit(h); err != nil || len(c.Init.NodeRegistration.KubeletExtraArgs) != 0 {
		t.Errorf("single-stack: %v %+v", err, c.Init.NodeRegistration.KubeletExtraArgs)
	}
}
