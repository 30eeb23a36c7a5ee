package nethost

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRouter: two hosts on two subnets at MTU 1400 reach each other
// through a router, and nothing else; Close leaves nothing.
func TestRouter(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces; runs without -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	linksBefore := rootLinks(t)
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		for _, n := range []string{"kbnt-neta", "kbnt-netb", "kbnt-rt", "kbnt-bad", "kbnt-a", "kbnt-b"} {
			if _, err := os.Stat("/run/netns/" + n); err == nil {
				t.Errorf("network namespace %s is left", n)
			}
		}
		// (Other tests on the machine may remove links meanwhile: only new
		// ones count.)
		for l := range rootLinks(t) {
			if !linksBefore[l] {
				t.Errorf("link %s is left in the machine's namespace", l)
			}
		}
	}()
	netA, err := NewNetworkMTU("kbnt-neta", 1400)
	if err != nil {
		t.Fatal(err)
	}
	closers = append(closers, netA.Close)
	netB, err := NewNetworkMTU("kbnt-netb", 1400)
	if err != nil {
		t.Fatal(err)
	}
	closers = append(closers, netB.Close)
	if _, err := NewRouter("kbnt-bad", Leg{netA, "10.232.0.1/24"}, Leg{netB, "not-an-address"}); err == nil {
		t.Errorf("a router with a leg at no address was made")
	}
	r, err := NewRouter("kbnt-rt", Leg{netA, "10.232.0.1/24"}, Leg{netB, "10.233.0.1/24"})
	if err != nil {
		t.Fatal(err)
	}
	closers = append(closers, r.Close)
	a, err := NewWith("kbnt-a", "10.232.0.2", t.TempDir(), "", Options{Network: netA, Gateway: "10.232.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	closers = append(closers, a.Close)
	b, err := NewWith("kbnt-b", "10.233.0.2", t.TempDir(), "", Options{Network: netB, Gateway: "10.233.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	closers = append(closers, b.Close)

	for _, h := range []*Host{a, b} {
		out, err := Run(h.Command("cat", "/sys/class/net/eth0/mtu"))
		if err != nil || strings.TrimSpace(out) != "1400" {
			t.Errorf("%s: eth0's MTU: %q %v, want 1400", h.Name, out, err)
		}
	}
	if out, err := Run(exec.Command("ip", "-n", netA.Name, "-o", "link", "show", bridgeName)); err != nil || !strings.Contains(out, "mtu 1400") {
		t.Errorf("the bridge: %v %s", err, out)
	}

	var l net.Listener
	if err := b.InNetns(func() (err error) {
		l, err = net.Listen("tcp", "10.233.0.2:7777")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A megabyte from b to a: full-size segments at the links' MTU pass
	// the router.
	payload := strings.Repeat("x", 1<<20)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte(payload))
		c.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := a.DialContext(ctx, "tcp", "10.233.0.2:7777")
	if err != nil {
		t.Fatalf("from %s to %s through the router: %v", a.IP, b.IP, err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var got strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			break
		}
	}
	c.Close()
	if got.Len() != len(payload) {
		t.Errorf("received %d bytes of %d", got.Len(), len(payload))
	}
	// The router knows no way off the machine.
	if c, err := a.DialContext(ctx, "tcp", "10.234.0.2:7777"); err == nil {
		c.Close()
		t.Errorf("a host reached an address on no network of the test")
	}
}

// rootLinks lists the names of the machine's own links.
func rootLinks(t *testing.T) map[string]bool {
	out, err := Run(exec.Command("ip", "-o", "link", "show"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			names[strings.TrimSuffix(f[1], ":")] = true
		}
	}
	return names
}

// TestStaleNamespace: a namespace of a test's name left by a run killed
// before its cleanup is replaced; one a running test holds, or one with a
// process still in it, is refused and left as it is.
func TestStaleNamespace(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces; runs without -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	const name = "kbnt-stale"
	defer exec.Command("ip", "netns", "del", name).Run()
	add := func() {
		t.Helper()
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add: %v: %s", err, out)
		}
	}
	add()
	n, err := NewNetwork(name)
	if err != nil {
		t.Fatalf("a namespace left by a killed run: %v", err)
	}
	bridgeThere := func(what string) {
		t.Helper()
		if out, err := exec.Command("ip", "-n", name, "link", "show", bridgeName).CombinedOutput(); err != nil {
			t.Fatalf("%s: the network's bridge: %v: %s", what, err, out)
		}
	}
	bridgeThere("replaced")
	if _, err := NewRouter(name); err == nil || !strings.Contains(err.Error(), "another run") {
		t.Fatalf("a namespace a running test holds: got %v, want it refused", err)
	}
	bridgeThere("after a refusal")
	n.Close()

	add()
	sleep := exec.Command("ip", "netns", "exec", name, "sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	// Until the sleep runs in the namespace.
	for i := 0; ; i++ {
		out, _ := exec.Command("ip", "netns", "pids", name).Output()
		if len(strings.Fields(string(out))) > 0 {
			break
		}
		if i == 100 {
			t.Fatal("the sleep never showed in the namespace")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := NewRouter(name); err == nil || !strings.Contains(err.Error(), "still has processes") {
		t.Fatalf("a namespace with a process left in it: got %v, want it refused", err)
	}
	if out, _ := exec.Command("ip", "netns", "pids", name).Output(); len(strings.Fields(string(out))) == 0 {
		t.Fatal("the namespace with a process was replaced")
	}
}
