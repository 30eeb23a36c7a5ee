package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/kubeboot/kubeboot/test/nethost"
)

// TestApplyThroughOneBastion: `apply --dry-run` reaches twelve hosts that
// only a bastion reaches, through one SSH connection to the bastion. Each
// host runs Debian's sshd and drops SSH from anywhere but the bastion;
// the bastion's sshd has its default MaxStartups (10:30:100), which drops
// connections past ~10 at once: twelve of its own would lose some.
func TestApplyThroughOneBastion(t *testing.T) {
	requireSSHD(t)
	dir := t.TempDir()
	network := newNetwork(t, "kbb-net")
	op := newHostWith(t, "kbb-op", "10.225.0.2", nethost.Options{Network: network})
	keyFile, authorized, _, err := nethost.OperatorKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	bastion := startSSHD(t, newHostWith(t, "kbb-bastion", "10.225.0.3", nethost.Options{Network: network}), dir, authorized)
	keys := map[string]ssh.PublicKey{bastion.IP: bastion.key}
	var hosts []*sshHost
	for i := range 12 {
		h := startSSHD(t, newHostWith(t, fmt.Sprintf("kbb-h%d", i+1), fmt.Sprintf("10.225.0.%d", 10+i), nethost.Options{Network: network}), dir, authorized)
		// SSH from the bastion only.
		if out, err := nethost.Run(h.Command("iptables", "-A", "INPUT", "-p", "tcp", "--dport", "22", "!", "-s", bastion.IP, "-j", "DROP")); err != nil {
			t.Fatalf("%s: %v\n%s", h.Name, err, out)
		}
		keys[h.IP] = h.key
		hosts = append(hosts, h)
	}
	known := filepath.Join(dir, "known_hosts")
	if err := nethost.WriteKnownHosts(known, keys); err != nil {
		t.Fatal(err)
	}
	file := func(name, bastionLine string, hosts []*sshHost) string {
		var b strings.Builder
		b.WriteString("apiVersion: kubeboot.io/v1alpha1\nkind: Cluster\nhosts:\n")
		for i, h := range hosts {
			role := "worker"
			if i == 0 {
				role = "control-plane"
			}
			fmt.Fprintf(&b, "- {address: %s, role: %s, nodeName: h%d, root: %s, ssh: {keyPath: %s, knownHosts: %s%s}}\n", h.IP, role, i+1, h.Root, keyFile, known, bastionLine)
		}
		f := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	apply := func(f string) (string, error, time.Duration) {
		start := time.Now()
		out, err := nethost.Run(op.Command(binary, "apply", "-f", f, "--dry-run"))
		return out, err, time.Since(start)
	}

	// Without the bastion, a host is not reached.
	out, err, _ := apply(file("direct", "", hosts[:1]))
	if err == nil || !strings.Contains(out, "nothing was changed on any host") {
		t.Fatalf("a host reached without the bastion: %v\n%s", err, out)
	}
	out, err, took := apply(file("cluster", ", bastion: {address: "+bastion.IP+", keyPath: "+keyFile+"}", hosts))
	if err != nil {
		t.Fatalf("apply --dry-run through the bastion: %v\n%s", err, out)
	}
	t.Logf("apply --dry-run of %d hosts through one bastion: %s\n%s", len(hosts), took.Round(time.Millisecond), out)
	if n := strings.Count(out, "] connected to "); n != len(hosts) || !strings.Contains(out, "dry run: nothing was changed") {
		t.Errorf("%d of %d hosts reached", n, len(hosts))
	}
	// One connection to the bastion, every host forwarded through it.
	if n := strings.Count(bastion.sshd.Log(), "Accepted publickey"); n != 1 {
		t.Errorf("the bastion accepted %d connections, want 1", n)
	}
	for _, h := range hosts {
		if files := listAll(h.Root); len(files) != 0 {
			t.Errorf("%s: a dry run left %v", h.Name, files[:min(len(files), 10)])
		}
	}
}
