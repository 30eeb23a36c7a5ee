package config

import "testing"

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
