// Package daemon is the node daemon: one long-running process per node
// (per root prefix) that runs the components whose specs are in the spec
// directory, under a supervisor. It owns its pid file (held with a lock,
// so a stale file or a reused pid never passes for a live daemon), its
// status file and its log.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/poll"
	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
	"github.com/kubeboot/kubeboot/internal/host/helpers"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/supervisor"
)

// componentPath is the PATH a component gets when the daemon has none:
// the system's directories, where they find containerd, runc, iptables
// and mount.
const componentPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ComponentEnv is the environment of every component: the daemon's PATH
// (the one preflight searched, so containerd finds the runc and the
// kubelet the iptables that preflight found), and from the rest of the
// daemon's environment only the variables that tune the Go runtime or
// kubeboot (GOGC, GOMAXPROCS, GOMEMLIMIT, GODEBUG, GOTRACEBACK,
// KUBEBOOT_*), not whatever the shell that ran init held (credentials,
// proxies, ...).
func ComponentEnv(environ []string) []string {
	env := []string{componentPath}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case name == "PATH" && value != "":
			env[0] = kv
		case name == "GOGC", name == "GOMAXPROCS", name == "GOMEMLIMIT", name == "GODEBUG", name == "GOTRACEBACK", strings.HasPrefix(name, "KUBEBOOT_"):
			env = append(env, kv)
		}
	}
	return env
}

// StatusReport is what the daemon writes to its status file.
type StatusReport struct {
	PID        int                 `json:"pid"`
	Updated    time.Time           `json:"updated"`
	Components []supervisor.Status `json:"components"`
	// Env is the environment the daemon gives its components, and Dir
	// their working directory (`kubeboot dev print` shows them).
	Env []string `json:"env,omitempty"`
	Dir string   `json:"dir,omitempty"`
}

// StateSwapped is the state of a component a developer runs in the
// daemon's place (`kubeboot dev swap`).
const StateSwapped = "swapped"

// SwapDir holds a file per swapped component: the daemon does not run
// those, and components that come After one treat it as running
// elsewhere.
const SwapDir = node.RunDir + "/swapped"

// Swapped are the components swapped out on this node.
func Swapped(fs fsys.FS) map[string]time.Time {
	out := map[string]time.Time{}
	entries, _ := os.ReadDir(fs.Path(SwapDir))
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			out[e.Name()] = info.ModTime()
		}
	}
	return out
}

