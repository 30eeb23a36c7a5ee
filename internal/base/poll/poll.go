// Package poll waits for a condition with a progress line, on
// k8s.io/apimachinery's wait: the one loop kubeboot's waits share
// ("Still waiting for … (12s so far)", see Progress).
package poll

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Expired is Until's error when its context ends before the condition
// holds.
type Expired struct {
	// Waited is how long Until waited.
	Waited time.Duration
	// Last is the condition's last error (the context's, if it never
	// ran).
	Last error
}

func (e *Expired) Error() string { return e.Last.Error() }
func (e *Expired) Unwrap() error { return e.Last }

// stop marks an error that ends the wait.
type stop struct{ err error }

func (s stop) Error() string { return s.err.Error() }

// Stop wraps an error of the condition that no retry will cure: Until
// returns it at once.
func Stop(err error) error { return stop{err} }

// Until calls cond at once, then every interval, until it returns nil
// (Until returns nil) or a Stop error (Until returns what it wraps);
// when ctx ends first, it returns an *Expired. Every `every` of waiting,
// progress (if not nil) is told how long it has waited and cond's last
// error.
func Until(ctx context.Context, interval, every time.Duration, progress func(waited time.Duration, last error), cond func(context.Context) error) error {
	start := time.Now()
	said := start
	var last error
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		err := cond(ctx)
		if err == nil {
			return true, nil
		}
		if s, ok := err.(stop); ok {
			return false, s
		}
		if ctx.Err() != nil && last != nil {
			// Cut short by the end of the wait: the failure before says
			// more than "context deadline exceeded".
			return false, nil
		}
		last = err
		if progress != nil && time.Since(said) >= every {
			said = time.Now()
			progress(time.Since(start), last)
		}
		return false, nil
	})
	var s stop
	switch {
	case err == nil:
		return nil
	case errors.As(err, &s):
		return s.err
	}
	if last == nil {
		last = err
	}
	return &Expired{Waited: time.Since(start), Last: last}
}

// Progress is Until's progress as kubeadm words it: a line "[phase]
// Still waiting for what (12s so far)" through logf, followed by ": " and
// the condition's last error when withLast (where that error says more
// than the line).
func Progress(logf func(format string, args ...any), phase, what string, withLast bool) func(waited time.Duration, last error) {
	return func(waited time.Duration, last error) {
		line := fmt.Sprintf("[%s] Still waiting for %s (%s so far)", phase, what, waited.Round(time.Second))
		if withLast && last != nil {
			line += fmt.Sprintf(": %v", last)
		}
		logf("%s", line)
	}
}
