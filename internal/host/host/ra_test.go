package host

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
)

// On a real kernel: a host whose IPv6 default route came from a router's
// advertisement keeps it when Prepare turns IPv6 forwarding on (the kernel
// deletes it at once at accept_ra 1), and reset's Undo sets both back.
// The router and the host are two network namespaces on a veth.
func TestRouterAdvertisedDefaultRouteKept(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root and network namespaces (not with -short)")
	}
	router, hostNS := fmt.Sprintf("kbra-r%d", os.Getpid()), fmt.Sprintf("kbra-h%d", os.Getpid())
	ip := func(args ...string) string {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	for _, ns := range []string{router, hostNS} {
		ip("netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	ip("-n", hostNS, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", router)
	for _, ns := range []string{router, hostNS} {
		for s, v := range map[string]string{"net.ipv6.conf.eth0.accept_dad": "0", "net.ipv6.conf.eth0.accept_ra": "1", "net.ipv6.conf.all.forwarding": "0"} {
			if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", s+"="+v).CombinedOutput(); err != nil {
				t.Fatalf("%s: sysctl %s=%s: %v: %s", ns, s, v, err, out)
			}
		}
		ip("-n", ns, "link", "set", "eth0", "up")
	}
	r, err := netns.GetFromName(router)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := netns.GetFromName(hostNS)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	// The router advertises itself as a default router (lifetime 1800 s)
	// until the host has the route.
	defaultRoute := func() string { return strings.TrimSpace(ip("-n", hostNS, "-6", "route", "show", "default")) }
	inNS(t, r, func() {
		c, err := icmp.ListenPacket("ip6:ipv6-icmp", "::")
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		p := c.IPv6PacketConn()
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			t.Error(err)
			return
		}
		p.SetMulticastInterface(ifi)
		p.SetMulticastHopLimit(255)
		ra, _ := (&icmp.Message{Type: ipv6.ICMPTypeRouterAdvertisement, Body: &icmp.RawBody{
			// Hop limit 64, no flags, router lifetime 1800 s, reachable
			// time and retransmit timer unspecified.
			Data: []byte{64, 0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0},
		}}).Marshal(nil)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if _, err := p.WriteTo(ra, nil, &net.IPAddr{IP: net.ParseIP("ff02::1"), Zone: "eth0"}); err != nil {
				t.Logf("sending the advertisement: %v", err)
			}
			if strings.Contains(defaultRoute(), "proto ra") {
				return
			}
		}
		t.Errorf("the host took no default route from the advertisement: %q", defaultRoute())
	})
	if t.Failed() {
		return
	}
	t.Logf("the host's default route: %s", defaultRoute())

	fs := ownRoot(t, t.TempDir())
	var lines []string
	logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	inNS(t, h, func() {
		if got := RAInterfaces(); len(got) != 1 || got[0] != "eth0" {
			t.Errorf("RAInterfaces() = %q, want [eth0]", got)
		}
		if err := Prepare(fs, Needs{Sysctls: []string{ipv6Forwarding}}, logf); err != nil {
			t.Error(err)
		}
		for s, want := range map[string]string{ipv6Forwarding: "1", "net.ipv6.conf.eth0.accept_ra": "2"} {
			if got, _ := readSysctl(s); got != want {
				t.Errorf("%s = %s, want %s", s, got, want)
			}
		}
	})
	t.Logf("Prepare: %s", strings.Join(lines, "; "))
	if got := defaultRoute(); !strings.Contains(got, "proto ra") {
		t.Errorf("the default route went with forwarding on: %q", got)
	}
	inNS(t, h, func() {
		Undo(fs, logf)
		for s, want := range map[string]string{ipv6Forwarding: "0", "net.ipv6.conf.eth0.accept_ra": "1"} {
			if got, _ := readSysctl(s); got != want {
				t.Errorf("after Undo %s = %s, want %s", s, got, want)
			}
		}
	})
}

// inNS runs f on a thread of its own in a network namespace; the thread
// ends with f (it is never handed back to other goroutines).
func inNS(t *testing.T, ns netns.NsHandle, f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if err := netns.Set(ns); err != nil {
			t.Error(err)
			return
		}
		f()
	}()
	<-done
}