// lock takes the exclusive lock on the pid file. It fails when another
// daemon holds it.
func lock(fs fsys.FS) (*os.File, error) {
	if err := os.MkdirAll(fs.Path(node.RunDir), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(fs.Path(node.DaemonPidFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another kubeboot daemon runs for %s (pid file %s is locked)", fs.Path("/"), fs.Path(node.DaemonPidFile))
	}
	// A dead daemon's pid goes at once: until this one writes its own, the
	// file names none.
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Running returns the pid of the daemon of this root, or 0 when none runs.
func Running(fs fsys.FS) int {
	f, err := os.Open(fs.Path(node.DaemonPidFile))
	if err != nil {
		return 0
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		// We got the lock: nobody holds it, the file is stale.
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return 0
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// Daemon is the node daemon: it runs the components whose specs are in
// the spec directory under a supervisor, writes their status, restarts
// them when a file they read at start changes or when asked, and hands
// one to a developer's own process while it is swapped out.
type Daemon struct {
	fs        fsys.FS
	exe       string
	logw      io.Writer
	inProcess map[string]supervisor.InProcessFunc

	logMu    sync.Mutex
	env      []string
	sup      *supervisor.Supervisor
	cpu      *bringUp
	restarts *restarter
	store    component.Store
	// applied is what reload last handed the supervisor, with what was
	// swapped out, marshalled; running are those specs.
	applied []byte
	running []component.Spec
	// statusMu guards swapped, which reload writes and the status report
	// reads, and the status file.
	statusMu sync.Mutex
	swapped  map[string]time.Time
	// lookMu makes one look at a time: the main loop's and the API's;
	// stopping, once set, makes looks do nothing.
	lookMu   sync.Mutex
	stopping bool
	// changed is closed, and replaced, at every change of status: what
	// waits for one (the API's waits and watches) selects on it.
	changedMu sync.Mutex
	changedCh chan struct{}
	// noAPI leaves the socket out, as daemons before the API ran (tests
	// of the client's way with those).
	noAPI bool
}

// New returns the daemon of the node under fs. It runs components from
// exe, logs to logw, and runs the components of inProcess as goroutines
// of its own rather than as processes (component.InDaemon).
func New(fs fsys.FS, exe string, logw io.Writer, inProcess map[string]supervisor.InProcessFunc) *Daemon {
	return &Daemon{fs: fs, exe: exe, logw: logw, inProcess: inProcess, store: component.Store{FS: fs}, swapped: map[string]time.Time{}, changedCh: make(chan struct{})}
}

// Run is the daemon itself. It returns when ctx ends, after stopping every
// component. It serves its API on SocketFile. SIGHUP makes it re-read the
// spec directory at once (for people: commands use the API); it also
// re-reads it every 2 s.
func (d *Daemon) Run(ctx context.Context) error {
	fs := d.fs
	// Before the pid file names this process: a command that finds it
	// there signals it at once, and SIGHUP's default is to end it (under
	// systemd, with a clean exit: the unit stopped and started again).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	pidf, err := lock(fs)
	if err != nil {
		return err
	}
	defer func() {
		os.Remove(fs.Path(node.DaemonPidFile))
		pidf.Close()
	}()
	// The socket before the pid: whoever finds the daemon running finds
	// its API.
	var api net.Listener
	if !d.noAPI {
		if api, err = listen(fs.Path(SocketFile)); err != nil {
			return err
		}
		defer func() {
			api.Close()
			os.Remove(fs.Path(SocketFile))
		}()
	}
	if err := pidf.Truncate(0); err != nil {
		return err
	}
	if _, err := pidf.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	if err := os.MkdirAll(fs.Path(node.LogDir), 0o755); err != nil {
		return err
	}
	d.env = ComponentEnv(os.Environ())
	if SystemdRunning() {
		// The kubelet's cgroup root is the node's slice: it must have every
		// controller the kubelet requires, hugetlb among them, which
		// systemd does not enable.
		if err := cpugroup.EnableControllers(fs.Path("/")); err != nil {
			d.logf("WARNING: %v", err)
		}
	}
	d.cpu = newBringUp(fs, d.logf)
	d.sup = supervisor.New(supervisor.Options{Exe: d.exe, LogDir: fs.Path(node.LogDir), Logf: d.logf,
		OnChange:  d.changed,
		Started:   d.cpu.place,
		LinkDir:   fs.Path(node.LinkDir),
		Env:       d.env,
		Dir:       fs.Path("/"),
		InProcess: d.inProcess,
	})
	d.restarts = newRestarter(d.logf, d.sup.Restart)
	restartCtx, stopRestarts := context.WithCancel(ctx)
	defer stopRestarts()
	go d.restarts.run(restartCtx)
	if api != nil {
		apiCtx, stopAPI := context.WithCancel(ctx)
		defer stopAPI()
		go d.serve(apiCtx, api)
	}
	d.logf("kubeboot daemon started (pid %d, root %s)", os.Getpid(), fs.Path("/"))
	verifyHelpers(fs, d.logf)
	d.look()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			d.logf("stopping every component")
			stopRestarts()
			// A request in flight applies nothing from here on: it would
			// start again what Stop stops.
			d.lookMu.Lock()
			d.stopping = true
			d.lookMu.Unlock()
			d.sup.Stop()
			d.writeStatus()
			d.logf("kubeboot daemon stopped")
			return nil
		case <-hup:
			d.look()
		case <-tick.C:
			d.look()
			d.changed()
		}
	}
}

// logf writes one timestamped line to the daemon's log.
func (d *Daemon) logf(format string, args ...any) {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	fmt.Fprintf(d.logw, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
}

// writeStatus writes the status file: every component's state, and
// those swapped out.
func (d *Daemon) writeStatus() {
	d.statusMu.Lock()
	defer d.statusMu.Unlock()
	if d.sup == nil {
		return
	}
	b, _ := json.MarshalIndent(d.reportLocked(), "", "  ")
	_ = fsys.WriteFileAtomic(d.fs.Path(node.DaemonStatusFile), b, 0o644)
	d.changedMu.Lock()
	close(d.changedCh)
	d.changedCh = make(chan struct{})
	d.changedMu.Unlock()
}

// changes is closed at the next change of status.
func (d *Daemon) changes() <-chan struct{} {
	d.changedMu.Lock()
	defer d.changedMu.Unlock()
	return d.changedCh
}

// report is the status now: every component's state, and those swapped
// out.
func (d *Daemon) report() StatusReport {
	d.statusMu.Lock()
	defer d.statusMu.Unlock()
	return d.reportLocked()
}

func (d *Daemon) reportLocked() StatusReport {
	r := StatusReport{PID: os.Getpid(), Updated: time.Now(), Env: d.env, Dir: d.fs.Path("/")}
	if d.sup != nil {
		r.Components = d.sup.Statuses()
	}
	names := make([]string, 0, len(d.swapped))
	for name := range d.swapped {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		r.Components = append(r.Components, supervisor.Status{Name: name, State: StateSwapped, Since: d.swapped[name]})
	}
	return r
}

// changed writes the status and lets the bring-up see the API server's
// readiness (or its time limit run out).
func (d *Daemon) changed() {
	d.writeStatus()
	d.cpu.check(d.sup.Statuses())
}

// look applies what changed on disk: specs, what is swapped out, files
// components read at start.
func (d *Daemon) look() {
	d.lookMu.Lock()
	defer d.lookMu.Unlock()
	if d.stopping {
		return
	}
	d.reload()
	d.restarts.check(d.running)
}

// reload hands the supervisor the specs on disk, but for those swapped
// out, when they changed.
func (d *Daemon) reload() {
	all, err := d.store.Load()
	if err != nil {
		d.logf("reading specs: %v", err)
		return
	}
	nowSwapped := Swapped(d.fs)
	var specs []component.Spec
	for _, s := range all {
		if _, ok := nowSwapped[s.Name]; !ok {
			specs = append(specs, s)
		}
	}
	d.running = specs
	b, _ := json.Marshal(struct {
		Specs   []component.Spec
		Swapped map[string]time.Time
	}{specs, nowSwapped})
	if string(b) == string(d.applied) {
		return
	}
	d.applied = b
	d.statusMu.Lock()
	for name := range nowSwapped {
		if _, ok := d.swapped[name]; !ok {
			d.logf("%s is swapped out: a process of the developer's runs in its place", name)
		}
	}
	for name := range d.swapped {
		if _, ok := nowSwapped[name]; !ok {
			d.logf("%s is handed back to the daemon", name)
		}
	}
	d.swapped = nowSwapped
	d.statusMu.Unlock()
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	d.logf("running %v", names)
	d.cpu.specs(specs)
	d.sup.Apply(specs)
}

// ReadStatus reads the status file the daemon writes.
func ReadStatus(fs fsys.FS) (*StatusReport, error) {
	b, err := os.ReadFile(fs.Path(node.DaemonStatusFile))
	if err != nil {
		return nil, err
	}
	var r StatusReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", fs.Path(node.DaemonStatusFile), err)
	}
	return &r, nil
}

// Start makes sure the daemon of this root runs, or has the running one
// re-read its specs. Where systemd is init and the node's unit is
// written, it starts the unit, so that the daemon, its components and
// their logs live under it; elsewhere it starts the daemon detached (own
// session, output to its log file) with the environment a unit would give
// it, not the shell's. It returns the daemon's pid and whether it started
// it.
func Start(fs fsys.FS, exe string) (pid int, started bool, err error) {
	if pid := Running(fs); pid != 0 {
		// The daemon answers once it applied what changed, which may
		// stop a component whose spec changed first.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := NewClient(fs).Reload(ctx); err != nil {
			return 0, false, err
		}
		return pid, false, nil
	}
	if runByUnit(fs) {
		if err := systemctl("start", UnitName(fs)); err != nil {
			return 0, false, fmt.Errorf("starting the kubeboot daemon: %w", err)
		}
		if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			pid = Running(fs)
			return pid != 0, nil
		}); err != nil {
			return 0, false, fmt.Errorf("the kubeboot daemon (%s) did not take its pid file within 30s; see `journalctl -u %s`", UnitName(fs), UnitName(fs))
		}
		return pid, true, nil
	}
	if err := os.MkdirAll(fs.Path(node.LogDir), 0o755); err != nil {
		return 0, false, err
	}
	logf, err := os.OpenFile(fs.Path(node.DaemonLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, false, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "--root", fs.Path("/"), "daemon", "run")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = ComponentEnv(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, false, fmt.Errorf("starting the kubeboot daemon: %w", err)
	}
	pid = cmd.Process.Pid
	// Reap it if it exits while we still run, so it leaves no zombie.
	go cmd.Wait() //nolint:errcheck
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		switch {
		case Running(fs) == pid:
			return true, nil
		case syscall.Kill(pid, 0) != nil:
			return false, fmt.Errorf("the kubeboot daemon exited at start; see %s", fs.Path(node.DaemonLogFile))
		}
		return false, nil
	})
	switch {
	case wait.Interrupted(err):
		return 0, false, fmt.Errorf("the kubeboot daemon (pid %d) did not take its pid file within 10s; see %s", pid, fs.Path(node.DaemonLogFile))
	case err != nil:
		return 0, false, err
	}
	return pid, true, nil
}

