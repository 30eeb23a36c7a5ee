package node

import (
	"fmt"
	"net"
	"strings"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/network/cni"
)

// CNIConfList renders the node's CNI configuration for its pod subnets
// (one per family) at the pods' MTU, as flannel writes it once it holds
// the node's lease (package cni, package flannel).
func CNIConfList(fs fsys.FS, subnets []string, mtu int) ([]byte, error) {
	return cni.ConfList(cni.Conf{Network: CNINetwork(fs), Bridge: BridgeName, Subnets: subnets, MTU: mtu,
		DataDir: fs.Path(CNIDataDir + "/networks")})
}

// FirstNodeSubnets are the pod subnets the controller-manager's range
// allocator gives the first node: the first /maskV4 (IPv4) and /maskV6
// (IPv6) of the pod network's subnet of each family (config.NodeMaskSizes),
// IPv4 first as flannel writes its lease's, whatever order the network is
// given in (so flannel does not rewrite the file it finds).
func FirstNodeSubnets(podSubnet string, maskV4, maskV6 int) ([]string, error) {
	v4, v6, err := cni.CIDRsByFamily(strings.Split(podSubnet, ","))
	if err != nil {
		return nil, fmt.Errorf("pod subnet %q: %w", podSubnet, err)
	}
	first := func(network string, size int) string {
		if network == "" {
			return ""
		}
		_, n, _ := net.ParseCIDR(network) // canonical already
		ones, bits := n.Mask.Size()
		return (&net.IPNet{IP: n.IP, Mask: net.CIDRMask(max(size, ones), bits)}).String()
	}
	return cni.Ordered(first(v4, maskV4), first(v6, maskV6)), nil
}
