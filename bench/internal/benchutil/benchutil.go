// Package benchutil holds what kubeboot's benchmarks share: the binary,
// medians, trace-line parsing, readiness polling from inside a host, and
// the proportional set size of a host's processes.
package benchutil

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeboot/kubeboot/internal/host/helpers"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// Binary returns the kubeboot binary to measure.
func Binary() (string, error) {
	b := os.Getenv("KUBEBOOT_BINARY")
	if b == "" {
		b, _ = filepath.Abs("_output/kubeboot")
	}
	if _, err := os.Stat(b); err != nil {
		return "", fmt.Errorf("kubeboot binary %s: %v (run `make build` first, or set KUBEBOOT_BINARY)", b, err)
	}
	return b, nil
}

// Median of durations.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// Percentile of durations (p in 0..100), nearest rank.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

var afterRe = regexp.MustCompile(`after ([0-9.]+(?:ms|s|µs))`)

// After finds the first output line containing marker and returns the
// duration printed after "after" on it.
func After(out, marker string) (time.Duration, bool) {
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(l, marker) {
			continue
		}
		if m := afterRe.FindStringSubmatch(l); m != nil {
			d, err := time.ParseDuration(m[1])
			return d, err == nil
		}
	}
	return 0, false
}

// DaemonEvent is when the node daemon logged a line containing event
// (its log lines start with an RFC 3339 timestamp), as time after start.
func DaemonEvent(h *nethost.Host, event string, start time.Time) (time.Duration, bool) {
	b, err := os.ReadFile(filepath.Join(h.Root, "var/log/kubeboot/daemon.log"))
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		ts, rest, ok := strings.Cut(l, " ")
		if !ok || !strings.Contains(rest, event) {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || t.Before(start) {
			continue
		}
		return t.Sub(start), true
	}
	return 0, false
}

// BusyCPU is the machine's CPU time spent not idle (user, nice, system,
// irq, softirq, steal), from /proc/stat: the difference of two readings is
// what everything on the machine used in between.
func BusyCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var ticks int64
	for i, v := range f {
		if i == 0 || i == 4 || i == 5 || i > 8 {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// PollReady polls url from inside the host until it answers 200, and
// returns how long after start that was (0 if ctx ended first).
func PollReady(ctx context.Context, h *nethost.Host, url string, start time.Time) time.Duration {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		DialContext:       h.DialContext,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // readiness only
		DisableKeepAlives: true,
	}}
	for ctx.Err() == nil {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(start)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}

// ProcPSS is one process's proportional set size.
type ProcPSS struct {
	PID  int
	Name string
	KiB  int64
	// AnonKiB and FileKiB split it: the process's own memory (heap,
	// stacks) and its share of file pages (the executable's code and
	// data, mapped files).
	AnonKiB, FileKiB int64
}

// PSS reads Pss from /proc/<pid>/smaps_rollup for each pid.
func PSS(pids []int) ([]ProcPSS, int64) {
	var out []ProcPSS
	var total int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			continue
		}
		p := ProcPSS{PID: pid, Name: procName(pid)}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 {
				continue
			}
			n, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "Pss:":
				p.KiB = n
			case "Pss_Anon:":
				p.AnonKiB = n
			case "Pss_File:":
				p.FileKiB = n
			}
		}
		out = append(out, p)
		total += p.KiB
	}
	sort.Slice(out, func(i, j int) bool { return out[i].KiB > out[j].KiB })
	return out, total
}

func procName(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "?"
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	name := filepath.Base(args[0])
	if name == "kubeboot" && len(args) > 1 {
		for _, a := range args[1:] {
			if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "/") {
				return "kubeboot " + a
			}
		}
	}
	return name
}

