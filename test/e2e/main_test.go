// Package e2e holds the end-to-end tests: real kubeboot processes on
// hosts made of network namespaces (see test/nethost). They need root and
// the built binary (KUBEBOOT_BINARY, as `make test` sets it) and are
// skipped by `go test -short`.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/test/nethost"
)

var binary string

func TestMain(m *testing.M) {
	// testing.Short is only valid after flag parsing, which m.Run does;
	// parse here to decide about the machine-wide setup.
	if isShort() || os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	if err := nethost.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "becoming a child subreaper:", err)
		os.Exit(1)
	}
	before := nodeCgroups()
	code := m.Run()
	// Every test host removes its node's cgroups when it is closed; one
	// left behind is a leak of the suite's, even when each test passed.
	var left []string
	for _, g := range nodeCgroups() {
		if !slices.Contains(before, g) {
			left = append(left, g)
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: the tests left these node cgroups behind: %s\n", strings.Join(left, " "))
		code = 1
	}
	os.Exit(code)
}

// nodeCgroups lists the kubeboot node cgroups at the top of every
// hierarchy (cpugroup names them kubeboot or kubeboot-<tag>).
func nodeCgroups() []string {
	var out []string
	for _, pattern := range []string{"/sys/fs/cgroup/kubeboot*", "/sys/fs/cgroup/*/kubeboot*"} {
		m, _ := filepath.Glob(pattern)
		out = append(out, m...)
	}
	return out
}

func isShort() bool {
	for _, a := range os.Args {
		if a == "-test.short" || a == "-test.short=true" {
			return true
		}
	}
	return false
}

// requireE2E skips in -short mode and fails (not skips) when the machine
// cannot run the test: a skipped end-to-end test must not pass for a
// green one.
func requireE2E(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test; runs without -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("end-to-end tests need root (network namespaces, mounts)")
	}
	binary = os.Getenv("KUBEBOOT_BINARY")
	if binary == "" {
		binary, _ = filepath.Abs("../../_output/kubeboot")
	}
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("kubeboot binary %s: %v (run `make build`, or `make test` which builds it)", binary, err)
	}
}

// newHost makes a host for a test and removes it when the test ends.
func newHost(t *testing.T, name, ip string) *nethost.Host {
	t.Helper()
	return newHostWith(t, name, ip, nethost.Options{})
}

// newHostWith makes a host shaped by o and removes it when the test ends.
func newHostWith(t *testing.T, name, ip string, o nethost.Options) *nethost.Host {
	t.Helper()
	h, err := nethost.NewWith(name, ip, t.TempDir(), binary, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(t, h)
		}
		// A node the test did not reset itself (it stopped half-way, or
		// never meant to) would leave what it made outside the root (pod
		// log links, the device-plugin socket, cgroups) to the machine and
		// the next test: reset it.
		if _, err := os.Stat(filepath.Join(h.Root, "var/lib/kubeboot")); err == nil {
			out, err := nethost.Run(h.Kubeboot("reset", "--force"))
			if t.Failed() || err != nil {
				t.Logf("cleanup: kubeboot reset --force on %s: %v\n%s", h.Name, err, lastLines(out, 5))
			}
		}
		h.Close()
	})
	return h
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func dumpLogs(t *testing.T, h *nethost.Host) {
	logs, _ := filepath.Glob(filepath.Join(h.Root, "var/log/kubeboot/*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		lines := strings.Split(string(b), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		t.Logf("---- last lines of %s\n%s", l, strings.Join(lines, "\n"))
	}
}

// kb runs kubeboot on the host and fails the test on error.
func kb(t *testing.T, h *nethost.Host, args ...string) string {
	t.Helper()
	out, err := nethost.Run(h.Kubeboot(args...))
	if err != nil {
		t.Fatalf("kubeboot %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kubectl runs the embedded kubectl with the host's admin.conf.
func kubectl(t *testing.T, h *nethost.Host, args ...string) string {
	t.Helper()
	out, err := kubectlErr(h, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubectlErr(h *nethost.Host, args ...string) (string, error) {
	full := append([]string{"kubectl", "--kubeconfig", filepath.Join(h.Root, "etc/kubernetes/admin.conf")}, args...)
	return nethost.Run(h.Command(h.Binary, full...))
}

// eventually retries f every interval until it succeeds or timeout passes.
func eventually(t *testing.T, timeout, interval time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < timeout {
		if err = f(); err == nil {
			return time.Since(start)
		}
		time.Sleep(interval)
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
	return 0
}

// machineState lists what lies at the machine-wide paths upstream
// components write whatever kubeboot's root prefix, and the cgroup tree.
func machineState() map[string]bool {
	state := map[string]bool{}
	for _, dir := range []string{"/var/log/pods", "/var/log/containers", "/var/lib/cni", "/var/lib/kubelet", "/run/containerd", "/run/kubeboot-shims", "/usr/libexec/kubernetes", "/var/lib/kubeboot"} {
		filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				state[p] = true
			}
			return nil
		})
	}
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, r := range roots {
		filepath.Walk(r, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.IsDir() && p != r {
				state[p] = true
			}
			return nil
		})
	}
	return state
}

// apiReader calls read every 100 ms in the background and counts the
// reads and the failures, with their times.
type apiReader struct {
	mu       sync.Mutex
	reads    int
	failures []string
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
}

func startReader(t *testing.T, read func() error) *apiReader {
	r := &apiReader{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			err := read()
			r.mu.Lock()
			r.reads++
			if err != nil {
				r.failures = append(r.failures, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(r.Stop)
	return r
}

// Stop ends the reads and waits for the last one.
func (r *apiReader) Stop() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
}

// Report logs the reads so far and fails the test for each failed one
// (the first ten), then forgets the failures.
func (r *apiReader) Report(t *testing.T, what string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Logf("%s: %d reads, %d failed", what, r.reads, len(r.failures))
	for i, f := range r.failures {
		if i == 10 {
			t.Errorf("... %d more", len(r.failures)-10)
			break
		}
		t.Errorf("a failed read: %s", f)
	}
	r.failures = nil
}
