// Command runc measures what an OCI runtime costs per container, the way
// containerd's runc shim drives it for every container of a pod: `create`,
// `start`, `state`, then `kill` and `delete`. It prints each command's CPU
// (user + system, from wait4) and wall time, and the CPU of the container's
// own process up to its first second (runc's `init` before it execs the
// workload, plus the workload's start: kubeboot's pause), averaged over -n
// containers. Several runtimes are measured in turn, one container of each
// at a time, so that a slower minute of the machine weighs on all of them.
//
//	go run ./bench/runc [-n 50] [-systemd-cgroup] [-no-resources] [-pause FILE] [runtime ...]   (as root; default: runc in PATH)
//
// The containers run kubeboot's pause in a read-only rootfs, in their own
// namespaces, under the cgroup kubeboot-bench-runc, which the benchmark
// removes when it ends. With -systemd-cgroup the runtimes make the
// containers' cgroups through systemd (`--systemd-cgroup`, a scope in the
// slice kubebootbenchrunc.slice), as the shim has them do on a systemd
// host. -no-resources leaves the spec's linux.resources out, for a
// machine where crun cannot load the device rules. On a host without Go
// (a Debian VM), build the bench and pause elsewhere and give pause's
// file with -pause:
//
//	CGO_ENABLED=0 go build -o runc-bench ./bench/runc
//	CGO_ENABLED=0 go build -o pause ./cmd/pause
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
)

// cgroupParent is where the containers' cgroups go (cgroupsPath in the
// bundle), one directory per controller, removed at the end.
const cgroupParent = "kubeboot-bench-runc"

// systemdSlice is the slice of the containers with -systemd-cgroup (one
// scope at a time: each container's is gone with its delete).
const systemdSlice = "kubebootbenchrunc.slice"

// systemdCgroup, noResources and pauseFile are the flags -systemd-cgroup,
// -no-resources and -pause.
var (
	systemdCgroup, noResources bool
	pauseFile                  string
)

// ops are the runtime's commands, in the order the shim runs them.
var ops = []string{"create", "start", "state", "kill", "delete"}

func main() {
	n := flag.Int("n", 50, "containers per runtime")
	flag.BoolVar(&systemdCgroup, "systemd-cgroup", false, "have the runtimes make the containers' cgroups through systemd, as the shim does on a systemd host")
	flag.StringVar(&pauseFile, "pause", "", "kubeboot's pause, built (default: go build ./cmd/pause)")
	flag.BoolVar(&noResources, "no-resources", false, "leave the spec's linux.resources out (its device rules: on cgroup v2 a runtime loads them as an eBPF program, which crun cannot where root may not raise RLIMIT_MEMLOCK)")
	flag.Parse()
	runtimes := flag.Args()
	if len(runtimes) == 0 {
		runtimes = []string{"runc"}
	}
	if err := run(runtimes, *n); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// cost is one runtime's totals.
type cost struct {
	cpu, wall map[string]time.Duration
	initCPU   time.Duration
}

func run(runtimes []string, n int) error {
	// Interrupted, the benchmark still deletes its containers and cgroups.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for i, r := range runtimes {
		p, err := exec.LookPath(r)
		if err != nil {
			return err
		}
		runtimes[i] = p
	}
	tmp, err := os.MkdirTemp("", "kubeboot-bench-runc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	defer removeCgroups()
	bundle := filepath.Join(tmp, "bundle")
	if err := makeBundle(runtimes[0], bundle); err != nil {
		return err
	}
	costs := make([]cost, len(runtimes))
	for i := range costs {
		costs[i] = cost{cpu: map[string]time.Duration{}, wall: map[string]time.Duration{}}
	}
	for i := 0; i < n; i++ {
		for j, r := range runtimes {
			state := filepath.Join(tmp, "state", strconv.Itoa(j))
			if err := once(ctx, r, state, bundle, fmt.Sprintf("bench-%d", i), &costs[j]); err != nil {
				return fmt.Errorf("%s: %w", r, err)
			}
		}
	}
	driver := "cgroupfs"
	if systemdCgroup {
		driver = "systemd"
	}
	if noResources {
		driver += ", no linux.resources"
	}
	fmt.Printf("OCI runtime cost per container, mean of %d (kubeboot's pause, read-only rootfs, cgroups by %s)\n", n, driver)
	for j, r := range runtimes {
		c := costs[j]
		var total time.Duration
		fmt.Printf("%s (%s)\n", r, version(r))
		for _, op := range ops {
			total += c.cpu[op]
			fmt.Printf("  %-8s CPU %6.1f ms   wall %6.1f ms\n", op, ms(c.cpu[op], n), ms(c.wall[op], n))
		}
		fmt.Printf("  %-8s CPU %6.1f ms   (the container's process: runc init, then pause, for its first second)\n", "init", ms(c.initCPU, n))
		fmt.Printf("  %-8s CPU %6.1f ms   (the commands and init)\n", "total", ms(total+c.initCPU, n))
	}
	return nil
}

func ms(d time.Duration, n int) float64 { return float64(d) / float64(n) / float64(time.Millisecond) }

// once runs one container through the shim's sequence and adds up what
// each command cost.
func once(ctx context.Context, runtime, state, bundle, id string, c *cost) (err error) {
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	pidFile := filepath.Join(state, id+".pid")
	created := false
	global := []string{"--root", state}
	if systemdCgroup {
		global = append(global, "--systemd-cgroup")
	}
	defer func() {
		if err != nil && created {
			exec.Command(runtime, append(global, "delete", "--force", id)...).Run() //nolint:errcheck // best effort, the error is err
		}
	}()
	// The container's stdio is the runtime's: a file, not a pipe, which
	// the container would hold open and Wait would wait for.
	stderr, err := os.CreateTemp(state, "stderr-")
	if err != nil {
		return err
	}
	defer os.Remove(stderr.Name())
	defer stderr.Close()
	do := func(op string, args ...string) error {
		cmd := exec.CommandContext(ctx, runtime, append(append(global, op), args...)...)
		cmd.Dir = bundle
		stderr.Truncate(0) //nolint:errcheck
		stderr.Seek(0, 0)  //nolint:errcheck
		cmd.Stderr = stderr
		start := time.Now()
		err := cmd.Run()
		c.wall[op] += time.Since(start)
		if cmd.ProcessState != nil {
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			c.cpu[op] += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		if err != nil {
			msg, _ := os.ReadFile(stderr.Name())
			return fmt.Errorf("%s %s: %v: %s", op, id, err, strings.TrimSpace(string(msg)))
		}
		return nil
	}
	if err := do("create", "--bundle", bundle, "--pid-file", pidFile, id); err != nil {
		return err
	}
	created = true
	if err := do("start", id); err != nil {
		return err
	}
	if err := do("state", id); err != nil {
		return err
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("pid file %s: %q", pidFile, b)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second):
	}
	cpu, ok := benchutil.CPUOf([]int{pid})[pid]
	if !ok {
		return fmt.Errorf("container %s (pid %d): its process is gone after a second", id, pid)
	}
	c.initCPU += cpu.Self
	if err := do("kill", id, "KILL"); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); errors.Is(err, os.ErrNotExist) || zombie(pid) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("container %s (pid %d) still running 10 s after SIGKILL", id, pid)
		}
	}
	return do("delete", id)
}

