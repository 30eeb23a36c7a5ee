package nodeup

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExecPathSearchesPATH: the containerd init starts is the one
// preflight's InPath check found, also outside the system directories.
func TestExecPathSearchesPATH(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "containerd")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got, err := execPath("containerd"); err != nil || got != fake {
		t.Errorf("execPath = %q, %v; want %q", got, err, fake)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := execPath("containerd"); err == nil {
		t.Error("found containerd in an empty PATH")
	}
}
