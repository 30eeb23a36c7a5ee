package daemon

import (
	"context"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/kubeboot/kubeboot/internal/runtime/component"
)

// restartTimeout bounds how long the daemon waits for a restarted
// component to be ready before it restarts the next one.
const restartTimeout = 2 * time.Minute

// fileStamp tells one version of a file from the next: renewals write
// through a temporary file and a rename, so the inode changes too.
type fileStamp struct {
	mod   time.Time
	size  int64
	inode uint64
}

func stampOf(path string) (fileStamp, bool) {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, false
	}
	s := fileStamp{mod: st.ModTime(), size: st.Size()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.inode = sys.Ino
	}
	return s, true
}

// restarter restarts, one at a time and each until it is ready again, the
// components whose RestartOn files changed: a renewed kubeconfig reaches
// the controller-manager and the scheduler without an operator, and the
// API server, which reloads its certificates by itself, is never among
// them.
type restarter struct {
	logf    func(format string, args ...any)
	restart func(ctx context.Context, name, why string, timeout time.Duration) error

	seen map[string]fileStamp // by path, as last seen; used by check only

	mu      sync.Mutex
	pending []restartRequest
	wake    chan struct{}
}

// restartRequest is one queued restart; prefix begins its log lines.
type restartRequest struct{ name, why, prefix string }

func newRestarter(logf func(string, ...any), restart func(context.Context, string, string, time.Duration) error) *restarter {
	return &restarter{logf: logf, restart: restart, seen: map[string]fileStamp{}, wake: make(chan struct{}, 1)}
}

// check compares every RestartOn file of specs with the version last seen
// and queues a restart of each component one of whose files changed or
// appeared. A file seen for the first time is what the component starts
// with; one removed restarts nothing.
func (r *restarter) check(specs []component.Spec) {
	changed := map[string]bool{}
	for _, s := range specs {
		for _, f := range s.RestartOn {
			if _, done := changed[f]; done {
				continue
			}
			// An absent file is remembered as the zero stamp: one that
			// appears later (the CA agent's first record) is a change.
			now, ok := stampOf(f)
			before, known := r.seen[f]
			r.seen[f] = now
			changed[f] = ok && known && now != before
		}
	}
	for _, s := range specs {
		for _, f := range s.RestartOn {
			if changed[f] {
				r.enqueue(s.Name, f+" changed, and it reads it only at start", "[certs]")
				break
			}
		}
	}
}

func (r *restarter) enqueue(name, why, prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.ContainsFunc(r.pending, func(q restartRequest) bool { return q.name == name }) {
		return
	}
	r.pending = append(r.pending, restartRequest{name, why, prefix})
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run restarts the queued components in order until ctx ends.
func (r *restarter) run(ctx context.Context) {
	for {
		r.mu.Lock()
		var next *restartRequest
		if len(r.pending) > 0 {
			next = &r.pending[0]
		}
		r.mu.Unlock()
		if next == nil {
			select {
			case <-ctx.Done():
				return
			case <-r.wake:
			}
			continue
		}
		start := time.Now()
		if err := r.restart(ctx, next.name, next.why, restartTimeout); err != nil {
			r.logf("%s restarting %s: %v", next.prefix, next.name, err)
		} else {
			r.logf("%s %s restarted and ready in %s", next.prefix, next.name, time.Since(start).Round(time.Millisecond))
		}
		r.mu.Lock()
		r.pending = r.pending[1:]
		r.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}
