// Package vm tests kubeboot on real hosts: Debian 12 virtual machines with
// systemd as init, cgroup v2 only and a kernel of their own, booted by
// ../shared/vm/vm.sh on a host-only bridge with no route out. This is the
// kind of machine kubeboot's users run it on, which the network-namespace
// hosts of test/e2e (one kernel, no systemd, here cgroup v1) are not.
//
// The tests run only with KUBEBOOT_VM=1 and KUBEBOOT_BINARY set (hack/test.sh
// runs them after the other tests, alone on the machine: under TCG
// emulation a guest that shares two cores with a build starves). Each
// prints what it measured.
package vm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// vmScript is the harness: KUBEBOOT_VM_HARNESS (hack/test.sh sets it),
// else beside the project.
func vmScript(t *testing.T) string {
	p := harnessPath()
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no VM harness at %s", p)
	}
	return p
}

func require(t *testing.T) (script, binary string) {
	t.Helper()
	if v := os.Getenv("KUBEBOOT_VM"); testing.Short() || (v != "1" && v != "2") {
		t.Skip("VM tests run with KUBEBOOT_VM=1 (hack/test.sh sets it; 2 adds the two-VM test): they boot Debian VMs under emulation, minutes each")
	}
	binary = os.Getenv("KUBEBOOT_BINARY")
	if binary == "" {
		t.Skip("KUBEBOOT_BINARY is not set")
	}
	if os.Geteuid() != 0 {
		t.Skip("VM tests need root")
	}
	return vmScript(t), binary
}

// booted is set once a test of this run has started a VM: the run then
// owns the host-only bridge and dnsmasq vm.sh brought up with it.
var booted atomic.Bool

// TestMain takes the bridge, its firewall rules and dnsmasq down when the
// run booted VMs and none is left (vm.sh destroy removes a VM, not the
// network the first one brought up).
func TestMain(m *testing.M) {
	code := m.Run()
	if booted.Load() {
		netDown()
	}
	os.Exit(code)
}

func harnessPath() string {
	if h := os.Getenv("KUBEBOOT_VM_HARNESS"); h != "" {
		return h
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "vm", "vm.sh")
}

func netDown() {
	script := harnessPath()
	list, err := exec.Command(script, "list").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "vm.sh list: %v\n%s", err, list)
		return
	}
	if lines := strings.Split(strings.TrimSpace(string(list)), "\n"); len(lines) > 1 {
		fmt.Fprintf(os.Stderr, "VMs are left (KUBEBOOT_VM_KEEP or a failed destroy); the bridge and dnsmasq stay:\n%s\n", list)
		return
	}
	if out, err := exec.Command(script, "down-all").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "vm.sh down-all: %v\n%s", err, out)
	}
}

// VM is one running guest.
type VM struct {
	t      *testing.T
	script string
	Name   string
	IP     string
	env    []string // vm.sh's knobs it boots with
	failed string   // the end of the output of the step that failed, for dump
}

// harness runs vm.sh with a time limit.
func harness(t *testing.T, script string, limit time.Duration, stdin string, args ...string) (string, error) {
	t.Helper()
	return harnessEnv(t, nil, script, limit, stdin, args...)
}

// harnessEnv is harness with more of vm.sh's knobs (KBVM_CPUS=1, ...).
func harnessEnv(t *testing.T, env []string, script string, limit time.Duration, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(script, args...)
	cmd.Env = append(append(os.Environ(), "KBVM_NICE=0"), env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("vm.sh %s: no end within %s", strings.Join(args, " "), limit)
	}
}

// ensureBase builds the guests' base image if it is not there (~3 min,
// from Debian's packages); vm.sh keeps it in /var/tmp/kubeboot-vm.
func ensureBase(t *testing.T, script string) {
	t.Helper()
	if out, err := harness(t, script, 15*time.Minute, "", "build"); err != nil {
		t.Fatalf("vm.sh build: %v\n%s", err, out)
	}
}

