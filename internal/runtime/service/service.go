// Package service runs kubeboot's own components (component.InDaemon),
// each from the typed configuration its spec carries (component.Own),
// through one lifecycle, as etcd's embed and k0s's component manager do:
// New makes one from its spec, Start starts it and returns once it runs
// (or with why it cannot), Ready is closed once it does its work, Stop
// ends it and waits; Done is closed when it ends by itself, and Err says
// why. The node daemon runs them in its own process (InProcess); `kubeboot
// --root R NAME` runs one by hand, under a debugger say (Run).
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/supervisor"
)

// Service is one of kubeboot's own components.
type Service struct {
	name string
	// start does what must succeed before the service runs (a listener,
	// a client) and returns the service's loop, which calls ready once it
	// does its work and returns when ctx ends.
	start func(ctx context.Context) (loop func(ctx context.Context, ready func()) error, err error)

	ready     chan struct{}
	readyOnce sync.Once
	done      chan struct{}
	cancel    context.CancelFunc
	err       error
}

func newService(name string, start func(ctx context.Context) (func(ctx context.Context, ready func()) error, error)) *Service {
	return &Service{name: name, start: start, ready: make(chan struct{}), done: make(chan struct{})}
}

// Name is the component's name.
func (s *Service) Name() string { return s.name }

// Start starts the service; it runs until ctx ends or Stop is called.
func (s *Service) Start(ctx context.Context) error {
	if s.cancel != nil {
		return fmt.Errorf("%s: started twice", s.name)
	}
	ctx, cancel := context.WithCancel(ctx)
	loop, err := s.start(ctx)
	if err != nil {
		cancel()
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.cancel = cancel
	go func() {
		defer close(s.done)
		err := loop(ctx, func() { s.readyOnce.Do(func() { close(s.ready) }) })
		if err == nil && ctx.Err() == nil {
			err = errors.New("ended by itself")
		}
		if err != nil && ctx.Err() == nil {
			s.err = fmt.Errorf("%s: %w", s.name, err)
		}
	}()
	return nil
}

// Ready is closed once the service does its work.
func (s *Service) Ready() <-chan struct{} { return s.ready }

// Done is closed once the service has ended, by itself or by Stop.
func (s *Service) Done() <-chan struct{} { return s.done }

// Err is why the service ended by itself; nil while it runs and after Stop.
func (s *Service) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Stop ends the service and waits until it has, at most timeout.
func (s *Service) Stop(timeout time.Duration) error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	select {
	case <-s.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s did not stop within %s", s.name, timeout)
	}
}

// Run starts the service, reports it ready, and stops it when ctx ends;
// it returns why it ended by itself.
func (s *Service) Run(ctx context.Context, ready func()) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	select {
	case <-s.ready:
		ready()
	case <-s.done:
		return s.Err()
	case <-ctx.Done():
	}
	select {
	case <-s.done:
		return s.Err()
	case <-ctx.Done():
		// The supervisor bounds how long it waits for the goroutine.
		<-s.done
		return nil
	}
}

// InProcess is what the node daemon's supervisor runs kubeboot's own
// components with, in its own process: each from its spec's Own.
func InProcess(fs fsys.FS) map[string]supervisor.InProcessFunc {
	m := map[string]supervisor.InProcessFunc{}
	for _, name := range component.InDaemon {
		m[name] = func(ctx context.Context, spec component.Spec, log io.Writer, ready func()) error {
			s, err := New(fs, spec, logf(log))
			if err != nil {
				return err
			}
			return s.Run(ctx, ready)
		}
	}
	return m
}

// RunNamed runs the component name of the node under fs from its spec,
// until ctx ends: `kubeboot --root R NAME`, by hand.
func RunNamed(ctx context.Context, fs fsys.FS, name string, log io.Writer) error {
	spec, ok, err := component.Store{FS: fs}.Get(name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("this node has no %s spec (%s)", name, fs.Path(component.SpecPath(name)))
	}
	s, err := New(fs, spec, logf(log))
	if err != nil {
		return err
	}
	return s.Run(ctx, func() { fmt.Fprintf(log, "%s is ready\n", name) })
}

// logf logs as the daemon's other components do, one timestamped line.
func logf(w io.Writer) func(format string, args ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
	}
}
