package cleanup

import (
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/vishvananda/netlink"
)

// PodNetworkLinks are the links the pod network makes in a node's network
// namespace: the CNI bridge and flannel's devices (VXLAN for each family,
// WireGuard).
var PodNetworkLinks = []string{"cni0", "flannel.1", "flannel-v6.1", "flannel-wg", "flannel-wg-v6"}

// PodNetworkChains start the names of the iptables chains the pod network
// and kube-proxy make: kube-proxy's and kube-router's (KUBE-), the CNI
// plugins' (CNI-), flannel's (FLANNEL-) and those of kubeboot's network
// agent of before flannel (KUBEBOOT-).
var PodNetworkChains = []string{"KUBE-", "CNI-", "FLANNEL-", "KUBEBOOT-"}

// ipsetPrefixes start the names of kube-router's ipsets (its IPv6 sets
// carry "inet6:" before them).
var ipsetPrefixes = []string{"KUBE-SRC-", "KUBE-DST-", "TMP-"}

// PodNetwork removes what the pod network left in the node's network
// namespace beyond its chains (FlushChains first: a set in use by a rule
// cannot go): its links, the routes to other nodes' pod subnets that
// host-gw (or kubeboot's network agent of before) added, and
// kube-router's ipsets.
func PodNetwork(podSubnets []string, out io.Writer) {
	// The pods' veths still on the bridge: a stopped sandbox's network
	// namespace is freed by the kernel later (asynchronously), and its
	// veth outlives the bridge, unattached, until then.
	if br, err := netlink.LinkByName(PodNetworkLinks[0]); err == nil {
		if links, err := netlink.LinkList(); err == nil {
			n := 0
			for _, l := range links {
				if l.Attrs().MasterIndex == br.Attrs().Index && netlink.LinkDel(l) == nil {
					n++
				}
			}
			if n > 0 {
				fmt.Fprintf(out, "[reset] Removed %d pod links left on %s\n", n, br.Attrs().Name)
			}
		}
	}
	for _, l := range PodNetworkLinks {
		DeleteLink(l, out)
	}
	removed := 0
	for _, s := range podSubnets {
		_, subnet, err := net.ParseCIDR(strings.TrimSpace(s))
		if err != nil {
			continue
		}
		family := netlink.FAMILY_V4
		if subnet.IP.To4() == nil {
			family = netlink.FAMILY_V6
		}
		routes, err := netlink.RouteList(nil, family)
		if err != nil {
			continue
		}
		for _, r := range routes {
			if r.Dst != nil && inSubnet(r.Dst, subnet) && netlink.RouteDel(&r) == nil {
				removed++
			}
		}
	}
	if removed > 0 {
		fmt.Fprintf(out, "[reset] Removed %d routes to other nodes' pod subnets\n", removed)
	}
	if n := destroyIPSets(); n > 0 {
		fmt.Fprintf(out, "[reset] Removed %d ipsets of kube-router\n", n)
	}
}

// inSubnet reports whether n lies inside subnet.
func inSubnet(n, subnet *net.IPNet) bool {
	ones, _ := n.Mask.Size()
	sOnes, _ := subnet.Mask.Size()
	return ones >= sOnes && subnet.Contains(n.IP)
}

func destroyIPSets() int {
	sets, err := netlink.IpsetListAll()
	if err != nil {
		return 0 // no ip_set in the kernel
	}
	names := make([]string, 0, len(sets))
	for _, s := range sets {
		names = append(names, s.SetName)
	}
	n := 0
	for _, name := range IPSetsOfKubeRouter(names) {
		if netlink.IpsetDestroy(name) == nil {
			n++
		}
	}
	return n
}

// IPSetsOfKubeRouter picks kube-router's sets out of the names of a
// network namespace's sets.
func IPSetsOfKubeRouter(names []string) []string {
	var out []string
	for _, name := range names {
		bare := strings.TrimPrefix(name, "inet6:")
		for _, p := range ipsetPrefixes {
			if strings.HasPrefix(bare, p) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}