// FreshHosts runs f once per run, each time on a new network-namespace
// host with a fresh root prefix, and resets and removes the host after
// it (also when f fails). last is set on the final run.
func FreshHosts(runs int, prefix, ip string, f func(h *nethost.Host, last bool) error) error {
	bin, err := Binary()
	if err != nil {
		return err
	}
	if err := nethost.BecomeSubreaper(); err != nil {
		return err
	}
	for i := 0; i < runs; i++ {
		dir, err := os.MkdirTemp("", "kubeboot-bench-")
		if err != nil {
			return err
		}
		h, err := nethost.New(fmt.Sprintf("%s%d", prefix, i), ip, dir, bin)
		if err != nil {
			return err
		}
		err = f(h, i == runs-1)
		keepLogs(h, i)
		if out, rerr := nethost.Run(h.Kubeboot("reset", "--force")); rerr != nil && err == nil {
			err = fmt.Errorf("reset: %v\n%s", rerr, out)
		}
		h.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// keepLogs copies the run's component logs to $KUBEBOOT_BENCH_LOGS/run<i>
// when that is set, before reset removes them.
func keepLogs(h *nethost.Host, i int) { KeepLogs(h, fmt.Sprintf("run%d", i)) }

// KeepLogs copies a host's component logs to $KUBEBOOT_BENCH_LOGS/<name>
// when that is set, before reset removes them.
func KeepLogs(h *nethost.Host, name string) {
	dst := os.Getenv("KUBEBOOT_BENCH_LOGS")
	if dst == "" {
		return
	}
	src := filepath.Join(h.Root, "var/log/kubeboot")
	if _, err := os.Stat(src); err != nil {
		return // reset already, its logs kept then
	}
	dst = filepath.Join(dst, name)
	if err := os.MkdirAll(dst, 0o755); err == nil {
		err = os.CopyFS(dst, os.DirFS(src))
		if err != nil {
			fmt.Fprintln(os.Stderr, "keeping the logs:", err)
		}
	}
}

// MedianOf is the median of one figure over samples, to the millisecond.
func MedianOf[S any](samples []S, f func(S) time.Duration) time.Duration {
	var ds []time.Duration
	for _, s := range samples {
		ds = append(ds, f(s))
	}
	return Median(ds).Round(time.Millisecond)
}

// Footprint waits idle, then prints the PSS of each process and the sum.
func Footprint(pids func() []int, idle time.Duration, what string) {
	fmt.Printf("waiting %s for the node to idle...\n", idle)
	time.Sleep(idle)
	fmt.Printf("\nidle footprint %s after init (sum of PSS of %s; anon: the process's own, file: its share of the executable's pages):\n", idle, what)
	MeasureIdle(pids()).Print()
}

// Idle is a node's footprint at rest: the PSS of its processes, and its
// sum over the node's parts, in KiB.
type Idle struct {
	Procs []ProcPSS
	Total int64
	// Upstream is Kubernetes' own components (as every kubeadm node runs
	// them too), Runtime containerd, its shims and the pause containers,
	// Bootstrapper the bootstrapper's own processes (kubeboot's daemon;
	// kubeadm leaves none), Other the rest (add-ons, workloads).
	Upstream, Runtime, Bootstrapper, Other int64
}

// Own is what the bootstrapper fully owns: its processes and the runtime.
func (i Idle) Own() int64 { return i.Runtime + i.Bootstrapper }

// MeasureIdle reads the PSS of pids and sums it by part.
func MeasureIdle(pids []int) Idle {
	var i Idle
	i.Procs, i.Total = PSS(pids)
	for _, p := range i.Procs {
		switch {
		case upstreamComponent(p.Name):
			i.Upstream += p.KiB
		case runtimeProcess(p.Name):
			i.Runtime += p.KiB
		case strings.HasPrefix(p.Name, "kubeboot"):
			i.Bootstrapper += p.KiB
		default:
			i.Other += p.KiB
		}
	}
	return i
}

// MiB is KiB in MiB.
func MiB(kib int64) float64 { return float64(kib) / 1024 }

// Print prints each process's PSS and the sums.
func (i Idle) Print() {
	var anon, file int64
	for _, p := range i.Procs {
		fmt.Printf("  %-40s pid %-7d %7.1f MiB  (anon %6.1f, file %6.1f)\n", p.Name, p.PID, MiB(p.KiB), MiB(p.AnonKiB), MiB(p.FileKiB))
		anon += p.AnonKiB
		file += p.FileKiB
	}
	fmt.Printf("  %-40s %19.1f MiB  (anon %6.1f, file %6.1f)\n", "total", MiB(i.Total), MiB(anon), MiB(file))
	fmt.Printf("  %-40s %19.1f MiB\n", "of which Kubernetes' own components", MiB(i.Upstream))
	fmt.Printf("  %-40s %19.1f MiB\n", "containerd, shims, pause", MiB(i.Runtime))
	fmt.Printf("  %-40s %19.1f MiB\n", "the bootstrapper's own processes", MiB(i.Bootstrapper))
	fmt.Printf("  %-40s %19.1f MiB\n", "the rest (add-ons, workloads)", MiB(i.Other))
}

// runtimeProcess reports whether a process (by its name in the footprint)
// is the container runtime's: containerd, a shim, a pod's pause.
func runtimeProcess(name string) bool {
	name = strings.TrimPrefix(name, "kubeboot ")
	return name == "containerd" || strings.HasPrefix(name, "containerd-shim") || name == "pause"
}

// upstreamComponent reports whether a process (by its name in the
// footprint) is one of the Kubernetes components kubeboot runs as
// upstream builds them, as every kubeadm node runs them too: the control
// plane, etcd, the kubelet, kube-proxy and CoreDNS.
func upstreamComponent(name string) bool {
	switch name {
	case component.APIServer, component.ControllerManager, component.Scheduler, component.Etcd, component.Kubelet, component.KubeProxy,
		"coredns": // its image's executable (cmd/coredns)
		return true
	}
	return false
}

// AddOn reports whether a process (by its name in the footprint) is one
// a kubeadm node does not run: kubeboot's add-ons (metrics-server, the
// local-path provisioner and its per-volume helper pods) and its pod
// network's engines (flannel, kube-router's policy controller). Figures
// like for like leave them out.
func AddOn(name string) bool {
	switch name {
	case helpers.MetricsServer, helpers.LocalPathProvisioner, helpers.LocalPathHelper, helpers.Flannel, helpers.KubeRouter:
		return true
	}
	return false
}

// CPUIn is the CPU (own and reaped children's) the processes whose names
// match used between two readings (a process new in after counts from
// zero).
func CPUIn(before, after map[int]ProcCPU, match func(name string) bool) time.Duration {
	var d time.Duration
	for pid, a := range after {
		if match(a.Name) {
			d += a.Since(before[pid])
		}
	}
	return d
}

// Since is the CPU p used since an earlier reading of the same process
// (the zero ProcCPU for one that was not there).
func (p ProcCPU) Since(earlier ProcCPU) time.Duration {
	return p.Self - earlier.Self + p.Children - earlier.Children
}

// ProcCPU is one process's CPU time: its own (utime+stime) and that of
// its reaped children (cutime+cstime: a shim's runc calls, containerd's
// CNI plugin execs).
type ProcCPU struct {
	Name           string
	Self, Children time.Duration
}

// CPUOf reads each pid's CPU times from /proc/<pid>/stat.
func CPUOf(pids []int) map[int]ProcCPU {
	out := map[int]ProcCPU{}
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis; utime is the 14th
		// field of the whole line, the 12th after it.
		_, rest, ok := strings.Cut(string(b), ") ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 15 {
			continue
		}
		tick := func(i int) time.Duration {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			return time.Duration(n) * time.Second / 100
		}
		out[pid] = ProcCPU{Name: procName(pid), Self: tick(11) + tick(12), Children: tick(13) + tick(14)}
	}
	return out
}

// PrintCPUBreakdown prints, grouped by process name, the CPU each group
// used between two readings (a process new in after counts from zero), and
// what the machine used that no group accounts for.
func PrintCPUBreakdown(before, after map[int]ProcCPU, busy time.Duration, per int) {
	type group struct {
		n              int
		self, children time.Duration
	}
	groups := map[string]*group{}
	var total time.Duration
	for pid, a := range after {
		b := before[pid]
		g := groups[a.Name]
		if g == nil {
			g = &group{}
			groups[a.Name] = g
		}
		g.n++
		g.self += a.Self - b.Self
		g.children += a.Children - b.Children
		total += a.Since(b)
	}
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		gi, gj := groups[names[i]], groups[names[j]]
		return gi.self+gi.children > gj.self+gj.children
	})
	fmt.Printf("CPU by process (own + reaped children's), per pod of %d:\n", per)
	for _, n := range names {
		g := groups[n]
		if g.self+g.children < 10*time.Millisecond {
			continue
		}
		fmt.Printf("  %-28s x%-3d own %6s  children %6s  per pod %5s\n", n, g.n, g.self.Round(10*time.Millisecond), g.children.Round(10*time.Millisecond), ((g.self + g.children) / time.Duration(per)).Round(time.Millisecond))
	}
	fmt.Printf("  %-28s      %s of the machine's %s busy (per pod %s); the rest is outside the node's processes\n", "accounted", total.Round(10*time.Millisecond), busy.Round(10*time.Millisecond), (total / time.Duration(per)).Round(time.Millisecond))
}

// NetnsProcesses lists the processes in the network namespace
// /run/netns/<name> and all their descendants (a pod's processes live in
// the pod's own namespace but descend from a shim in the node's), except
// the pids in exclude: every process of a node whose host is that
// namespace, whichever tool made it.
func NetnsProcesses(name string, exclude ...int) []int {
	var ns unix.Stat_t
	if err := unix.Stat("/run/netns/"+name, &ns); err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	var queue []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil && st.Ino == ns.Ino && st.Dev == ns.Dev {
			queue = append(queue, pid)
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	seen := map[int]bool{}
	for _, pid := range exclude {
		seen[pid] = true
	}
	var out []int
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		queue = append(queue, children[pid]...)
	}
	sort.Ints(out)
	return out
}

// parentOf reads a process's parent pid from /proc/<pid>/stat.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command's closing parenthesis: state, then ppid.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
