package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/runtime/component"
)

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func statusOf(s *Supervisor, name string) (Status, bool) {
	for _, st := range s.Statuses() {
		if st.Name == name {
			return st, true
		}
	}
	return Status{}, false
}

func TestStartRestartStop(t *testing.T) {
	dir := t.TempDir()
	var s *Supervisor
	// OnChange reads the statuses, as the daemon does, while Apply stops
	// and starts components.
	s = New(Options{LogDir: dir, StopTimeout: 2 * time.Second, OnChange: func() { s.Statuses() }})
	a := component.Spec{Name: "a", Exec: "/bin/sleep", Args: []string{"30"}}
	b := component.Spec{Name: "b", Exec: "/bin/sleep", Args: []string{"30"}, After: []string{"a"}}
	s.Apply([]component.Spec{a, b})
	waitFor(t, "both running", func() bool {
		sa, _ := statusOf(s, "a")
		sb, _ := statusOf(s, "b")
		return sa.Ready && sb.Ready
	})
	old, _ := statusOf(s, "a")
	if err := syscall.Kill(old.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a restarted", func() bool {
		st, _ := statusOf(s, "a")
		return st.Ready && st.PID != old.PID && st.Restarts == 1
	})
	if st, _ := statusOf(s, "a"); !strings.Contains(st.LastExit, "killed") {
		t.Errorf("last exit %q does not say it was killed", st.LastExit)
	}
	// Removing b stops it and leaves a running.
	sb, _ := statusOf(s, "b")
	s.Apply([]component.Spec{a})
	if _, ok := statusOf(s, "b"); ok {
		t.Error("b still listed after removal")
	}
	if syscall.Kill(sb.PID, 0) == nil {
		t.Error("b's process still runs after removal")
	}
	sa, _ := statusOf(s, "a")
	s.Stop()
	if syscall.Kill(sa.PID, 0) == nil {
		t.Error("a's process still runs after Stop")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.log")); !strings.Contains(string(b), "starting a") {
		t.Errorf("log of a: %q", b)
	}
}

func TestLogFileIsBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.log")
	l := &LogFile{Path: p, Max: 1000}
	line := []byte(strings.Repeat("x", 99) + "\n")
	for i := 0; i < 100; i++ {
		if _, err := l.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	for _, f := range []string{p, p + ".1"} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 1000 {
			t.Errorf("%s is %d bytes, bound is 1000", f, st.Size())
		}
	}
}

// TestRequiresWaitsForTheComponent: a component that requires another
// waits while that one is not even handed to the supervisor (After would
// let it start: the dependency may run elsewhere).
func TestRequiresWaitsForTheComponent(t *testing.T) {
	s := New(Options{LogDir: t.TempDir(), StopTimeout: 2 * time.Second})
	defer s.Stop()
	after := component.Spec{Name: "after", Exec: "/bin/sleep", Args: []string{"30"}, After: []string{"dep"}}
	requires := component.Spec{Name: "requires", Exec: "/bin/sleep", Args: []string{"30"}, Requires: []string{"dep"}}
	s.Apply([]component.Spec{after, requires})
	waitFor(t, "after running", func() bool { st, _ := statusOf(s, "after"); return st.Ready })
	time.Sleep(200 * time.Millisecond)
	if st, _ := statusOf(s, "requires"); st.PID != 0 || st.State != StateWaiting {
		t.Fatalf("requires started without its dependency: %+v", st)
	}
	dep := component.Spec{Name: "dep", Exec: "/bin/sleep", Args: []string{"30"}}
	s.Apply([]component.Spec{dep, after, requires})
	waitFor(t, "requires running once dep is", func() bool { st, _ := statusOf(s, "requires"); return st.Ready })
}

// An in-process component runs as a goroutine of the supervisor's own
// process, gets its spec, is ready when it says so, restarts when it
// fails, and is cancelled when removed.
func TestInProcess(t *testing.T) {
	var mu sync.Mutex
	runs, cancelled := 0, 0
	gate := make(chan struct{})
	agent := func(ctx context.Context, spec component.Spec, log io.Writer, ready func()) error {
		mu.Lock()
		runs++
		n := runs
		mu.Unlock()
		fmt.Fprintf(log, "args %v\n", spec.Args)
		if n == 1 {
			return errors.New("first run fails")
		}
		<-gate
		ready()
		<-ctx.Done()
		mu.Lock()
		cancelled++
		mu.Unlock()
		return nil
	}
	dir := t.TempDir()
	s := New(Options{LogDir: dir, StopTimeout: 2 * time.Second, InProcess: map[string]InProcessFunc{"agent": agent}})
	s.Apply([]component.Spec{{Name: "agent", Args: []string{"--x", "1"}}})
	waitFor(t, "agent started again after its failure", func() bool {
		st, _ := statusOf(s, "agent")
		return st.Restarts == 1 && st.State == StateStarting
	})
	time.Sleep(200 * time.Millisecond)
	if st, _ := statusOf(s, "agent"); st.Ready {
		t.Fatalf("ready before it said so: %+v", st)
	}
	close(gate)
	waitFor(t, "agent ready once it says so", func() bool {
		st, _ := statusOf(s, "agent")
		return st.Ready && st.Restarts == 1
	})
	st, _ := statusOf(s, "agent")
	if !st.InProcess || st.PID != os.Getpid() || st.LastExit != "first run fails" {
		t.Errorf("status %+v", st)
	}
	s.Apply(nil)
	mu.Lock()
	defer mu.Unlock()
	if cancelled != 1 {
		t.Errorf("cancelled %d times, want 1", cancelled)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "agent.log")); !strings.Contains(string(b), "args [--x 1]") {
		t.Errorf("log %q", b)
	}
}

