package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/runtime/component"
)

// The components whose RestartOn file changed are restarted, one at a
// time and in order; a file seen for the first time, or unchanged, or
// named by no component, restarts nothing.
func TestRestarterRestartsWhatReadsAChangedFile(t *testing.T) {
	dir := t.TempDir()
	cm, sched, other := filepath.Join(dir, "controller-manager.conf"), filepath.Join(dir, "scheduler.conf"), filepath.Join(dir, "apiserver.crt")
	for _, f := range []string{cm, sched, other} {
		os.WriteFile(f, []byte("v1"), 0o600)
	}
	specs := []component.Spec{
		{Name: "kube-apiserver"},
		{Name: "kube-controller-manager", RestartOn: []string{cm}},
		{Name: "kube-scheduler", RestartOn: []string{sched}},
		{Name: "csr-approver", RestartOn: []string{cm}},
	}
	var mu sync.Mutex
	var restarted []string
	inFlight, overlapped := 0, false
	r := newRestarter(func(string, ...any) {}, func(_ context.Context, name, why string, _ time.Duration) error {
		mu.Lock()
		inFlight++
		overlapped = overlapped || inFlight > 1
		restarted = append(restarted, name)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.run(ctx)

	r.check(specs) // first sight
	r.check(specs) // unchanged
	// A renewal writes through a temporary file and a rename.
	replace := func(f string) {
		tmp := f + ".tmp"
		os.WriteFile(tmp, []byte("v2"), 0o600)
		if err := os.Rename(tmp, f); err != nil {
			t.Fatal(err)
		}
	}
	replace(cm)
	replace(other)
	r.check(specs)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(restarted)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"kube-controller-manager", "csr-approver"}; !slices.Equal(restarted, want) {
		t.Errorf("restarted %v, want %v", restarted, want)
	}
	if overlapped {
		t.Error("two restarts ran at once")
	}
}

// A file absent when first looked at and written later (the CA agent's
// first record of a rotation step) restarts its component; a file that
// goes away restarts nothing.
func TestRestarterRestartsOnAFileThatAppears(t *testing.T) {
	dir := t.TempDir()
	applied := filepath.Join(dir, "applied")
	specs := []component.Spec{{Name: "kubelet", RestartOn: []string{applied}}}
	var mu sync.Mutex
	var restarted []string
	r := newRestarter(func(string, ...any) {}, func(_ context.Context, name, _ string, _ time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		restarted = append(restarted, name)
		return nil
	})
	r.check(specs) // absent
	os.WriteFile(applied, []byte("trust-1"), 0o600)
	r.check(specs)
	os.Remove(applied)
	r.check(specs)
	if len(r.pending) != 1 || r.pending[0].name != "kubelet" {
		t.Fatalf("queued %v, want one restart of the kubelet", r.pending)
	}
}

// A restart asked for while one of the same component waits is queued
// once, with the first reason.
func TestRestarterQueuesARestartOnce(t *testing.T) {
	r := newRestarter(func(string, ...any) {}, nil)
	r.enqueue("etcd", "stuck unpublished", "[restart]")
	r.enqueue("etcd", "asked again", "[restart]")
	r.enqueue("kubelet", "asked", "[restart]")
	want := []restartRequest{{"etcd", "stuck unpublished", "[restart]"}, {"kubelet", "asked", "[restart]"}}
	if !slices.Equal(r.pending, want) {
		t.Fatalf("queued %+v, want %+v", r.pending, want)
	}
}
