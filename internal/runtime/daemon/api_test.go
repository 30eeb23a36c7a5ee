package daemon

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/supervisor"
)

// runDaemon runs a daemon of a new root with the given specs until the
// test ends, its CPU groups in a directory of the test's.
func runDaemon(t *testing.T, noAPI bool, specs ...component.Spec) fsys.FS {
	fs, _ := startDaemon(t, noAPI, specs...)
	return fs
}

// startDaemon is runDaemon that also returns what stops the daemon and
// waits until its Run returned.
func startDaemon(t *testing.T, noAPI bool, specs ...component.Spec) (fsys.FS, func()) {
	t.Helper()
	old := cpugroup.Root
	cpugroup.Root = t.TempDir()
	t.Cleanup(func() { cpugroup.Root = old })
	fs := fsys.NewRoot(t.TempDir())
	for _, s := range specs {
		if err := (component.Store{FS: fs}).Write(s); err != nil {
			t.Fatal(err)
		}
	}
	d := New(fs, "/bin/false", io.Discard, nil)
	d.noAPI = noAPI
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := d.Run(ctx); err != nil {
			t.Errorf("daemon: %v", err)
		}
	}()
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	deadline := time.Now().Add(10 * time.Second)
	for Running(fs) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not write its pid within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fs, stop
}

func sleeper(name string) component.Spec {
	return component.Spec{Name: name, Exec: "/bin/sleep", Args: []string{"300"}}
}

func statusOf(t *testing.T, c *Client, name string) supervisor.Status {
	t.Helper()
	r, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(r.Components, func(s supervisor.Status) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("no %s in the status: %+v", name, r.Components)
	}
	return r.Components[i]
}