// StopAndReport stops the node daemon and its components, as Stop,
// saying on out what it stops and how long that took.
func StopAndReport(ctx context.Context, fs fsys.FS, out io.Writer) error {
	pid := Running(fs)
	if pid == 0 {
		fmt.Fprintln(out, "[daemon] No kubeboot daemon runs")
		return nil
	}
	fmt.Fprintf(out, "[daemon] Stopping the kubeboot daemon (pid %d) and its components\n", pid)
	start := time.Now()
	err := Stop(ctx, fs, 2*time.Minute, func(waited time.Duration) {
		fmt.Fprintf(out, "[daemon] Still stopping (%s)\n", waited.Round(time.Second))
	})
	if err == nil {
		fmt.Fprintf(out, "[daemon] Stopped after %s\n", time.Since(start).Round(time.Millisecond))
	}
	return err
}

// Stop stops the daemon of this root and waits until it and its
// components are gone: through its unit where systemd runs it (a signal
// would have systemd start it again). progress, when set, is told every
// 5 s.
func Stop(ctx context.Context, fs fsys.FS, timeout time.Duration, progress func(time.Duration)) error {
	pid := Running(fs)
	if pid == 0 {
		return nil
	}
	if runByUnit(fs) {
		// --no-block: the wait below reports progress and keeps to timeout.
		if err := systemctl("stop", "--no-block", UnitName(fs)); err != nil {
			return fmt.Errorf("stopping the kubeboot daemon: %w", err)
		}
	} else if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping the kubeboot daemon (pid %d): %w", pid, err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var say func(time.Duration, error)
	if progress != nil {
		say = func(waited time.Duration, _ error) { progress(waited) }
	}
	err := poll.Until(wctx, 20*time.Millisecond, 5*time.Second, say, func(context.Context) error {
		if Running(fs) != 0 {
			return errors.New("still running")
		}
		return nil
	})
	return pollError(ctx, err, "the kubeboot daemon (pid %d) did not stop within %s", pid, timeout)
}

// pollError is a poll's outcome: nil, the caller's cancellation, or the
// error that says what did not happen in time.
func pollError(ctx context.Context, err error, format string, args ...any) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return fmt.Errorf(format, args...)
	}
}

// verifyHelpers checks, at every start, the per-pod helpers init or join
// wrote (a node whose containerd is kubeboot's), by sha256, and rewrites
// any that differ from what this binary carries, before containerd
// starts a shim or a CNI plugin from them.
func verifyHelpers(fs fsys.FS, logf func(format string, args ...any)) {
	dir := fs.Path(node.HelpersRoot)
	if _, err := os.Stat(dir); err != nil {
		return
	}
	start := time.Now()
	res, err := helpers.Install(dir, logf)
	if err != nil {
		logf("[helpers] %v", err)
		return
	}
	logf("[helpers] %d per-pod helpers in %s verified by sha256 in %s, %d rewritten", res.Verified+len(res.Written), res.Dir, time.Since(start).Round(time.Millisecond), len(res.Written))
}
