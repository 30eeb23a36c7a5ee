package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadWaiter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "waiter.out")
	if err := os.WriteFile(p, []byte("readyz 5.01\nnode-ready 7.20\ncoredns-ready 16.42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var f figures
	if err := readWaiter(p, &f); err != nil {
		t.Fatal(err)
	}
	if f.readyz != 5010*time.Millisecond || f.nodeReady != 7200*time.Millisecond || f.dnsReady != 16420*time.Millisecond {
		t.Errorf("read %s %s %s", f.readyz, f.nodeReady, f.dnsReady)
	}
	// A waiter that timed out has no figure to give.
	if err := os.WriteFile(p, []byte("readyz 5.01\ncoredns-ready timeout\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := readWaiter(p, &figures{}); err == nil {
		t.Error("a timed-out waiter was read as figures")
	}
}

func TestSecondsAfter(t *testing.T) {
	summary := "kubeadm-peer: upstream kubeadm v1.37.2\n  kubeadm init wall time:          14.93s\n"
	if d := secondsAfter(summary, "kubeadm init wall time:"); d != 14930*time.Millisecond {
		t.Errorf("got %s", d)
	}
	if d := secondsAfter(summary, "absent:"); d != 0 {
		t.Errorf("got %s for an absent marker", d)
	}
}

func TestRatio(t *testing.T) {
	if r := ratio(5, 10); r != "0.50×" {
		t.Errorf("got %s", r)
	}
	if r := ratio(5, 0); r != "-" {
		t.Errorf("got %s with nothing to compare to", r)
	}
}

func TestMedian(t *testing.T) {
	fs := []figures{{initExit: 3}, {initExit: 1}, {initExit: 2}, {initExit: 10}}
	get := func(f figures) float64 { return float64(f.initExit) }
	if m := median(fs, get); m != 2.5 {
		t.Errorf("median of 4: %v", m)
	}
	if m := median(fs[:3], get); m != 2 {
		t.Errorf("median of 3: %v", m)
	}
}
