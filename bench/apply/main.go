// Command apply measures `kubeboot apply`: the time from `apply -f` to
// every node Ready, for 1 control plane + 2 workers and for 3 control
// planes + 2 workers, next to what an operator does by hand on the same
// hosts: copy the binary to each host with scp from the operator's host,
// one after another, then init and the joins one after another (run in
// the host, as from a terminal on it) until every node is Ready. It
// prints apply's wall time and the machine's CPU as ratios of the hand
// run's (every host here shares the same two cores, so the CPU is the
// fair figure and the wall time is said beside it). Every host is a
// network-namespace host running Debian's sshd on its own address;
// apply runs from an operator's host on the same bridge and copies the
// binary to each host (reset -f removes it again).
//
//	go run ./bench/apply [-runs N]   (as root, after `make build`; needs /usr/sbin/sshd)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/test/nethost"
)

const (
	token   = "abcdef.0123456789abcdef"
	certKey = "9d6a1f4c2b7e8a0d3c5f6e1b2a4d7c8e9f0a1b2c3d4e5f60718293a4b5c6d7e8"
	podCIDR = "10.244.0.0/16"
)

type host struct {
	*nethost.Host
	name, role string
	sshd       *nethost.SSHD
}

type bench struct {
	bin, dir string
	network  *nethost.Network
	op       *nethost.Host
	hosts    []*host // cp1, cp2, cp3, w1, w2
	keyFile  string
	known    string
}

