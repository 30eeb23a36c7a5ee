// Package supervisor runs components as child processes of the node
// daemon: each starts once the components it depends on are ready, is
// probed for readiness, is restarted with back-off when it exits, and is
// stopped in reverse dependency order.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/poll"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
)

// States a component goes through.
const (
	StateWaiting  = "waiting"  // for its dependencies
	StateStarting = "starting" // running, not ready yet
	StateRunning  = "running"  // ready
	StateBackoff  = "backoff"  // exited, restarting soon
	StateStopped  = "stopped"
)

// Status is one component as `kubeboot status` shows it.
type Status struct {
	Name     string    `json:"name"`
	PID      int       `json:"pid,omitempty"`
	State    string    `json:"state"`
	Ready    bool      `json:"ready"`
	Restarts int       `json:"restarts"`
	LogFile  string    `json:"logFile"`
	Since    time.Time `json:"since"`
	LastExit string    `json:"lastExit,omitempty"`
	// InProcess says the component runs inside the supervisor's own
	// process (PID is the supervisor's).
	InProcess bool `json:"inProcess,omitempty"`
}

// InProcessFunc runs a component inside the supervisor's process until ctx
// ends or it fails, writing its log to log. It calls ready once the
// component does its work; its spec's probe, if any, must pass too.
type InProcessFunc func(ctx context.Context, spec component.Spec, log io.Writer, ready func()) error

// Options tune a supervisor; zero values take the defaults.
type Options struct {
	// Exe is the binary components are run from (argv[0] = the name).
	Exe string
	// LogDir receives <component>.log files.
	LogDir string
	// LogMax bounds each log file (default 10 MiB, plus one rotated file).
	LogMax int64
	// StopTimeout is how long a component gets to exit after SIGTERM.
	StopTimeout time.Duration
	// Logf reports the supervisor's own events.
	Logf func(format string, args ...any)
	// OnChange is called after every state change.
	OnChange func()
	// Started, when set, is called with each process right after it
	// starts (the daemon places it in its CPU group).
	Started func(spec component.Spec, pid int)
	// LinkDir, when set, holds a link to Exe per component, named after
	// it, through which the component is started: its process then has
	// the component's name (ps -C kube-apiserver, monitoring agents), not
	// the binary's.
	LinkDir string
	// Env is every component's whole environment; nil means none.
	Env []string
	// Dir is every component's working directory; empty means the
	// supervisor's own.
	Dir string
	// InProcess runs the named components as goroutines of the
	// supervisor's own process, with the spec's args, instead of as
	// processes of their own: one process fewer for a small component.
	InProcess map[string]InProcessFunc
}

// Supervisor runs a set of components.
type Supervisor struct {
	opts  Options
	mu    sync.Mutex
	procs map[string]*proc
	order []string
}

// New returns a supervisor with nothing running.
func New(o Options) *Supervisor {
	if o.LogMax == 0 {
		o.LogMax = 10 << 20
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 20 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.OnChange == nil {
		o.OnChange = func() {}
	}
	return &Supervisor{opts: o, procs: map[string]*proc{}}
}

type proc struct {
	spec   component.Spec
	cancel context.CancelFunc
	done   chan struct{}
	log    *LogFile

	mu     sync.Mutex
	status Status
	cmd    *exec.Cmd
	// stopRun ends the current run only (Restart); restartWhy says why,
	// so the loop starts it again at once rather than after a back-off.
	stopRun    context.CancelFunc
	restartWhy string
}

func (p *proc) set(f func(*Status)) {
	p.mu.Lock()
	f(&p.status)
	p.mu.Unlock()
}

func (p *proc) get() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// Apply makes the running set match specs (given in dependency order):
// new components start, changed ones restart, removed ones stop.
func (s *Supervisor) Apply(specs []component.Spec) {
	s.mu.Lock()
	want := map[string]component.Spec{}
	for _, sp := range specs {
		want[sp.Name] = sp
	}
	var stop []*proc
	var kept []string
	for i := len(s.order) - 1; i >= 0; i-- {
		name := s.order[i]
		p := s.procs[name]
		if sp, ok := want[name]; !ok || !reflect.DeepEqual(sp, p.spec) {
			stop = append(stop, p)
			delete(s.procs, name)
			continue
		}
		kept = append([]string{name}, kept...)
	}
	s.order = kept
	s.mu.Unlock()
	for _, p := range stop {
		s.opts.Logf("stopping %s (removed or changed)", p.spec.Name)
		s.stopProc(p)
	}
	s.mu.Lock()
	s.order = s.order[:0]
	for _, sp := range specs {
		s.order = append(s.order, sp.Name)
		if _, ok := s.procs[sp.Name]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		p := &proc{spec: sp, cancel: cancel, done: make(chan struct{}),
			log:    &LogFile{Path: filepath.Join(s.opts.LogDir, sp.Name+".log"), Max: s.opts.LogMax},
			status: Status{Name: sp.Name, State: StateWaiting, LogFile: filepath.Join(s.opts.LogDir, sp.Name+".log"), Since: time.Now()}}
		s.procs[sp.Name] = p
		go s.loop(ctx, p)
	}
	s.mu.Unlock()
	s.opts.OnChange()
}

// Statuses returns every component's status, in dependency order.
func (s *Supervisor) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, 0, len(s.order))
	for _, n := range s.order {
		if p, ok := s.procs[n]; ok {
			out = append(out, p.get())
		}
	}
	return out
}

