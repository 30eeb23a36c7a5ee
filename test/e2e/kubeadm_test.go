package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/cleanup"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// buildKubeadm builds upstream kubeadm from the pinned k8s.io/kubernetes
// module, as a tool for the test.
func buildKubeadm(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kubeadm")
	cmd := exec.Command("go", "build", "-o", out, "k8s.io/kubernetes/cmd/kubeadm")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building kubeadm: %v\n%s", err, b)
	}
	return out
}

var kubeletArgs = regexp.MustCompile(`KUBELET_KUBEADM_ARGS="([^"]*)"`)

// TestKubeadmJoinsKubeboot: upstream kubeadm v1.37.2's join works against
// a control plane made by kubeboot init: discovery, the configuration it
// reads (kubeadm-config, kubelet-config, kube-proxy) and the kubelet's TLS
// bootstrap. kubeadm's node runs the kubelet and containerd as a kubeadm
// user would (here by hand: the machine has no systemd), with kubeadm's
// files at its fixed paths, private to its host.
func TestKubeadmJoinsKubeboot(t *testing.T) {
	requireE2E(t)
	kubeadm := buildKubeadm(t)
	initial := machineState()
	network := newNetwork(t, "kbk-net")
	cp := newHostWith(t, "kbk-cp", "10.211.0.2", nethost.Options{Network: network})
	kw := newHostWith(t, "kbk-kw", "10.211.0.3", nethost.Options{Network: network,
		PrivateDirs: []string{"/etc/kubernetes", "/var/lib/kubelet", "/var/log", "/usr/libexec"}})
	out := kb(t, cp, "init", "--node-name", "cp")
	j, ok := nethost.ParseJoin(out)
	if !ok {
		t.Fatalf("no join command in init's output:\n%s", out)
	}

	// The container runtime of kubeadm's node: kubeboot's containerd with
	// kubeboot's configuration and helpers, its state under the host's root.
	fs := fsys.NewRoot(kw.Root)
	kb(t, kw, "helpers", "install")
	if err := fs.WriteFile(node.ContainerdConfig, []byte(node.ContainerdConfigTOML(fs, false, node.Runtimes{}, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	var procs []*exec.Cmd
	t.Cleanup(func() {
		for _, p := range procs {
			p.Process.Signal(syscall.SIGTERM)
			p.Wait()
		}
		// The kubelet's cgroup root is "/": its kubepods cgroups are the
		// machine's; nothing else of this test's runs there.
		cleanup.RemoveCgroups("kubepods", os.Stderr)
	})
	start := func(name string, args ...string) {
		cmd := kw.Command(name, args...)
		logf, _ := os.Create(filepath.Join(kw.Root, filepath.Base(name)+"-"+fmt.Sprint(len(procs))+".log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := nethost.Start(cmd); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	start(binary, "containerd", "--config", fs.Path(node.ContainerdConfig))
	socket := "unix://" + fs.Path(node.ContainerdSocket)
	eventually(t, 30*time.Second, 50*time.Millisecond, "containerd's socket", func() error {
		_, err := os.Stat(fs.Path(node.ContainerdSocket))
		return err
	})

	joinStart := time.Now()
	join := kw.Command(kubeadm, "join", "10.211.0.2:6443", "--token", j.Token, "--discovery-token-ca-cert-hash", j.Hash,
		"--node-name", "kw", "--cri-socket", socket, "--ignore-preflight-errors", "all")
	var joinOut strings.Builder
	join.Stdout, join.Stderr = &joinOut, &joinOut
	if err := nethost.Start(join); err != nil {
		t.Fatal(err)
	}
	joined := make(chan error, 1)
	go func() { joined <- join.Wait() }()

	// kubeadm writes the kubelet's files, then waits for a kubelet (it would
	// start it with systemd): start it as its drop-in does.
	private := func(p string) string { return fmt.Sprintf("/proc/%d/root%s", kw.HolderPID(), p) }
	eventually(t, 60*time.Second, 100*time.Millisecond, "kubeadm's kubelet files", func() error {
		for _, f := range []string{"/etc/kubernetes/bootstrap-kubelet.conf", "/var/lib/kubelet/config.yaml", "/var/lib/kubelet/kubeadm-flags.env"} {
			if _, err := os.Stat(private(f)); err != nil {
				return fmt.Errorf("%v\n%s", err, joinOut.String())
			}
		}
		return nil
	})
	env, _ := os.ReadFile(private("/var/lib/kubelet/kubeadm-flags.env"))
	args := []string{"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig=/etc/kubernetes/kubelet.conf", "--config=/var/lib/kubelet/config.yaml"}
	if a := kubeletArgs.FindStringSubmatch(string(env)); a != nil {
		args = append(args, strings.Fields(a[1])...)
	}
	start(binary, append([]string{"kubelet"}, args...)...)

	select {
	case err := <-joined:
		if err != nil {
			t.Fatalf("kubeadm join: %v\n%s", err, joinOut.String())
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("kubeadm join did not end:\n%s", joinOut.String())
	}
	t.Logf("upstream kubeadm join took %s:\n%s", time.Since(joinStart).Round(time.Millisecond), joinOut.String())
	for _, want := range []string{`Reading configuration from the "kubeadm-config" ConfigMap`, "This node has joined the cluster"} {
		if !strings.Contains(joinOut.String(), want) {
			t.Errorf("kubeadm join output lacks %q:\n%s", want, joinOut.String())
		}
	}
	// kubeadm join ends once the kubelet has its client certificate; the
	// kubelet registers its Node right after.
	eventually(t, 30*time.Second, 100*time.Millisecond, "node kw registered", func() error {
		out, err := kubectlErr(cp, "get", "node", "kw", "-o", "jsonpath={.status.nodeInfo.kubeletVersion} {.metadata.labels.kubernetes\\.io/hostname}")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if out != "v1.37.2 kw" {
			return fmt.Errorf("node kw: %q", out)
		}
		return nil
	})
	kc, err := os.ReadFile(private("/etc/kubernetes/kubelet.conf"))
	if err != nil || !strings.Contains(string(kc), "server: https://10.211.0.2:6443") {
		t.Errorf("kubeadm's kubelet.conf: %v\n%s", err, kc)
	}

	// Leave: kubeadm's node as kubeadm's users do, kubeboot's with reset.
	kubectl(t, cp, "delete", "node", "kw")
	for _, p := range procs {
		p.Process.Signal(syscall.SIGTERM)
		p.Wait()
	}
	procs = nil
	cleanup.RemoveCgroups("kubepods", os.Stderr)
	kb(t, cp, "reset", "--force")
	nethost.Reap()
	kw.Close()
	for p := range machineState() {
		if !initial[p] {
			t.Errorf("left on the machine: %s", p)
		}
	}
}