func main() {
	runs := flag.Int("runs", 1, "how many times each of the four runs is made (medians are printed)")
	flag.Parse()
	if err := run(max(*runs, 1)); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(runs int) error {
	bin, err := benchutil.Binary()
	if err != nil {
		return err
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		return fmt.Errorf("Debian's openssh-server is needed (hack/install-deps.sh installs it): %v", err)
	}
	if err := nethost.BecomeSubreaper(); err != nil {
		return err
	}
	if _, err := os.Stat(nethost.PrivsepDir); os.IsNotExist(err) {
		if err := os.Mkdir(nethost.PrivsepDir, 0o755); err != nil {
			return err
		}
		defer os.Remove(nethost.PrivsepDir)
	}
	dir, err := os.MkdirTemp("", "kubeboot-bench-apply-")
	if err != nil {
		return err
	}
	b := &bench{bin: bin, dir: dir}
	defer b.close()
	if b.network, err = nethost.NewNetwork("kbbap-net"); err != nil {
		return err
	}
	if b.op, err = nethost.NewWith("kbbap-op", "10.224.0.9", filepath.Join(dir, "op"), bin, nethost.Options{Network: b.network}); err != nil {
		return err
	}
	keyFile, authorized, _, err := nethost.OperatorKey(dir)
	if err != nil {
		return err
	}
	b.keyFile = keyFile
	keys := map[string]ssh.PublicKey{}
	for i, n := range []struct{ name, role string }{{"cp1", "control-plane"}, {"cp2", "control-plane"}, {"cp3", "control-plane"}, {"w1", "worker"}, {"w2", "worker"}} {
		nh, err := nethost.NewWith("kbbap-"+n.name, fmt.Sprintf("10.224.0.%d", i+2), filepath.Join(dir, n.name), bin, nethost.Options{Network: b.network})
		if err != nil {
			return err
		}
		h := &host{Host: nh, name: n.name, role: n.role}
		b.hosts = append(b.hosts, h)
		if h.sshd, err = nh.StartSSHD(dir, authorized); err != nil {
			return err
		}
		keys[nh.IP] = h.sshd.Key
	}
	b.known = filepath.Join(dir, "known_hosts")
	if err := nethost.WriteKnownHosts(b.known, keys); err != nil {
		return err
	}

	for _, shape := range []struct {
		name  string
		hosts []*host
	}{
		{"1 control plane + 2 workers", []*host{b.hosts[0], b.hosts[3], b.hosts[4]}},
		{"3 control planes + 2 workers", b.hosts},
	} {
		var hand, apply, handCPU, applyCPU []time.Duration
		for i := range runs {
			d, cpu, err := b.byHand(shape.hosts)
			if err != nil {
				return fmt.Errorf("%s by hand: %w", shape.name, err)
			}
			hand, handCPU = append(hand, d), append(handCPU, cpu)
			d, cpu, err = b.apply(shape.hosts, fmt.Sprintf("%d-%d", len(shape.hosts), i))
			if err != nil {
				return fmt.Errorf("%s with apply: %w", shape.name, err)
			}
			apply, applyCPU = append(apply, d), append(applyCPU, cpu)
		}
		fmt.Printf("%s (medians of %d):\n", shape.name, runs)
		for _, f := range []struct {
			what          string
			apply, byHand []time.Duration
		}{{"wall time", apply, hand}, {"machine CPU", applyCPU, handCPU}} {
			a, h := benchutil.Median(f.apply), benchutil.Median(f.byHand)
			ratio := a.Seconds() / h.Seconds()
			verdict := "met"
			if ratio > goal {
				verdict = "NOT met"
			}
			fmt.Printf("  %s: apply %s, by hand %s (runs: apply %s, by hand %s): %.2fx (goal <= %.1fx: %s)\n", f.what, a.Round(100*time.Millisecond), h.Round(100*time.Millisecond),
				rounded(f.apply), rounded(f.byHand), ratio, goal, verdict)
		}
		fmt.Println()
	}
	return nil
}

// goal is apply's ratio to the hand run that issue 46 asks for, of the
// wall time and of the machine's CPU alike.
const goal = 1.1

func (b *bench) close() {
	for i := len(b.hosts) - 1; i >= 0; i-- {
		h := b.hosts[i]
		if _, err := os.Stat(filepath.Join(h.Root, "etc/kubernetes/kubeboot")); err == nil {
			benchutil.KeepLogs(h.Host, h.name)
			nethost.Run(h.Kubeboot("reset", "--force")) //nolint:errcheck
		}
		if h.sshd != nil {
			h.sshd.Stop()
		}
		h.Close()
	}
	if b.op != nil {
		b.op.Close()
	}
	if b.network != nil {
		b.network.Close()
	}
	os.RemoveAll(b.dir)
}

// kb runs the host's own copy of kubeboot (as apply copies it; not the
// one file every host here could share, whose pages would be shared and
// warm) when it has one.
func kb(h *host, args ...string) (string, error) {
	cmd := h.Kubeboot(args...)
	if own := filepath.Join(h.Root, "usr/local/bin/kubeboot"); fileExists(own) {
		cmd = h.Command(own, append([]string{"--root", h.Root}, args...)...)
	}
	out, err := nethost.Run(cmd)
	if err != nil {
		return out, fmt.Errorf("%s: kubeboot %s: %v\n%s", h.name, strings.Join(args, " "), err, out)
	}
	return out, nil
}

// byHand does what an operator does without apply: from the operator's
// host, scp the binary to each host, one after another; then init on the
// first host and the joins of the others one after another, as with a
// terminal on each host. It returns the time from the first copy's start
// to every node Ready and the machine's CPU over it, and resets the
// hosts afterwards (not timed).
func (b *bench) byHand(hosts []*host) (time.Duration, time.Duration, error) {
	// The hosts have a /usr/local/bin, as any host has.
	for _, h := range hosts {
		if err := os.MkdirAll(filepath.Join(h.Root, "usr/local/bin"), 0o755); err != nil {
			return 0, 0, err
		}
	}
	defer func() {
		for _, h := range hosts {
			os.Remove(filepath.Join(h.Root, "usr/local/bin/kubeboot"))
		}
	}()
	cp1, multi := hosts[0], false
	for _, h := range hosts[1:] {
		multi = multi || h.role == "control-plane"
	}
	start, busy := time.Now(), benchutil.BusyCPU()
	for _, h := range hosts {
		scp := b.op.Command("scp", "-q", "-o", "BatchMode=yes", "-o", "UserKnownHostsFile="+b.known, "-i", b.keyFile,
			b.bin, "root@"+h.IP+":"+filepath.Join(h.Root, "usr/local/bin/kubeboot"))
		if out, err := nethost.Run(scp); err != nil {
			return 0, 0, fmt.Errorf("scp to %s: %v\n%s", h.name, err, out)
		}
	}
	steps := []string{fmt.Sprintf("scp to %d hosts %s", len(hosts), time.Since(start).Round(100*time.Millisecond))}
	t := time.Now()
	args := []string{"init", "--node-name", cp1.name, "--apiserver-advertise-address", cp1.IP, "--token", token, "--pod-network-cidr", podCIDR}
	if multi {
		args = append(args, "--upload-certs", "--certificate-key", certKey)
	}
	if _, err := kb(cp1, args...); err != nil {
		return 0, 0, err
	}
	steps = append(steps, fmt.Sprintf("init %s", time.Since(t).Round(100*time.Millisecond)))
	ca, err := certutil.CertsFromFile(filepath.Join(cp1.Root, "etc/kubernetes/pki/ca.crt"))
	if err != nil {
		return 0, 0, err
	}
	hash := pubkeypin.Hash(ca[0])
	for _, h := range hosts[1:] {
		t := time.Now()
		args := []string{"join", cp1.IP + ":6443", "--token", token, "--discovery-token-ca-cert-hash", hash, "--node-name", h.name}
		if h.role == "control-plane" {
			args = append(args, "--control-plane", "--apiserver-advertise-address", h.IP, "--certificate-key", certKey)
		}
		if _, err := kb(h, args...); err != nil {
			return 0, 0, err
		}
		steps = append(steps, fmt.Sprintf("join %s %s", h.name, time.Since(t).Round(100*time.Millisecond)))
	}
	t = time.Now()
	if err := b.waitReady(cp1, len(hosts)); err != nil {
		return 0, 0, err
	}
	took, cpu := time.Since(start), benchutil.BusyCPU()-busy
	fmt.Printf("  by hand, %d hosts: every node Ready %s after the first copy's start (%s, then Ready %s later); %s\n", len(hosts), took.Round(100*time.Millisecond), strings.Join(steps, ", "), time.Since(t).Round(100*time.Millisecond), cpuUse(cpu, took))
	// Reset as an operator would: workers first, the first control plane last.
	for i := len(hosts) - 1; i >= 0; i-- {
		if _, err := kb(hosts[i], "reset", "--force"); err != nil {
			return 0, 0, err
		}
	}
	return took, cpu, nil
}

var readyCount = regexp.MustCompile(`=True\b`)

// waitReady polls the cluster through cp1 every second (as apply does)
// until n nodes are Ready.
func (b *bench) waitReady(cp1 *host, n int) error {
	admin := filepath.Join(cp1.Root, "etc/kubernetes/admin.conf")
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		out, err := nethost.Run(cp1.Command(filepath.Join(cp1.Root, "usr/local/bin/kubeboot"), "kubectl", "--kubeconfig", admin, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}`))
		if err == nil && len(readyCount.FindAllString(out, -1)) == n {
			return nil
		}
	}
	return fmt.Errorf("not %d nodes Ready after 5 minutes", n)
}

// apply writes the cluster file of hosts, runs apply from the operator's
// host and returns its wall time (it returns once every node is Ready)
// and the machine's CPU over it; then reset -f (not timed).
func (b *bench) apply(hosts []*host, name string) (time.Duration, time.Duration, error) {
	var lines strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&lines, "- {address: %s, role: %s, nodeName: %s, root: %s, ssh: {keyPath: %s, knownHosts: %s}}\n", h.IP, h.role, h.name, h.Root, b.keyFile, b.known)
	}
	file := filepath.Join(b.dir, "cluster-"+name+".yaml")
	content := "apiVersion: kubeboot.io/v1alpha1\nkind: Cluster\nhosts:\n" + lines.String() +
		"kubeadm: |\n  apiVersion: kubeadm.k8s.io/v1beta4\n  kind: ClusterConfiguration\n  networking: {podSubnet: " + podCIDR + "}\n"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		return 0, 0, err
	}
	start, busy := time.Now(), benchutil.BusyCPU()
	out, err := nethost.Run(b.op.Command(b.bin, "apply", "-f", file))
	took, cpu := time.Since(start), benchutil.BusyCPU()-busy
	if err != nil {
		return 0, 0, fmt.Errorf("%v\n%s", err, out)
	}
	var steps []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "copied kubeboot") || strings.Contains(l, "init:") || strings.Contains(l, "joined as") || strings.Contains(l, "hosts changed") {
			steps = append(steps, strings.TrimSpace(l))
		}
	}
	fmt.Printf("  apply, %d hosts: every node Ready %s after its start; %s\n    %s\n", len(hosts), took.Round(100*time.Millisecond), cpuUse(cpu, took), strings.Join(steps, "\n    "))
	t := time.Now()
	if out, err := nethost.Run(b.op.Command(b.bin, "reset", "-f", file)); err != nil {
		return 0, 0, fmt.Errorf("reset -f: %v\n%s", err, out)
	}
	fmt.Printf("  reset -f, %d hosts: %s\n", len(hosts), time.Since(t).Round(100*time.Millisecond))
	return took, cpu, nil
}

// cpuUse says how much CPU the whole machine used in took, and how much
// of its cores that is: where every host shares the same cores, work run
// in parallel (apply's) can only win the time the serial run (by hand)
// leaves the cores idle.
func cpuUse(used, took time.Duration) string {
	return fmt.Sprintf("CPU %s, %.0f%% of the machine's %d cores", used.Round(100*time.Millisecond), 100*used.Seconds()/(took.Seconds()*float64(runtime.NumCPU())), runtime.NumCPU())
}

func rounded(ds []time.Duration) string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Round(100*time.Millisecond).String())
	}
	return strings.Join(out, " ")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
