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
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubeboot/kubeboot/pkg/component"
	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/supervisor"
)

// Node paths the daemon uses.
const (
	RunDir     = "/run/kubeboot"
	PidFile    = RunDir + "/daemon.pid"
	StatusFile = RunDir + "/status.json"
	LogDir     = "/var/log/kubeboot"
	LogFile    = LogDir + "/daemon.log"
	// LinkDir holds the links named after the components that the daemon
	// starts them through.
	LinkDir = "/var/lib/kubeboot/bin"
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
}

// lock takes the exclusive lock on the pid file. It fails when another
// daemon holds it.
func lock(fs fsys.FS) (*os.File, error) {
	if err := os.MkdirAll(fs.Path(RunDir), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(fs.Path(PidFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another kubeboot daemon runs for %s (pid file %s is locked)", fs.Path("/"), fs.Path(PidFile))
	}
	return f, nil
}

// Running returns the pid of the daemon of this root, or 0 when none runs.
func Running(fs fsys.FS) int {
	f, err := os.Open(fs.Path(PidFile))
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

// Run is the daemon itself. It returns when ctx ends, after stopping every
// component. SIGHUP makes it re-read the spec directory at once; it also
// re-reads it every 2 s.
func Run(ctx context.Context, fs fsys.FS, exe string, logw io.Writer) error {
	pidf, err := lock(fs)
	if err != nil {
		return err
	}
	defer func() {
		os.Remove(fs.Path(PidFile))
		pidf.Close()
	}()
	if err := pidf.Truncate(0); err != nil {
		return err
	}
	if _, err := pidf.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	if err := os.MkdirAll(fs.Path(LogDir), 0o755); err != nil {
		return err
	}
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(logw, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
	}
	var sup *supervisor.Supervisor
	writeStatus := func() {
		if sup == nil {
			return
		}
		r := StatusReport{PID: os.Getpid(), Updated: time.Now(), Components: sup.Statuses()}
		b, _ := json.MarshalIndent(r, "", "  ")
		_ = fsys.WriteFileAtomic(fs.Path(StatusFile), b, 0o644)
	}
	var statusMu sync.Mutex
	onChange := func() {
		statusMu.Lock()
		defer statusMu.Unlock()
		writeStatus()
	}
	cpu := newBringUp(fs, logf)
	// changed writes the status and lets the bring-up see the API server's
	// readiness (or its time limit run out).
	changed := func() { onChange(); cpu.check(sup.Statuses()) }
	sup = supervisor.New(supervisor.Options{Exe: exe, LogDir: fs.Path(LogDir), Logf: logf,
		OnChange: changed,
		Started:  cpu.place,
		LinkDir:  fs.Path(LinkDir),
		Env:      ComponentEnv(os.Environ()),
	})
	store := component.Store{FS: fs}
	var applied []byte
	reload := func() {
		specs, err := store.Load()
		if err != nil {
			logf("reading specs: %v", err)
			return
		}
		b, _ := json.Marshal(specs)
		if string(b) == string(applied) {
			return
		}
		applied = b
		names := make([]string, len(specs))
		for i, s := range specs {
			names[i] = s.Name
		}
		logf("running %v", names)
		cpu.specs(specs)
		sup.Apply(specs)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	logf("kubeboot daemon started (pid %d, root %s)", os.Getpid(), fs.Path("/"))
	reload()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			logf("stopping every component")
			sup.Stop()
			onChange()
			logf("kubeboot daemon stopped")
			return nil
		case <-hup:
			reload()
		case <-tick.C:
			reload()
			changed()
		}
	}
}

// ReadStatus reads the status file the daemon writes.
func ReadStatus(fs fsys.FS) (*StatusReport, error) {
	b, err := os.ReadFile(fs.Path(StatusFile))
	if err != nil {
		return nil, err
	}
	var r StatusReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", fs.Path(StatusFile), err)
	}
	return &r, nil
}

// Start makes sure the daemon of this root runs: it starts one, detached
// (own session, output to its log file), or tells the running one to
// re-read its specs. It returns the daemon's pid and whether it started it.
func Start(fs fsys.FS, exe string) (pid int, started bool, err error) {
	if pid := Running(fs); pid != 0 {
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			return 0, false, fmt.Errorf("signalling the kubeboot daemon (pid %d): %w", pid, err)
		}
		return pid, false, nil
	}
	if err := os.MkdirAll(fs.Path(LogDir), 0o755); err != nil {
		return 0, false, err
	}
	logf, err := os.OpenFile(fs.Path(LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, false, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "--root", fs.Path("/"), "daemon", "run")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, false, fmt.Errorf("starting the kubeboot daemon: %w", err)
	}
	pid = cmd.Process.Pid
	// Reap it if it exits while we still run, so it leaves no zombie.
	go cmd.Wait() //nolint:errcheck
	deadline := time.Now().Add(10 * time.Second)
	for Running(fs) != pid {
		if time.Now().After(deadline) {
			return 0, false, fmt.Errorf("the kubeboot daemon (pid %d) did not take its pid file within 10s; see %s", pid, fs.Path(LogFile))
		}
		if syscall.Kill(pid, 0) != nil {
			return 0, false, fmt.Errorf("the kubeboot daemon exited at start; see %s", fs.Path(LogFile))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return pid, true, nil
}

// Stop stops the daemon of this root and waits until it and its
// components are gone. progress, when set, is told every 5 s.
func Stop(ctx context.Context, fs fsys.FS, timeout time.Duration, progress func(time.Duration)) error {
	pid := Running(fs)
	if pid == 0 {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping the kubeboot daemon (pid %d): %w", pid, err)
	}
	start := time.Now()
	last := start
	for Running(fs) != 0 {
		if time.Since(start) > timeout {
			return fmt.Errorf("the kubeboot daemon (pid %d) did not stop within %s", pid, timeout)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if progress != nil && time.Since(last) > 5*time.Second {
			last = time.Now()
			progress(time.Since(start))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// StopComponent makes the running daemon stop one component: its spec is
// removed and the daemon told to re-read the spec directory. It waits
// until the daemon's status no longer shows the component running.
func StopComponent(ctx context.Context, fs fsys.FS, name string, timeout time.Duration) error {
	if err := os.Remove(fs.Path(component.SpecPath(name))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	pid := Running(fs)
	if pid == 0 {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		r, err := ReadStatus(fs)
		if err == nil {
			running := false
			for _, c := range r.Components {
				if c.Name == name && c.PID != 0 {
					running = true
				}
			}
			if !running && r.Updated.After(time.Now().Add(-time.Minute)) {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the kubeboot daemon did not stop %s within %s", name, timeout)
}
