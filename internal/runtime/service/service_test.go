package service

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
)

// The load balancer, made from the typed configuration of its spec, goes
// through the lifecycle: Start listens, Ready is closed, Stop closes the
// listener; nothing reports it ended by itself.
func TestAPIServerLBLifecycle(t *testing.T) {
	dir := t.TempDir()
	fs := fsys.NewRoot(dir)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cert, err := pki.NewSelfSignedCA("test-ca", key, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pki.EncodeCertPEM(cert), 0o644); err != nil {
		t.Fatal(err)
	}
	// A free port, then the spec names it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	spec := component.Spec{Name: component.APIServerLB, Own: &component.Own{Config: &component.APIServerLBConfig{
		Listen: listen, Seed: "127.0.0.1:1", CAFile: caFile}}}
	s, err := New(fs, spec, func(f string, a ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("not ready within 5 s")
	}
	c, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatalf("ready but not listening: %v", err)
	}
	c.Close()
	if err := s.Err(); err != nil {
		t.Errorf("running, yet Err = %v", err)
	}
	if err := s.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", listen); err == nil {
		c.Close()
		t.Error("still listening after Stop")
	}
	if err := s.Err(); err != nil {
		t.Errorf("stopped, yet Err = %v", err)
	}

	// What it cannot start without is Start's error, naming it.
	component.OwnOf[*component.APIServerLBConfig](spec.Own).CAFile = filepath.Join(dir, "missing.crt")
	s, _ = New(fs, spec, func(string, ...any) {})
	if err := s.Start(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "apiserver-lb: ") {
		t.Errorf("Start without its CA file: %v", err)
	}
	// A spec without its configuration is refused.
	if _, err := New(fs, component.Spec{Name: component.CSRApprover}, func(string, ...any) {}); err == nil {
		t.Error("New of a spec without Own: no error")
	}
}

// A service that ends by itself closes Done with why; Run returns it
// without reporting it ready.
func TestEndsByItself(t *testing.T) {
	s := newService("x", func(context.Context) (func(context.Context, func()) error, error) {
		return func(context.Context, func()) error { return errors.New("boom") }, nil
	})
	readied := false
	err := s.Run(context.Background(), func() { readied = true })
	if err == nil || err.Error() != "x: boom" || readied {
		t.Errorf("Run = %v, ready reported %v", err, readied)
	}
	s = newService("y", func(context.Context) (func(context.Context, func()) error, error) {
		return func(context.Context, func()) error { return nil }, nil
	})
	if err := s.Run(context.Background(), func() {}); err == nil || !strings.Contains(err.Error(), "ended by itself") {
		t.Errorf("a loop that returns nil while wanted: %v", err)
	}
}

// The daemon runs every one of kubeboot's own components, and only them.
func TestInProcess(t *testing.T) {
	m := InProcess(fsys.NewRoot(t.TempDir()))
	for _, name := range component.InDaemon {
		if m[name] == nil {
			t.Errorf("no in-process runner for %s", name)
		}
	}
	if len(m) != len(component.InDaemon) || slices.Contains(component.InDaemon, component.Kubelet) {
		t.Errorf("%d runners for %d components", len(m), len(component.InDaemon))
	}
	// New knows every declared configuration type: an empty one is refused
	// for what it lacks, not for having no runner.
	for _, d := range component.Table {
		if d.Own == nil {
			continue
		}
		_, err := New(fsys.NewRoot(t.TempDir()), component.Spec{Name: d.Name, Own: &component.Own{Config: d.Own.New()}}, func(string, ...any) {})
		if err == nil || strings.Contains(err.Error(), "nothing runs") || !strings.Contains(err.Error(), d.Name+": ") {
			t.Errorf("New(%s, empty configuration): %v, want what it lacks", d.Name, err)
		}
	}
	if _, err := New(fsys.NewRoot(t.TempDir()), component.Spec{Name: component.Kubelet, Own: &component.Own{}}, nil); err == nil {
		t.Error("New(kubelet): no error")
	}
}