// Restart stops one running component and starts it again at once (no
// back-off), saying why in its status and log, and waits until it is
// ready again or timeout passes. Components that depend on it keep
// running: a restart is not a change of spec.
func (s *Supervisor) Restart(ctx context.Context, name, why string, timeout time.Duration) error {
	s.mu.Lock()
	p, ok := s.procs[name]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s does not run here", name)
	}
	p.mu.Lock()
	stop := p.stopRun
	if stop != nil {
		p.restartWhy = why
	}
	p.mu.Unlock()
	if stop == nil {
		return fmt.Errorf("%s is not running (%s)", name, p.get().State)
	}
	s.opts.Logf("restarting %s: %s", name, why)
	stop()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The loop resets restartWhy when the run ended, then the new run's
	// probe sets Ready.
	var st Status
	err := poll.Until(wctx, 50*time.Millisecond, 0, nil, func(context.Context) error {
		p.mu.Lock()
		pending := p.restartWhy != ""
		p.mu.Unlock()
		st = p.get()
		if !pending && st.Ready && st.State == StateRunning {
			return nil
		}
		select {
		case <-p.done:
			return poll.Stop(fmt.Errorf("%s was stopped while restarting", name))
		default:
		}
		return fmt.Errorf("%s is %s", name, st.State)
	})
	var exp *poll.Expired
	switch {
	case !errors.As(err, &exp):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%s was not ready within %s of its restart (%s)", name, timeout, st.State)
}

func (s *Supervisor) ready(name string, required bool) bool {
	s.mu.Lock()
	p, ok := s.procs[name]
	s.mu.Unlock()
	if !ok {
		// A dependency that is not ours to run (external etcd) does not
		// block, unless it is required to run here.
		return !required
	}
	return p.get().Ready
}

// Stop stops every component in reverse dependency order.
func (s *Supervisor) Stop() {
	s.mu.Lock()
	var procs []*proc
	for i := len(s.order) - 1; i >= 0; i-- {
		procs = append(procs, s.procs[s.order[i]])
	}
	s.procs, s.order = map[string]*proc{}, nil
	s.mu.Unlock()
	for _, p := range procs {
		s.stopProc(p)
	}
}

func (s *Supervisor) stopProc(p *proc) {
	p.cancel()
	<-p.done
	p.log.Close()
}

// Back-off between restarts: quick for a crash after a long good run,
// growing for a component that keeps failing.
const (
	firstBackoff = 200 * time.Millisecond
	maxBackoff   = 10 * time.Second
	healthyRun   = 30 * time.Second
)

