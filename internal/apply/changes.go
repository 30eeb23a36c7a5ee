package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// changes are the steps apply ran, or runs, that change hosts (reset,
// init, join, upload-certs): when apply is cancelled (Ctrl-C), it sends
// SIGTERM to the remote kubeboot and closes the session, but what runs
// there may finish its step anyway, or stop half-way. A step that had
// started and not finished when apply was cancelled leaves its host
// changed, or not: the operator is told which hosts those are.
type changes struct {
	mu sync.Mutex
	// running is the step under way on each host, by name; done the
	// steps that completed.
	running map[string]string
	done    map[string][]string
}

// change runs f, the remote step what of h.
func (a *applyRun) change(ctx context.Context, h *applyHost, what string, f func() error) error {
	c := &a.changes
	c.mu.Lock()
	if c.running == nil {
		c.running, c.done = map[string]string{}, map[string][]string{}
	}
	c.running[h.Name()] = what
	c.mu.Unlock()
	err := f()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && ctx.Err() != nil {
		return err // cancelled under way: it stays running, as far as apply knows
	}
	delete(c.running, h.Name())
	if err == nil {
		c.done[h.Name()] = append(c.done[h.Name()], what)
	}
	return err
}

// interrupted says, after apply was cancelled with err, which hosts may
// have changed and which did, and returns err with the former.
func (a *applyRun) interrupted(err error) error {
	c := &a.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	list := func(m map[string]string) string {
		var s []string
		for _, h := range slices.Sorted(maps.Keys(m)) {
			s = append(s, h+" ("+m[h]+")")
		}
		return strings.Join(s, ", ")
	}
	done := map[string]string{}
	for h, steps := range c.done {
		done[h] = strings.Join(steps, ", ")
	}
	if len(c.running) == 0 && len(done) == 0 {
		a.logf("", "interrupted before any host was changed")
		return fmt.Errorf("%w: no host was changed", err)
	}
	if len(done) > 0 {
		a.logf("", "interrupted: changed before it: %s", list(done))
	}
	if len(c.running) == 0 {
		a.logf("", "interrupted between steps: no other host was changed")
		return err
	}
	may := list(c.running)
	a.logf("", "interrupted: these hosts may have changed: %s: the step had started there and had not finished; it may go on to its end or stop half-way. Apply again resets what did not finish and runs it again", may)
	return fmt.Errorf("%w: these hosts may have changed: %s", err, may)
}