// boot starts a fresh VM (its disk made anew from the base image, which
// ensureBase made) and takes it down, disk and all, when the test ends.
// It may run on a goroutine of its own: it reports with t.Error, and
// returns nil when the VM did not come up. cpus is its vCPU count (0:
// vm.sh's default, 2).
func boot(t *testing.T, script, name, ip string, cpus int) *VM {
	t.Helper()
	harness(t, script, 3*time.Minute, "", "destroy", name) //nolint:errcheck // none there is fine
	start := time.Now()
	v := &VM{t: t, script: script, Name: name, IP: ip}
	if cpus > 0 {
		v.env = []string{fmt.Sprintf("KBVM_CPUS=%d", cpus)}
	}
	booted.Store(true)
	out, err := harnessEnv(t, v.env, script, 8*time.Minute, "", "up", name, ip)
	if err != nil {
		t.Errorf("vm.sh up %s: %v\n%s", name, err, out)
		harness(t, script, 3*time.Minute, "", "destroy", name) //nolint:errcheck
		return nil
	}
	t.Logf("%s booted in %s", name, time.Since(start).Round(time.Second))
	t.Cleanup(func() {
		if t.Failed() {
			v.dump()
			if os.Getenv("KUBEBOOT_VM_KEEP") != "" {
				t.Logf("KUBEBOOT_VM_KEEP: %s stays up for a look (vm.sh ssh %s); vm.sh destroy %s removes it", name, name, name)
				return
			}
		}
		if out, err := harness(t, script, 3*time.Minute, "", "destroy", name); err != nil {
			t.Logf("vm.sh destroy %s: %v\n%s", name, err, out)
		}
	})
	return v
}

// Run runs a shell script on the VM as root and returns its output.
func (v *VM) Run(limit time.Duration, script string) (string, error) {
	return harness(v.t, v.script, limit, "set -eu\n"+script, "ssh", v.Name, "bash", "-s")
}

// MustRun is Run that fails the test.
func (v *VM) MustRun(limit time.Duration, script string) string {
	v.t.Helper()
	out, err := v.Run(limit, script)
	if err != nil {
		v.failed = fmt.Sprintf("%v; the step's last lines:\n%s", err, lastLines(out, 8))
		v.t.Fatalf("on %s: %v\n%s\n--- output:\n%s", v.Name, err, script, out)
	}
	return out
}

// Push copies a file into the VM.
func (v *VM) Push(file, dst string) {
	v.t.Helper()
	start := time.Now()
	if out, err := harness(v.t, v.script, 10*time.Minute, "", "push", file, v.Name+":"+dst); err != nil {
		v.t.Fatalf("push %s: %v\n%s", file, err, out)
	}
	v.t.Logf("pushed %s to %s:%s in %s", filepath.Base(file), v.Name, dst, time.Since(start).Round(time.Second))
}

// Reboot powers the VM off cleanly and boots it again on the same disk.
func (v *VM) Reboot() time.Duration {
	v.t.Helper()
	start := time.Now()
	if out, err := harness(v.t, v.script, 4*time.Minute, "", "down", v.Name); err != nil {
		v.t.Fatalf("vm.sh down: %v\n%s", err, out)
	}
	if out, err := harnessEnv(v.t, v.env, v.script, 8*time.Minute, "", "up", v.Name, v.IP); err != nil {
		v.t.Fatalf("vm.sh up: %v\n%s", err, out)
	}
	return time.Since(start)
}

// dump logs what a failed test needs to see.
func (v *VM) dump() {
	out, _ := v.Run(2*time.Minute, `
systemctl status --no-pager 'kubeboot*' 2>&1 | head -40 || true
journalctl --no-pager -u 'kubeboot*' | tail -40 || true
for f in /var/log/kubeboot/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }; done
kubeboot status 2>&1 || true
`)
	v.t.Logf("state of %s:\n%s", v.Name, out)
	// Last, so that the tail of a long log (all CI shows) says which step.
	if v.failed != "" {
		v.t.Logf("the step that failed on %s: %s", v.Name, v.failed)
	}
}