func (s *Supervisor) loop(ctx context.Context, p *proc) {
	defer close(p.done)
	backoff := firstBackoff
	for {
		// A Prestart component waits for its dependencies in runOnce,
		// its process started and held.
		if !p.spec.Prestart && !s.waitDeps(ctx, p) {
			break
		}
		started := time.Now()
		runCtx, stopRun := context.WithCancel(ctx)
		p.mu.Lock()
		p.stopRun, p.restartWhy = stopRun, ""
		p.mu.Unlock()
		exitErr := s.runOnce(runCtx, p)
		stopRun()
		if ctx.Err() != nil {
			break
		}
		p.mu.Lock()
		why := p.restartWhy
		p.stopRun, p.restartWhy = nil, ""
		p.mu.Unlock()
		if why != "" {
			p.set(func(st *Status) {
				st.State, st.Ready, st.PID, st.Since = StateWaiting, false, 0, time.Now()
				st.Restarts++
				st.LastExit = "restarted: " + why
			})
			s.opts.OnChange()
			continue
		}
		if time.Since(started) > healthyRun {
			backoff = firstBackoff
		}
		p.set(func(st *Status) {
			st.State, st.Ready, st.PID, st.Since = StateBackoff, false, 0, time.Now()
			st.Restarts++
			st.LastExit = exitErr
		})
		s.opts.OnChange()
		s.opts.Logf("%s exited (%s); restarting in %s", p.spec.Name, exitErr, backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		if ctx.Err() != nil {
			break
		}
		backoff = min(2*backoff, maxBackoff)
	}
	p.set(func(st *Status) { st.State, st.Ready, st.PID, st.Since = StateStopped, false, 0, time.Now() })
	s.opts.OnChange()
}

func (s *Supervisor) waitDeps(ctx context.Context, p *proc) bool {
	err := poll.Until(ctx, 50*time.Millisecond, 0, nil, func(context.Context) error {
		all := true
		for _, d := range p.spec.After {
			if !s.ready(d, false) {
				all = false
			}
		}
		for _, d := range p.spec.Requires {
			if !s.ready(d, true) {
				all = false
			}
		}
		if all {
			return nil
		}
		p.set(func(st *Status) {
			if st.State != StateWaiting {
				st.State, st.Since = StateWaiting, time.Now()
			}
		})
		return errors.New("dependencies not ready")
	})
	return err == nil
}

// runOnce starts the component, probes it while it runs, and returns how
// it exited. Cancelling ctx stops it: SIGTERM, then SIGKILL after
// StopTimeout.
func (s *Supervisor) runOnce(ctx context.Context, p *proc) string {
	for _, d := range p.spec.Dirs {
		if err := os.MkdirAll(d.Path, d.Mode); err != nil {
			return fmt.Sprintf("creating %s: %v", d.Path, err)
		}
		if err := os.Chmod(d.Path, d.Mode); err != nil {
			return fmt.Sprintf("chmod %s: %v", d.Path, err)
		}
	}
	if run, ok := s.opts.InProcess[p.spec.Name]; ok && p.spec.Exec == "" {
		return s.runInProcess(ctx, p, run)
	}
	exe := s.opts.Exe
	if p.spec.Exec != "" {
		exe = p.spec.Exec
	} else if s.opts.LinkDir != "" {
		link, err := s.link(p.spec.Name)
		if err != nil {
			return err.Error()
		}
		exe = link
	}
	cmd := &exec.Cmd{
		Dir:  s.opts.Dir,
		Path: exe,
		Args: append([]string{p.spec.Name}, p.spec.Args...),
		Env:  append([]string{}, s.opts.Env...),
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid: true,
			// Children must not outlive the daemon: a killed daemon takes its
			// components with it rather than leaving them unsupervised.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	fmt.Fprintf(p.log, "==== %s starting %s\n", time.Now().Format(time.RFC3339Nano), p.spec.Name)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	var gate *os.File
	if p.spec.Prestart {
		r, w, err := os.Pipe()
		if err != nil {
			return err.Error()
		}
		defer w.Close()
		gate = w
		cmd.ExtraFiles = []*os.File{r} // fd 3
		cmd.Env = append(cmd.Env, GateEnv+"=3")
		defer r.Close()
	}
	if err := cmd.Start(); err != nil {
		return err.Error()
	}
	if gate != nil {
		cmd.ExtraFiles[0].Close() // the child's end
	}
	if s.opts.Started != nil {
		s.opts.Started(p.spec, cmd.Process.Pid)
	}
	state := StateStarting
	if gate != nil {
		state = StateWaiting
	}
	p.set(func(st *Status) {
		st.PID, st.State, st.Ready, st.Since = cmd.Process.Pid, state, false, time.Now()
	})
	s.opts.OnChange()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if gate != nil {
		s.opts.Logf("started %s (pid %d), held until %s ready", p.spec.Name, cmd.Process.Pid, strings.Join(append(slices.Clone(p.spec.After), p.spec.Requires...), ", "))
		deps := make(chan bool, 1)
		depsCtx, stopDeps := context.WithCancel(ctx)
		go func() { deps <- s.waitDeps(depsCtx, p) }()
		select {
		case err := <-exited:
			stopDeps()
			return exitString(err)
		case ok := <-deps:
			stopDeps()
			if ok {
				_, err := gate.Write([]byte{1})
				gate.Close()
				if err != nil {
					s.opts.Logf("letting %s go on: %v", p.spec.Name, err)
				}
				p.set(func(st *Status) { st.State, st.Since = StateStarting, time.Now() })
				s.opts.OnChange()
				s.opts.Logf("let %s go on", p.spec.Name)
			}
		}
	} else {
		s.opts.Logf("started %s (pid %d)", p.spec.Name, cmd.Process.Pid)
	}
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	go s.probe(probeCtx, p)
	select {
	case err := <-exited:
		return exitString(err)
	case <-ctx.Done():
	}
	stopProbe()
	// Stop: the whole process group, politely first.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-exited:
		s.opts.Logf("stopped %s", p.spec.Name)
		return exitString(err)
	case <-time.After(s.opts.StopTimeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err := <-exited
		s.opts.Logf("killed %s after %s", p.spec.Name, s.opts.StopTimeout)
		return exitString(err)
	}
}

// runInProcess runs one in-process component until it returns or ctx ends.
func (s *Supervisor) runInProcess(ctx context.Context, p *proc, run InProcessFunc) string {
	fmt.Fprintf(p.log, "==== %s starting %s (in the daemon's process)\n", time.Now().Format(time.RFC3339Nano), p.spec.Name)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.set(func(st *Status) {
		st.PID, st.State, st.Ready, st.Since, st.InProcess = os.Getpid(), StateStarting, false, time.Now(), true
	})
	s.opts.OnChange()
	s.opts.Logf("started %s in the daemon's process", p.spec.Name)
	exited := make(chan error, 1)
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	var probing sync.Once
	go func() {
		exited <- run(runCtx, p.spec, p.log, func() { probing.Do(func() { go s.probe(probeCtx, p) }) })
	}()
	var err error
	select {
	case err = <-exited:
	case <-ctx.Done():
		cancel()
		select {
		case err = <-exited:
			s.opts.Logf("stopped %s", p.spec.Name)
		case <-time.After(s.opts.StopTimeout):
			// A goroutine cannot be killed: it is left to end on its own.
			s.opts.Logf("%s did not stop within %s", p.spec.Name, s.opts.StopTimeout)
			return "did not stop"
		}
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// link makes (or keeps) LinkDir/name, a symbolic link to Exe.
func (s *Supervisor) link(name string) (string, error) {
	link := filepath.Join(s.opts.LinkDir, name)
	_, err := fsys.Symlink(s.opts.Exe, link)
	return link, err
}

func exitString(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// probe polls readiness quickly until the component is ready, then every
// 2 s to notice it going unready.
func (s *Supervisor) probe(ctx context.Context, p *proc) {
	interval := 50 * time.Millisecond
	for {
		ready := p.spec.Probe.Empty() || p.spec.Probe.Check(ctx) == nil
		if ctx.Err() != nil {
			return
		}
		changed := false
		p.set(func(st *Status) {
			if st.Ready != ready {
				changed = true
				st.Ready = ready
				if ready {
					st.State = StateRunning
				} else {
					st.State = StateStarting
				}
			}
		})
		if changed {
			s.opts.OnChange()
			if ready {
				s.opts.Logf("%s is ready", p.spec.Name)
			}
		}
		if ready {
			interval = 2 * time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

var _ io.Writer = (*LogFile)(nil)

// GateEnv names the file descriptor on which a Prestart component's
// process waits for its dependencies (see WaitGate).
const GateEnv = "KUBEBOOT_GATE_FD"

// WaitGate is the process side of Prestart: when the supervisor started
// this process held, it blocks until the supervisor lets it go on, and
// reports false if the supervisor closed the gate without (it is stopping
// the component). Without a gate it returns true at once.
func WaitGate() bool {
	v, ok := os.LookupEnv(GateEnv)
	if !ok {
		return true
	}
	os.Unsetenv(GateEnv) // not for the component's own children
	fd, err := strconv.Atoi(v)
	if err != nil {
		return true
	}
	f := os.NewFile(uintptr(fd), "gate")
	defer f.Close()
	var b [1]byte
	n, _ := f.Read(b[:])
	return n == 1
}