// Restart stops one component and starts it again at once, with no
// back-off, and waits for it to be ready; its dependents keep running.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	s := New(Options{LogDir: dir, StopTimeout: 2 * time.Second})
	defer s.Stop()
	a := component.Spec{Name: "a", Exec: "/bin/sleep", Args: []string{"30"}}
	b := component.Spec{Name: "b", Exec: "/bin/sleep", Args: []string{"30"}, After: []string{"a"}}
	s.Apply([]component.Spec{a, b})
	waitFor(t, "both running", func() bool {
		sa, _ := statusOf(s, "a")
		sb, _ := statusOf(s, "b")
		return sa.Ready && sb.Ready
	})
	oldA, _ := statusOf(s, "a")
	oldB, _ := statusOf(s, "b")
	start := time.Now()
	if err := s.Restart(context.Background(), "a", "its kubeconfig changed", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > firstBackoff+time.Second {
		t.Errorf("the restart took %s: it waited for a back-off", took)
	}
	newA, _ := statusOf(s, "a")
	if newA.PID == oldA.PID || !newA.Ready || newA.Restarts != 1 || newA.LastExit != "restarted: its kubeconfig changed" {
		t.Errorf("after the restart: %+v (before %+v)", newA, oldA)
	}
	if sb, _ := statusOf(s, "b"); sb.PID != oldB.PID || sb.Restarts != 0 {
		t.Errorf("the dependent was restarted too: %+v", sb)
	}
	if err := s.Restart(context.Background(), "nope", "x", time.Second); err == nil {
		t.Error("restarting an unknown component: no error")
	}
}

// An in-process component restarts the same way.
func TestRestartInProcess(t *testing.T) {
	var mu sync.Mutex
	runs := 0
	agent := func(ctx context.Context, _ component.Spec, _ io.Writer, ready func()) error {
		mu.Lock()
		runs++
		mu.Unlock()
		ready()
		<-ctx.Done()
		return nil
	}
	s := New(Options{LogDir: t.TempDir(), StopTimeout: 2 * time.Second, InProcess: map[string]InProcessFunc{"agent": agent}})
	defer s.Stop()
	s.Apply([]component.Spec{{Name: "agent"}})
	waitFor(t, "agent running", func() bool { st, _ := statusOf(s, "agent"); return st.Ready })
	if err := s.Restart(context.Background(), "agent", "renewed", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if runs != 2 {
		t.Errorf("%d runs, want 2", runs)
	}
}

// A Prestart component's process starts before its dependency is ready,
// waits at the gate, and goes on once the dependency is ready.
func TestPrestartHoldsTheProcess(t *testing.T) {
	dir := t.TempDir()
	passed := filepath.Join(dir, "passed")
	s := New(Options{LogDir: dir, StopTimeout: 2 * time.Second})
	defer s.Stop()
	// What WaitGate does, in sh: read one byte from the gate's fd.
	held := component.Spec{Name: "held", Exec: "/bin/sh", Prestart: true, Requires: []string{"dep"},
		Args: []string{"-c", `[ "$` + GateEnv + `" = 3 ] && head -c1 <&3 >/dev/null && touch ` + passed + ` && exec sleep 30`}}
	s.Apply([]component.Spec{held})
	waitFor(t, "held started", func() bool { st, _ := statusOf(s, "held"); return st.PID != 0 })
	time.Sleep(300 * time.Millisecond)
	if st, _ := statusOf(s, "held"); st.State != StateWaiting || st.Ready {
		t.Fatalf("held before its dependency is ready: %+v", st)
	}
	if _, err := os.Stat(passed); err == nil {
		t.Fatal("the process went past the gate before its dependency was ready")
	}
	dep := component.Spec{Name: "dep", Exec: "/bin/sleep", Args: []string{"30"}}
	s.Apply([]component.Spec{dep, held})
	waitFor(t, "held let go on", func() bool { _, err := os.Stat(passed); return err == nil })
	waitFor(t, "held ready", func() bool { st, _ := statusOf(s, "held"); return st.Ready })
}