// Each operation of the API answers once it is done, as the status then
// shows, and the socket is root's alone.
func TestAPI(t *testing.T) {
	fs := runDaemon(t, false, sleeper("a"), sleeper("b"))
	ctx := context.Background()
	st, err := os.Stat(fs.Path(SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("the socket's mode is %v, want 0600", st.Mode().Perm())
	}
	c := NewClient(fs)

	// A watch sees every change from here on.
	wctx, stopWatch := context.WithCancel(ctx)
	var seen []string
	var seenMu sync.Mutex
	watched := make(chan error, 1)
	go func() {
		watched <- c.Watch(wctx, func(r StatusReport) bool {
			seenMu.Lock()
			defer seenMu.Unlock()
			for _, s := range r.Components {
				seen = append(seen, s.Name+"="+s.State)
			}
			return true
		})
	}()

	// Restart: answered once a new process runs.
	before := statusOf(t, c, "a")
	for before.PID == 0 || !before.Ready {
		time.Sleep(20 * time.Millisecond)
		before = statusOf(t, c, "a")
	}
	if err := c.Restart(ctx, "a", "a test", true, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if after := statusOf(t, c, "a"); after.PID == before.PID || after.PID == 0 || !after.Ready || after.Restarts != before.Restarts+1 {
		t.Errorf("after the restart a is %+v, before %+v", after, before)
	}

	// Swap and restore.
	if err := c.Swap(ctx, "b", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if s := statusOf(t, c, "b"); s.State != StateSwapped {
		t.Errorf("after the swap b is %+v", s)
	}
	if _, err := os.Stat(fs.Path(filepath.Join(SwapDir, "b"))); err != nil {
		t.Errorf("the swap is not recorded on disk: %v", err)
	}
	if err := c.Restore(ctx, "b", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if s := statusOf(t, c, "b"); s.State == StateSwapped || !s.Ready {
		t.Errorf("after the restore b is %+v", s)
	}
	if err := c.Restore(ctx, "b", 30*time.Second); err == nil || !strings.Contains(err.Error(), "not swapped out") {
		t.Errorf("a second restore: %v, want that b is not swapped out", err)
	}

	// A new spec: answered once the new process runs.
	sp := sleeper("b")
	sp.Args = []string{"301"}
	if err := c.ReplaceSpec(ctx, sp, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(statusOf(t, c, "b").PID), "cmdline")); !strings.Contains(string(cmdline), "301") {
		t.Errorf("b runs %q after the new spec", cmdline)
	}

	// Stop one for good.
	if err := c.StopComponent(ctx, "a", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Status(ctx)
	if slices.ContainsFunc(r.Components, func(s supervisor.Status) bool { return s.Name == "a" }) {
		t.Errorf("a still in the status after it stopped: %+v", r.Components)
	}

	// Errors say what is wrong.
	if err := c.Restart(ctx, "nope", "", false, time.Second); err == nil || !strings.Contains(err.Error(), `no component "nope"`) {
		t.Errorf("restart of an unknown component: %v", err)
	}
	if err := c.Restore(ctx, "a", time.Second); err == nil || !strings.Contains(err.Error(), "not swapped out") {
		t.Errorf("restore of a component not swapped: %v", err)
	}
	if err := c.call(ctx, "POST", "/components/b/restart", timeoutQuery(time.Second), "not a body", nil); err == nil || !strings.Contains(err.Error(), "restart:") {
		t.Errorf("a malformed restart: %v", err)
	}

	if err := c.call(ctx, "POST", "/components/..%2Fswapped%2Fb/restore", nil, nil, nil); err == nil || !strings.Contains(err.Error(), "not a component's name") {
		t.Errorf("a name with a slash: %v", err)
	}

	stopWatch()
	if err := <-watched; err != nil {
		t.Errorf("watch: %v", err)
	}
	seenMu.Lock()
	defer seenMu.Unlock()
	for _, want := range []string{"a=" + supervisor.StateRunning, "b=" + StateSwapped, "b=" + supervisor.StateRunning} {
		if !slices.Contains(seen, want) {
			t.Errorf("the watch never saw %s (saw %v)", want, seen)
		}
	}
}

// A daemon of a release before the API (no socket, which a daemon that
// has one makes before it writes its pid) still takes the new specs an
// upgrade hands it, and reset's stops; what it cannot do is refused with
// what to do.
func TestClientOfADaemonBeforeTheAPI(t *testing.T) {
	fs := runDaemon(t, true, sleeper("a"), sleeper("b"))
	ctx := context.Background()
	c := NewClient(fs)
	if m, _ := c.mode(); m != legacy {
		t.Fatalf("mode %v, want legacy", m)
	}
	sp := sleeper("a")
	sp.Args = []string{"302"}
	if err := c.ReplaceSpec(ctx, sp, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(statusOf(t, c, "a").PID), "cmdline")); !strings.Contains(string(cmdline), "302") {
		t.Errorf("a runs %q after the new spec", cmdline)
	}
	if err := c.StopComponent(ctx, "b", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Swap(ctx, "a", time.Second); err == nil || !strings.Contains(err.Error(), "predates its API") {
		t.Errorf("swap on an old daemon: %v", err)
	}
}

// A root whose socket path would be too long is refused with what to do.
func TestListenRefusesALongPath(t *testing.T) {
	_, err := listen("/" + strings.Repeat("x", maxSocketPath))
	if err == nil || !strings.Contains(err.Error(), "shorter --root") {
		t.Fatalf("listen: %v", err)
	}
}

// While the daemon stops its components it holds its pid and its socket
// file (the server is closed): a client is told it stops, and never takes
// it for a daemon of before the API. The socket goes with the pid.
func TestClientOfAStoppingDaemon(t *testing.T) {
	slow := component.Spec{Name: "slow", Exec: "/bin/sh", Args: []string{"-c", `trap "sleep 1; exit 0" TERM; while :; do sleep 0.1; done`}}
	fs, stop := startDaemon(t, false, slow)
	c := NewClient(fs)
	for statusOf(t, c, "slow").PID == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	var told, watchTold error
	for {
		select {
		case <-stopped:
			if watchTold == nil || !strings.Contains(watchTold.Error(), "stopping") {
				t.Errorf("while the daemon stopped a watch was told %v, want that it stops", watchTold)
			}
			if _, err := os.Stat(fs.Path(SocketFile)); !os.IsNotExist(err) {
				t.Errorf("the socket outlives the daemon: %v", err)
			}
			if told == nil || !strings.Contains(told.Error(), "stopping") {
				t.Errorf("while the daemon stopped a client was told %v, want that it stops", told)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
		m, pid := c.mode()
		if pid != 0 && m != api {
			t.Fatalf("the stopping daemon (pid %d) passes for mode %v", pid, m)
		}
		if pid != 0 {
			if err := c.Reload(context.Background()); err != nil {
				told = err
			}
			if err := c.Watch(context.Background(), func(StatusReport) bool { return false }); err != nil {
				watchTold = err
			}
		}
	}
}
