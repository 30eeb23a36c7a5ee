package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	netutils "k8s.io/utils/net"

	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
)

// NodeMaskSizes are the sizes of the pod subnets the controller-manager
// cuts for each node, IPv4 and IPv6: /24 and /64 unless its extra args
// say otherwise, read as its node IPAM reads them (node-cidr-mask-size on
// a single-stack network, else node-cidr-mask-size-ipv4 and -ipv6). A
// value that is not a number is validation's to refuse, and left out here.
func NodeMaskSizes(c *kubeadmv1.ClusterConfiguration) (v4, v6 int) {
	v4, v6 = 24, 64
	arg := func(name string) int {
		n := 0
		for _, a := range c.ControllerManager.ExtraArgs {
			if a.Name == name {
				n, _ = strconv.Atoi(a.Value)
			}
		}
		return n
	}
	if n := arg("node-cidr-mask-size"); n > 0 && !strings.Contains(c.Networking.PodSubnet, ",") {
		return n, n
	}
	if n := arg("node-cidr-mask-size-ipv4"); n > 0 {
		v4 = n
	}
	if n := arg("node-cidr-mask-size-ipv6"); n > 0 {
		v6 = n
	}
	return v4, v6
}

// PodNetwork is kubeboot's own choice of pod network engines, from init's
// flags (as k3s's --flannel-backend and --disable-network-policy): no
// kubeadm document carries it. init stores it in the cluster (ConfigMap
// kube-system/kubeboot-network) and every node that joins reads it back.
type PodNetwork struct {
	// Backend is flannel's backend: vxlan (the default: an overlay that
	// crosses any IP network), host-gw (routes; every node on one L2),
	// wireguard-native (an encrypted overlay), or none (no flannel and no
	// CNI configuration: the operator installs a CNI of their own).
	Backend string
	// NetworkPolicy runs kube-router's network policy controller on every
	// node.
	NetworkPolicy bool
}

// Pod network backends.
const (
	BackendVXLAN     = "vxlan"
	BackendHostGW    = "host-gw"
	BackendWireGuard = "wireguard-native"
	BackendNone      = "none"
)

// Backends lists the backends, the default first.
var Backends = []string{BackendVXLAN, BackendHostGW, BackendWireGuard, BackendNone}

// DefaultPodNetwork is what init uses when not told otherwise.
func DefaultPodNetwork() PodNetwork { return PodNetwork{Backend: BackendVXLAN, NetworkPolicy: true} }

// Validate refuses a backend kubeboot does not know.
func (p PodNetwork) Validate() error {
	for _, b := range Backends {
		if p.Backend == b {
			return nil
		}
	}
	return fmt.Errorf("--flannel-backend %q: one of %s", p.Backend, strings.Join(Backends, ", "))
}

// Flannel reports whether flannel runs.
func (p PodNetwork) Flannel() bool { return p.Backend != BackendNone && p.Backend != "" }

// FlannelType is the backend's type in flannel's net-conf.json.
func (p PodNetwork) FlannelType() string {
	if p.Backend == BackendWireGuard {
		return "wireguard"
	}
	return p.Backend
}

// Overhead is what the backend's encapsulation takes off the node
// interface's MTU for the pods: flannel's figures (50 for VXLAN over IPv4:
// outer IPv4, UDP, VXLAN and Ethernet headers; 80 for wireguard), and 70
// for VXLAN when the pod network has IPv6, which flannel carries over the
// node's IPv6 address (an outer IPv6 header is 20 bytes longer; flannel
// itself takes 50 there too and leaves the rest to fragmentation), for
// the pod network podSubnet (the ClusterConfiguration's: one CIDR, or one
// of each family).
func (p PodNetwork) Overhead(podSubnet string) int {
	switch p.Backend {
	case BackendVXLAN:
		if slices.ContainsFunc(strings.Split(podSubnet, ","), func(s string) bool { return netutils.IsIPv6CIDRString(strings.TrimSpace(s)) }) {
			return VXLANOverheadIPv6
		}
		return 50
	case BackendWireGuard:
		return 80
	}
	return 0
}

// VXLANOverheadIPv6 is VXLAN's overhead over IPv6: outer IPv6 (40), UDP
// (8), VXLAN (8) and Ethernet (14) headers.
const VXLANOverheadIPv6 = 70

// ConfigMap data keys of the stored PodNetwork.
const (
	PodNetworkConfigMap = "kubeboot-network"
	keyBackend          = "backend"
	keyNetworkPolicy    = "networkPolicy"
)

// Data is p as the ConfigMap's data.
func (p PodNetwork) Data() map[string]string {
	return map[string]string{keyBackend: p.Backend, keyNetworkPolicy: fmt.Sprint(p.NetworkPolicy)}
}

// PodNetworkFromData reads the ConfigMap's data back.
func PodNetworkFromData(d map[string]string) (PodNetwork, error) {
	p := PodNetwork{Backend: d[keyBackend], NetworkPolicy: d[keyNetworkPolicy] == "true"}
	if d[keyNetworkPolicy] != "true" && d[keyNetworkPolicy] != "false" {
		return p, fmt.Errorf("%s: %q is not true or false", keyNetworkPolicy, d[keyNetworkPolicy])
	}
	return p, p.Validate()
}
