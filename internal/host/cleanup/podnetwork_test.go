package cleanup

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// On a real kernel, in a network namespace of the test's own: PodNetwork
// removes the pod network's links, the routes into the pod network and
// kube-router's ipsets (IPv4 and IPv6), through netlink, and leaves
// another program's link, route and set.
func TestPodNetworkRemoved(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root and network namespaces (not with -short)")
	}
	name := fmt.Sprintf("kbcl-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	defer netns.Set(orig)

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []netlink.Link{
		&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "cni0"}},
		&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "flannel.1"}},
		&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "vpn0"}, PeerName: "vpn1"},
	} {
		must(netlink.LinkAdd(l))
		must(netlink.LinkSetUp(l))
	}
	vpn, err := netlink.LinkByName("vpn0")
	must(err)
	must(netlink.AddrAdd(vpn, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(192, 168, 9, 1), Mask: net.CIDRMask(24, 32)}}))
	route := func(cidr string) *netlink.Route {
		_, dst, _ := net.ParseCIDR(cidr)
		return &netlink.Route{LinkIndex: vpn.Attrs().Index, Dst: dst}
	}
	must(netlink.RouteAdd(route("10.244.1.0/24"))) // host-gw's, to another node's pods
	must(netlink.RouteAdd(route("172.16.0.0/16"))) // the VPN's
	sets := map[string]uint8{"KUBE-SRC-ABCDEF": unix.NFPROTO_IPV4, "inet6:KUBE-DST-ABCDEF": unix.NFPROTO_IPV6, "mine": unix.NFPROTO_IPV4}
	for s, family := range sets {
		if err := netlink.IpsetCreate(s, "hash:ip", netlink.IpsetCreateOptions{Family: family}); err != nil {
			t.Skipf("no ipsets on this kernel: %v", err)
		}
	}

	var out bytes.Buffer
	PodNetwork([]string{"10.244.0.0/16"}, &out)
	t.Logf("%s", out.String())

	links, err := netlink.LinkList()
	must(err)
	var left []string
	for _, l := range links {
		left = append(left, l.Attrs().Name)
	}
	if slices.Contains(left, "cni0") || slices.Contains(left, "flannel.1") || !slices.Contains(left, "vpn0") || !slices.Contains(left, "vpn1") {
		t.Errorf("links after: %v", left)
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	must(err)
	var dsts []string
	for _, r := range routes {
		if r.Dst != nil {
			dsts = append(dsts, r.Dst.String())
		}
	}
	if slices.Contains(dsts, "10.244.1.0/24") || !slices.Contains(dsts, "172.16.0.0/16") {
		t.Errorf("routes after: %v", dsts)
	}
	all, err := netlink.IpsetListAll()
	must(err)
	var names []string
	for _, s := range all {
		names = append(names, s.SetName)
	}
	if !slices.Equal(names, []string{"mine"}) {
		t.Errorf("ipsets after: %v", names)
	}
	for _, want := range []string{"Deleted network link cni0", "Deleted network link flannel.1", "Removed 1 routes", "Removed 2 ipsets"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the output", want)
		}
	}
}