// lastLines is the last n lines of out.
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// restarts is a shell line that prints the node's components that were
// restarted, from kubeboot status (none: "restarts: none").
const restarts = `echo "restarts: $(kubeboot status 2>/dev/null | awk '$6 ~ /^[0-9]+$/ && $6 > 0 {printf "%s=%s ", $1, $6; n++} END {if (!n) print "none"}')"
`

// kubectl is the shell function the scripts use.
const kubectl = `k() { kubeboot kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"; }
`

// waitFor is a shell function: waitFor SECONDS WHAT CMD... retries CMD every
// 2 s and prints how long it took since $T0.
const waitFor = `T0=${T0:-$(date +%s.%N)}
waitFor() { local limit=$1 what=$2; shift 2; local end=$(( $(date +%s) + limit ));
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$end" ]; then echo "timed out after ${limit}s waiting for: $what" >&2; "$@" >&2 || true; return 1; fi
    sleep 2
  done
  echo "$what: $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"; }
`

// snapshot lists what a node could leave behind on a VM: files (outside
// what the system itself keeps changing, and the operator's own kubectl
// cache), cgroups (but the login sessions'), units, links, iptables chains
// of its own (the built-in chains of the tables iptables-nft registers on
// first use stay, as under kubeadm), the modules kubeboot loads itself
// (those the kernel loads on demand for iptables and veth stay), sysctls,
// processes, and AppArmor profiles.
const snapshot = `
find / /run /etc /var -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /var/tmp \
  -o -path /var/log/journal -o -path /var/cache -o -path /var/lib/systemd -o -path /run/systemd \
  -o -path /run/user -o -path /run/log -o -path /run/udev -o -path /root/.ssh -o -path /var/lib/dhcp \
  -o -path /run/sshd -o -path /run/dbus -o -path /root/.kube \) -prune -o -print 2>/dev/null | sed 's/^/file /' | sort -u
find /sys/fs/cgroup -mindepth 1 -type d -not -path '/sys/fs/cgroup/user.slice/*' | sed 's/^/cgroup /' | sort
systemctl list-units --all --no-legend --plain 'kube*' | awk '{print "unit " $1}'
ip -o link | awk -F': ' '{print "link " $2}' | sed 's/@.*//'
iptables-save | awk '/^\*/ {t=$1} /^:/ && $2=="-" {print "iptables " t " " $1}'
lsmod | awk 'NR>1 && $1 ~ /^(br_netfilter|bridge|stp|llc|overlay)$/ {print "module " $1}' | sort
for s in net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables; do echo "sysctl $s=$(sysctl -n $s 2>/dev/null)"; done
ps -eo comm= | grep -E 'kube|etcd|containerd|coredns|pause|flannel' | sed 's/^/process /' | sort -u || true
ipset list -n 2>/dev/null | sed 's/^/ipset /'
ip -o route | grep -v 'proto kernel' | sed 's/^/route /'
sed 's/^/apparmor /' /sys/kernel/security/apparmor/profiles 2>/dev/null || true
`

// diffLines returns the lines of after that before lacks, and those gone.
func diffLines(before, after string) (added, gone []string) {
	b, a := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(before, "\n") {
		b[l] = true
	}
	for _, l := range strings.Split(after, "\n") {
		a[l] = true
		if l != "" && !b[l] {
			added = append(added, l)
		}
	}
	for l := range b {
		if l != "" && !a[l] {
			gone = append(gone, l)
		}
	}
	return added, gone
}

// bootControlPlaneAndWorker boots kbcp and kbworker for a two-VM test.
// One after the other: vm.sh's up is not safe to run twice at once (both
// rewrite the bridge's DNS hosts file). The worker gets one vCPU (kubeadm
// asks two of control planes only): four emulated vCPUs on this
// machine's two cores left the control plane's API server so slow that
// the controller-manager lost its lease again and again and no Service
// got endpoints.
func bootControlPlaneAndWorker(t *testing.T, script string) (cp, w *VM) {
	t.Helper()
	if cp = boot(t, script, "kbcp", "10.231.0.31", 0); cp == nil {
		t.FailNow()
	}
	if w = boot(t, script, "kbworker", "10.231.0.32", 1); w == nil {
		t.FailNow()
	}
	return cp, w
}