// statFields are /proc/<pid>/stat's fields after the command name (the
// first is the state).
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return nil, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return f, nil
}

func zombie(pid int) bool {
	f, err := statFields(pid)
	return err == nil && f[0] == "Z"
}

// makeBundle writes an OCI bundle: the runtime's own default spec
// (`runtime spec`), running /pause from a read-only rootfs that holds
// kubeboot's pause, without a terminal, in a cgroup under cgroupParent.
func makeBundle(runtime, bundle string) error {
	rootfs := filepath.Join(bundle, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return err
	}
	if err := installPause(filepath.Join(rootfs, "pause")); err != nil {
		return err
	}
	spec := exec.Command(runtime, "spec")
	spec.Dir = bundle
	if out, err := spec.CombinedOutput(); err != nil {
		return fmt.Errorf("%s spec: %v\n%s", runtime, err, out)
	}
	path := filepath.Join(bundle, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	process, _ := s["process"].(map[string]any)
	root, _ := s["root"].(map[string]any)
	linux, _ := s["linux"].(map[string]any)
	if process == nil || root == nil || linux == nil {
		return fmt.Errorf("%s spec wrote no process, root or linux section", runtime)
	}
	process["args"] = []string{"/pause"}
	process["terminal"] = false
	root["readonly"] = true
	linux["cgroupsPath"] = "/" + cgroupParent + "/bench"
	if noResources {
		delete(linux, "resources")
	}
	if systemdCgroup {
		// slice:prefix:name, as containerd's CRI gives runc with
		// SystemdCgroup: a scope kubeboot-bench-runc-bench.scope in a
		// top-level slice (a dash in a slice's name nests it).
		linux["cgroupsPath"] = systemdSlice + ":" + cgroupParent + ":bench"
	}
	b, err = json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// installPause puts kubeboot's pause at dst: the -pause file, or one
// built from cmd/pause.
func installPause(dst string) error {
	if pauseFile == "" {
		build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", dst, "github.com/kubeboot/kubeboot/cmd/pause")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building pause: %v\n%s", err, out)
		}
		return nil
	}
	b, err := os.ReadFile(pauseFile)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// removeCgroups removes cgroupParent from every cgroup hierarchy (the
// containers' own cgroups went with `delete`).
func removeCgroups() {
	if systemdCgroup {
		exec.Command("systemctl", "stop", systemdSlice).Run() //nolint:errcheck // best effort: gone when no container was made
	}
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroupParent)
	if d := "/sys/fs/cgroup/" + cgroupParent; exists(d) {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		sub, _ := filepath.Glob(d + "/*")
		for _, s := range sub {
			if fi, err := os.Stat(s); err == nil && fi.IsDir() {
				os.Remove(s)
			}
		}
		os.Remove(d)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// version is the first line of `runtime --version`.
func version(runtime string) string {
	out, err := exec.Command(runtime, "--version").Output()
	if err != nil {
		return "version unknown"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}
