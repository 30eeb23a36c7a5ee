package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// sshHost is a test host running Debian's sshd on its own address.
type sshHost struct {
	*nethost.Host
	key  ssh.PublicKey // its host key
	sshd *nethost.SSHD
}

// startSSHD runs sshd in h, letting root in with the keys in authorized,
// until the test ends.
func startSSHD(t *testing.T, h *nethost.Host, dir, authorized string) *sshHost {
	t.Helper()
	s, err := h.StartSSHD(dir, authorized)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("sshd of %s:\n%s", h.Name, lastLines(s.Log(), 20))
		}
	})
	return &sshHost{Host: h, key: s.Key, sshd: s}
}

// requireSSHD is requireE2E for the tests whose hosts run Debian's sshd;
// it makes sshd's privilege separation directory if it is missing.
func requireSSHD(t *testing.T) {
	t.Helper()
	requireE2E(t)
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Fatal("Debian's openssh-server is needed (hack/install-deps.sh installs it)")
	}
	if _, err := os.Stat(nethost.PrivsepDir); os.IsNotExist(err) {
		if err := os.Mkdir(nethost.PrivsepDir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(nethost.PrivsepDir) })
	}
}

// TestApply: a whole cluster from one file, over SSH, from an operator's
// host: refusals that change nothing, 1 control plane + 1 worker, apply
// again (nothing changes), a worker added, two control planes added, a
// Service from every node, a worker pruned (its own Node's annotation,
// rewritten by the node to point at a decoy, does not redirect prune),
// and reset -f leaving nothing on any host. Every host is a
// network-namespace host running Debian's sshd.
func TestApply(t *testing.T) {
	requireSSHD(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already; this test needs it free of other kubelets", n)
	}
	dir := t.TempDir()
	network := newNetwork(t, "kba-net")
	op := newHostWith(t, "kba-op", "10.223.0.9", nethost.Options{Network: network})

	// The operator's key, and the hosts that let it in.
	keyFile, authorized, opKey, err := nethost.OperatorKey(dir)
	if err != nil {
		t.Fatal(err)
	}

	hosts := map[string]*sshHost{}
	for _, n := range []struct{ name, ip string }{{"cp1", "10.223.0.2"}, {"w1", "10.223.0.3"}, {"w2", "10.223.0.4"}, {"cp2", "10.223.0.5"}, {"cp3", "10.223.0.6"}} {
		hosts[n.name] = startSSHD(t, newHostWith(t, "kba-"+n.name, n.ip, nethost.Options{Network: network}), dir, authorized)
	}
	knownHosts := func(wrong ...string) string {
		keys := map[string]ssh.PublicKey{}
		for name, h := range hosts {
			keys[h.IP] = h.key
			if len(wrong) > 0 && wrong[0] == name {
				keys[h.IP] = opKey // not its key
			}
		}
		f := filepath.Join(dir, fmt.Sprintf("known_hosts%d", len(wrong)))
		if err := nethost.WriteKnownHosts(f, keys); err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := knownHosts()
	line := func(name, role, known string) string {
		h := hosts[name]
		return fmt.Sprintf("- {address: %s, role: %s, nodeName: %s, root: %s, ssh: {keyPath: %s, knownHosts: %s}}\n", h.IP, role, name, h.Root, keyFile, known)
	}
	file := func(name string, lines ...string) string {
		f := filepath.Join(dir, name+".yaml")
		content := "apiVersion: kubeboot.io/v1alpha1\nkind: Cluster\nhosts:\n" + strings.Join(lines, "") +
			"kubeadm: |\n  apiVersion: kubeadm.k8s.io/v1beta4\n  kind: ClusterConfiguration\n  networking: {podSubnet: 10.244.0.0/16}\n"
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	apply := func(args ...string) (string, error, time.Duration) {
		start := time.Now()
		out, err := nethost.Run(op.Command(binary, append([]string{"apply"}, args...)...))
		return out, err, time.Since(start)
	}
	nodeState := func(h *sshHost) []string {
		var found []string
		for _, p := range []string{"usr/local/bin/kubeboot", "etc/kubernetes", "var/lib/kubeboot"} {
			if _, err := os.Stat(filepath.Join(h.Root, p)); err == nil {
				found = append(found, p)
			}
		}
		return found
	}

	t.Run("refusals change nothing", func(t *testing.T) {
		// An unreachable host: nothing is copied anywhere.
		f := file("unreachable", line("cp1", "control-plane", good), "- {address: 10.223.0.50, role: worker, ssh: {keyPath: "+keyFile+", knownHosts: "+good+"}}\n")
		out, err, took := apply("-f", f)
		if err == nil || !strings.Contains(out, "10.223.0.50") || !strings.Contains(out, "nothing was changed on any host") {
			t.Errorf("an unreachable host: %v\n%s", err, out)
		}
		t.Logf("refused an unreachable host in %s: %s", took.Round(time.Millisecond), lastLine(out))
		// A changed host key.
		f = file("changed", line("cp1", "control-plane", knownHosts("w1")), line("w1", "worker", knownHosts("w1")))
		out, err, _ = apply("-f", f)
		if err == nil || !strings.Contains(out, "has CHANGED") || !strings.Contains(out, "nothing was changed on any host") {
			t.Errorf("a changed host key: %v\n%s", err, out)
		}
		for _, n := range []string{"cp1", "w1"} {
			if s := nodeState(hosts[n]); len(s) != 0 {
				t.Errorf("%s after a refusal: %v", n, s)
			}
		}
		// A host that fails preflight: something listens on the kubelet's
		// port of w1. No node is set up anywhere.
		l := listenIn(t, hosts["w1"].Host, 10250)
		f = file("preflight", line("cp1", "control-plane", good), line("w1", "worker", good))
		out, err, took = apply("-f", f)
		l.Close()
		if err == nil || !strings.Contains(out, "w1 (10.223.0.3): preflight") || !strings.Contains(out, "Port-10250") || !strings.Contains(out, "no node was changed") {
			t.Errorf("a host failing preflight: %v\n%s", err, out)
		}
		t.Logf("refused a host failing preflight in %s (the binary copied to both first)", took.Round(time.Millisecond))
		for _, n := range []string{"cp1", "w1"} {
			if s := nodeState(hosts[n]); len(s) != 1 || s[0] != "usr/local/bin/kubeboot" {
				t.Errorf("%s after a failed preflight: %v, want only the binary", n, s)
			}
		}
	})

	one := file("cluster", line("cp1", "control-plane", good), line("w1", "worker", good))
	kubeconfig := filepath.Join(dir, "cluster.kubeconfig")
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := nethost.Run(op.Command(binary, append([]string{"kubectl", "--kubeconfig", kubeconfig}, args...)...))
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	readyNodes := func(t *testing.T) string {
		return strings.TrimSpace(kubectl(t, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}`))
	}

	t.Run("1 control plane and 1 worker", func(t *testing.T) {
		out, err, _ := apply("-f", one, "--dry-run")
		if err != nil || !strings.Contains(out, "[cp1] plan: init, the first control plane") || !strings.Contains(out, "[w1] plan: join as a worker") || !strings.Contains(out, "dry run: nothing was changed") {
			t.Fatalf("dry run: %v\n%s", err, out)
		}
		out, err, took := apply("-f", one)
		if err != nil {
			t.Fatalf("apply: %v\n%s", err, out)
		}
		t.Logf("apply, 1 control plane + 1 worker: every node Ready %s after the start\n%s", took.Round(time.Millisecond), out)
		for _, secret := range []string{"--token", "certificate key"} {
			if strings.Contains(out, secret) {
				t.Errorf("apply printed %q", secret)
			}
		}
		if got := readyNodes(t); got != "cp1=True w1=True" {
			t.Errorf("nodes: %s", got)
		}
		if st, err := os.Stat(kubeconfig); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("the admin kubeconfig: %v %v", st, err)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("apply again changes nothing", func(t *testing.T) {
		type snapshot struct {
			pids  map[string]int
			files map[string]time.Time
		}
		take := func() snapshot {
			s := snapshot{pids: map[string]int{}, files: map[string]time.Time{}}
			for _, n := range []string{"cp1", "w1"} {
				h := hosts[n]
				st := readStatus(t, h.Host)
				s.pids[n+"/daemon"] = st.PID
				for _, c := range st.Components {
					s.pids[n+"/"+c.Name] = c.PID
				}
				for _, d := range []string{"etc/kubernetes", "usr/local/bin", "var/lib/kubelet/pki"} {
					filepath.Walk(filepath.Join(h.Root, d), func(p string, info os.FileInfo, err error) error {
						if err == nil && !info.IsDir() {
							s.files[p] = info.ModTime()
						}
						return nil
					})
				}
			}
			return s
		}
		before := take()
		out, err, took := apply("-f", one)
		if err != nil {
			t.Fatalf("apply again: %v\n%s", err, out)
		}
		t.Logf("apply again: %s\n%s", took.Round(time.Millisecond), out)
		if !strings.Contains(out, "[cp1] in the cluster (Node cp1): nothing to do") || !strings.Contains(out, "[w1] in the cluster (Node w1): nothing to do") || strings.Contains(out, "copied") {
			t.Errorf("apply again did something:\n%s", out)
		}
		after := take()
		for k, pid := range before.pids {
			if after.pids[k] != pid {
				t.Errorf("%s restarted: pid %d, then %d", k, pid, after.pids[k])
			}
		}
		for f, mt := range before.files {
			if !after.files[f].Equal(mt) {
				t.Errorf("%s rewritten", f)
			}
		}
		t.Logf("%d processes and %d files of the two hosts unchanged", len(before.pids), len(before.files))

		// The plan as data, for a program: the result alone on standard
		// output, the progress lines on standard error.
		stdout, stderr, err := nethost.Output(op.Command(binary, "apply", "-f", one, "--dry-run", "-o", "json"))
		var res struct {
			Plan struct {
				Hosts []struct{ Host, Root, Node, Action string }
			}
			Unchanged []string
		}
		if err != nil || json.Unmarshal([]byte(stdout), &res) != nil || !strings.Contains(stderr, "dry run: nothing was changed") {
			t.Fatalf("dry run -o json: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
		var steps []string
		for _, h := range res.Plan.Hosts {
			steps = append(steps, h.Node+"="+h.Action)
			if h.Root != hosts[h.Node].Root || !strings.Contains(h.Host, hosts[h.Node].IP) {
				t.Errorf("%s's step names the host %s (root %s), want %s (root %s)", h.Node, h.Host, h.Root, hosts[h.Node].IP, hosts[h.Node].Root)
			}
		}
		if got := strings.Join(steps, " "); got != "cp1=nothing w1=nothing" || strings.Join(res.Unchanged, " ") != "cp1 w1" {
			t.Errorf("the plan as data: %s, unchanged %v\n%s", got, res.Unchanged, stdout)
		}
	})

	two := file("cluster", line("cp1", "control-plane", good), line("w1", "worker", good), line("w2", "worker", good))
	t.Run("a worker added to the file joins", func(t *testing.T) {
		out, err, took := apply("-f", two)
		if err != nil {
			t.Fatalf("apply: %v\n%s", err, out)
		}
		t.Logf("apply with w2 added: %s\n%s", took.Round(time.Millisecond), out)
		if !strings.Contains(out, "[w2] joined as a worker") || strings.Contains(out, "[w1] joined") {
			t.Errorf("output:\n%s", out)
		}
		if got := readyNodes(t); got != "cp1=True w1=True w2=True" {
			t.Errorf("nodes: %s", got)
		}
	})

	all := file("cluster", line("cp1", "control-plane", good), line("cp2", "control-plane", good), line("cp3", "control-plane", good), line("w1", "worker", good), line("w2", "worker", good))
	t.Run("two control planes added join one at a time", func(t *testing.T) {
		out, err, took := apply("-f", all)
		if err != nil {
			t.Fatalf("apply: %v\n%s", err, out)
		}
		t.Logf("apply with cp2 and cp3 added: %s\n%s", took.Round(time.Millisecond), out)
		if !strings.Contains(out, "[cp1] uploaded the control-plane certificates") || !strings.Contains(out, "[cp2] joined as a control plane") || !strings.Contains(out, "[cp3] joined as a control plane") {
			t.Errorf("output:\n%s", out)
		}
		// One at a time: the second starts once the first has joined.
		if i, j := strings.Index(out, "[cp2] joined as"), strings.Index(out, "[cp3] joining as"); i < 0 || j < i {
			t.Errorf("the control planes did not join one at a time:\n%s", out)
		}
		if got := readyNodes(t); got != "cp1=True cp2=True cp3=True w1=True w2=True" {
			t.Errorf("nodes: %s", got)
		}
	})

	t.Run("a Service answers from every node", func(t *testing.T) {
		app := filepath.Join(dir, "app.yaml")
		os.WriteFile(app, []byte(fmt.Sprintf(strings.Replace(spreadApp, "replicas: 4", "replicas: 2", 1), images.TestServer)), 0o644)
		kubectl(t, "apply", "-f", app)
		kubectl(t, "rollout", "status", "deployment/web", "--timeout=180s")
		clusterIP := strings.TrimSpace(kubectl(t, "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"))
		for name, h := range hosts {
			webAnswers(t, h.Host, "http://"+clusterIP+"/", 60*time.Second, "the Service from "+name)
		}
	})

	withNodes := len(hosts) // hosts with a node, for reset -f
	t.Run("a worker taken out of the file is left alone, then pruned", func(t *testing.T) {
		less := file("less", line("cp1", "control-plane", good), line("cp2", "control-plane", good), line("cp3", "control-plane", good), line("w1", "worker", good))
		out, err, _ := apply("-f", less)
		if err != nil || !strings.Contains(out, "[w2] in the cluster, not in the file: left alone (--prune") || strings.Contains(out, "drained") {
			t.Fatalf("apply without --prune: %v\n%s", err, out)
		}
		if got := readyNodes(t); got != "cp1=True cp2=True cp3=True w1=True w2=True" {
			t.Errorf("nodes after apply without --prune: %s", got)
		}
		// w2, with its kubelet's credentials (all a compromised node has),
		// points its own Node's kubeboot.io/apply-host annotation, where
		// apply once kept the host, at a decoy: another root on cp1's
		// machine, which the operator's key reaches, not in the file,
		// that looks like a node. Prune must reset w2 and leave the decoy.
		decoy := filepath.Join(dir, "decoy")
		marker := filepath.Join(decoy, "etc/kubernetes/kubeboot/marker")
		for _, d := range []string{filepath.Dir(marker), filepath.Join(decoy, "usr/local/bin")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(marker, []byte("the decoy's state\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(binary, filepath.Join(decoy, "usr/local/bin/kubeboot")); err != nil {
			t.Fatal(err)
		}
		w2 := hosts["w2"]
		forged := fmt.Sprintf(`{"Address":%q,"Role":"worker","NodeName":"w2","Root":%q,"SSH":{"User":"root","Port":22,"KeyPath":%q,"KnownHosts":%q}}`, hosts["cp1"].IP, decoy, keyFile, good)
		if out, err := nethost.Run(w2.Command(binary, "kubectl", "--kubeconfig", filepath.Join(w2.Root, "etc/kubernetes/kubelet.conf"),
			"annotate", "node", "w2", "--overwrite", "kubeboot.io/apply-host="+forged)); err != nil {
			t.Fatalf("w2 rewriting its own Node's annotation: %v\n%s", err, out)
		}
		out, err, took := apply("-f", less, "--prune")
		if err != nil {
			t.Fatalf("apply --prune: %v\n%s", err, out)
		}
		t.Logf("apply --prune with w2 out of the file: %s\n%s", took.Round(time.Millisecond), out)
		for _, want := range []string{"[w2] plan: not in the file any more", "[w2] drained", "[w2] reset (", "[w2] removed from the cluster", "1 node removed"} {
			if !strings.Contains(out, want) {
				t.Errorf("apply --prune did not say %q", want)
			}
		}
		if got := readyNodes(t); got != "cp1=True cp2=True cp3=True w1=True" {
			t.Errorf("nodes after --prune: %s", got)
		}
		if files := listAll(hosts["w2"].Root); len(files) != 0 {
			t.Errorf("w2: --prune left %d paths: %v", len(files), files[:min(len(files), 10)])
		}
		if _, err := os.Stat(marker); err != nil || strings.Contains(out, decoy) {
			t.Errorf("--prune went to the decoy that w2's annotation names (%v):\n%s", err, out)
		}
		withNodes--
		// What ran on w2 runs elsewhere.
		kubectl(t, "rollout", "status", "deployment/web", "--timeout=120s")
	})

	t.Run("reset -f leaves nothing on any host", func(t *testing.T) {
		start := time.Now()
		out, err := nethost.Run(op.Command(binary, "reset", "-f", all))
		if err != nil {
			t.Fatalf("reset -f: %v\n%s", err, out)
		}
		t.Logf("reset -f of %d hosts: %s\n%s", len(hosts), time.Since(start).Round(time.Millisecond), out)
		// Workers first, the first control plane last.
		order := []string{}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "] reset (") {
				order = append(order, strings.Trim(strings.Fields(l)[0], "[]"))
			}
		}
		if len(order) != withNodes || order[len(order)-1] != "cp1" || (order[0] != "w1" && order[0] != "w2") {
			t.Errorf("reset order %v: workers first, cp1 last", order)
		}
		for name, h := range hosts {
			if files := listAll(h.Root); len(files) != 0 {
				t.Errorf("%s: reset left %d paths: %v", name, len(files), files[:min(len(files), 10)])
			}
		}
	})
}
