package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestApplyTwoVMs: `kubeboot apply` on this machine brings up a control
// plane and a worker, each a VM, over SSH: the control plane reached as
// root, the worker as a user who has sudo (Debian's sudo package, pushed
// in: the VMs have no route out); both nodes Ready, read through the
// kubeconfig apply wrote here; apply again changes nothing; `reset -f`
// leaves both VMs as they were. Run by hand (KUBEBOOT_VM=2): two emulated
// VMs take the machine for ~20 minutes.
func TestApplyTwoVMs(t *testing.T) {
	script, binary := require(t)
	if os.Getenv("KUBEBOOT_VM") != "2" {
		t.Skip("two VMs run with KUBEBOOT_VM=2 (by hand: ~20 minutes under emulation)")
	}
	ensureBase(t, script)
	cp, w := bootControlPlaneAndWorker(t, script)
	// ipset for kube-router's network policy (on by default), sudo for
	// the worker's non-root operator.
	install(t, cp, "ipset", "libipset13")
	install(t, w, "ipset", "libipset13", "sudo")
	w.MustRun(2*time.Minute, `
useradd -m -s /bin/bash kbadmin
install -d -m 700 -o kbadmin -g kbadmin /home/kbadmin/.ssh
install -m 600 -o kbadmin -g kbadmin /root/.ssh/authorized_keys /home/kbadmin/.ssh/authorized_keys
echo 'kbadmin ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/kbadmin && chmod 440 /etc/sudoers.d/kbadmin
su kbadmin -c 'sudo -n true'
`)
	before := map[*VM]string{cp: cp.MustRun(2*time.Minute, snapshot), w: w.MustRun(2*time.Minute, snapshot)}

	// The operator's known_hosts: each VM's host key, read over the
	// harness's console-like channel (as an operator checks a fingerprint
	// with the host's owner).
	dir := t.TempDir()
	var known strings.Builder
	for _, v := range []*VM{cp, w} {
		key := strings.TrimSpace(v.MustRun(time.Minute, "cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub"))
		fmt.Fprintf(&known, "%s %s\n", v.IP, key)
	}
	knownFile := filepath.Join(dir, "known_hosts")
	os.WriteFile(knownFile, []byte(known.String()), 0o600)
	keyFile := filepath.Join(os.Getenv("KBVM_DIR"), "id_ed25519")
	if os.Getenv("KBVM_DIR") == "" {
		keyFile = "/var/tmp/kubeboot-vm/id_ed25519"
	}
	file := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf(`apiVersion: kubeboot.io/v1alpha1
kind: Cluster
hosts:
- {address: %s, role: control-plane, nodeName: kbcp, ssh: {user: root, keyPath: %s, knownHosts: %s}}
- {address: %s, role: worker, nodeName: kbworker, ssh: {user: kbadmin, keyPath: %[2]s, knownHosts: %[3]s}}
`, cp.IP, keyFile, knownFile, w.IP)), 0o644)

	run := func(limit time.Duration, args ...string) (string, time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		start := time.Now()
		out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubeboot %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), time.Since(start)
	}
	out, took := run(40*time.Minute, "apply", "-f", file, "--timeout", "20m")
	t.Logf("apply, 2 VMs (the worker through sudo): %s\n%s", took.Round(time.Second), out)
	kubeconfig := filepath.Join(dir, "cluster.kubeconfig")
	out, _ = run(2*time.Minute, "kubectl", "--kubeconfig", kubeconfig, "get", "nodes", "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}`)
	if got := strings.TrimSpace(out); got != "kbcp=True kbworker=True" {
		t.Errorf("nodes through the kubeconfig apply wrote: %s", got)
	}
	out = w.MustRun(time.Minute, `echo "kubelet driver: $(grep cgroupDriver /var/lib/kubelet/config.yaml)"; systemctl is-active kubeboot`)
	if !strings.Contains(out, "cgroupDriver: systemd") || !strings.Contains(out, "active") {
		t.Errorf("the worker's node is not systemd's:\n%s", out)
	}

	out, took = run(10*time.Minute, "apply", "-f", file)
	t.Logf("apply again: %s\n%s", took.Round(time.Second), out)
	if strings.Count(out, "nothing to do") != 2 || strings.Contains(out, "copied") {
		t.Errorf("apply again changed something:\n%s", out)
	}

	out, took = run(20*time.Minute, "reset", "-f", file)
	t.Logf("reset -f: %s\n%s", took.Round(time.Second), out)
	for _, v := range []*VM{cp, w} {
		after := v.MustRun(2*time.Minute, snapshot)
		if added, _ := diffLines(before[v], after); len(added) > 0 {
			t.Errorf("reset -f left %d things on %s:\n%s", len(added), v.Name, strings.Join(added, "\n"))
		}
	}
}
