package config

import (
	"strings"
	"testing"

	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
)

func TestPodNetwork(t *testing.T) {
	d := DefaultPodNetwork()
	if d.Backend != BackendVXLAN || !d.NetworkPolicy || !d.Flannel() || d.Overhead("10.244.0.0/16") != 50 || d.Overhead("fd00:10:244::/56") != 70 || d.Overhead("10.244.0.0/16, fd00:10:244::/56") != 70 {
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
// advertised one first, then the host's of the other family on the same
// interface, else on that family's default route; a node-ip of both
// families is kept, one of a single family completed (apply gives
// workers their address alone); a host without the other family is told
// what to give; a single-stack network gets nothing.
func TestDualStackNodeIP(t *testing.T) {
	const dual = "10.244.0.0/16,fd00:10:244::/56"
	h := Host{Hostname: "a", DefaultIP: "10.0.0.2", DefaultIPv4: "10.0.0.2", DefaultIPv6: "fd00:1::2",
		Siblings: map[string][]string{"10.1.0.2": {"fd00:9::2"}, "fd00:9::2": {"10.1.0.2"}}}
	nodeIP := func(reg *kubeadmv1.NodeRegistrationOptions) string {
		for _, a := range reg.KubeletExtraArgs {
			if a.Name == "node-ip" {
				return a.Value
			}
		}
		return ""
	}
	for _, tc := range []struct {
		name, advertise, given, want string
	}{
		{"default route's", "10.0.0.2", "", "10.0.0.2,fd00:1::2"},
		{"same interface first", "10.1.0.2", "", "10.1.0.2,fd00:9::2"},
		{"IPv6 advertised", "fd00:9::2", "", "fd00:9::2,10.1.0.2"},
		{"both given: kept", "10.0.0.2", "10.0.0.2,fd00:7::7", "10.0.0.2,fd00:7::7"},
		{"one given: completed", "10.0.0.2", "10.1.0.2", "10.1.0.2,fd00:9::2"},
	} {
		reg := &kubeadmv1.NodeRegistrationOptions{}
		if tc.given != "" {
			reg.KubeletExtraArgs = []kubeadmv1.Arg{{Name: "node-ip", Value: tc.given}}
		}
		if err := DualStackNodeIP(reg, tc.advertise, dual, h); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := nodeIP(reg); got != tc.want || len(reg.KubeletExtraArgs) != 1 {
			t.Errorf("%s: node-ip %q (%d args), want %q", tc.name, got, len(reg.KubeletExtraArgs), tc.want)
		}
	}
	reg := &kubeadmv1.NodeRegistrationOptions{}
	err := DualStackNodeIP(reg, "10.0.0.2", dual, Host{DefaultIPv4: "10.0.0.2"})
	if err == nil || !strings.Contains(err.Error(), "no IPv6 address") || !strings.Contains(err.Error(), "node-ip: 10.0.0.2,<IPv6>") {
		t.Errorf("host without IPv6: %v", err)
	}
	reg = &kubeadmv1.NodeRegistrationOptions{}
	if err := DualStackNodeIP(reg, "10.0.0.2", "10.244.0.0/16", h); err != nil || len(reg.KubeletExtraArgs) != 0 {
		t.Errorf("single-stack: %v %+v", err, reg.KubeletExtraArgs)
	}
	// Defaulting alone (certs, config, restore's checks) adds nothing: a
	// host without IPv6 can still renew a dual-stack cluster's certs.
	c, err := Parse("t.yaml", []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: "+dual+"\n  serviceSubnet: 10.96.0.0/16,fd00:10:96::/112\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DefaultInit(Host{Hostname: "a", DefaultIP: "10.0.0.2"}); err != nil || len(c.Init.NodeRegistration.KubeletExtraArgs) != 0 {
		t.Errorf("DefaultInit on a host without IPv6: %v %+v", err, c.Init.NodeRegistration.KubeletExtraArgs)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("dual-stack refused: %v", err)
	}
}

func TestNodeMaskSizes(t *testing.T) {
	args := func(kv ...string) *kubeadmv1.ClusterConfiguration {
		c := &kubeadmv1.ClusterConfiguration{Networking: kubeadmv1.Networking{PodSubnet: "10.244.0.0/16"}}
		for i := 0; i < len(kv); i += 2 {
			c.ControllerManager.ExtraArgs = append(c.ControllerManager.ExtraArgs, kubeadmv1.Arg{Name: kv[i], Value: kv[i+1]})
		}
		return c
	}
	dual := args("node-cidr-mask-size-ipv6", "80", "node-cidr-mask-size", "20")
	dual.Networking.PodSubnet = "10.244.0.0/16,fd00:10:244::/56"
	for name, tc := range map[string]struct {
		c      *kubeadmv1.ClusterConfiguration
		v4, v6 int
	}{
		"defaults":                         {args(), 24, 64},
		"node-cidr-mask-size, one family":  {args("node-cidr-mask-size", "26"), 26, 26},
		"per family":                       {args("node-cidr-mask-size-ipv4", "25", "node-cidr-mask-size-ipv6", "80"), 25, 80},
		"dual-stack ignores the plain one": {dual, 24, 80},
	} {
		if v4, v6 := NodeMaskSizes(tc.c); v4 != tc.v4 || v6 != tc.v6 {
			t.Errorf("%s: /%d and /%d, want /%d and /%d", name, v4, v6, tc.v4, tc.v6)
		}
	}
}
