package host

import (
	"os"
	"path/filepath"
	"testing"
)

// crun is chosen only on a cgroup v2 host whose PATH has a crun that
// runs containerd 2's specs (1.14.3 or later).
func TestCrun(t *testing.T) {
	cgroups, bin := t.TempDir(), t.TempDir()
	old := CgroupRoot
	CgroupRoot = cgroups
	t.Cleanup(func() { CgroupRoot = old })
	t.Setenv("PATH", bin)
	crun := filepath.Join(bin, "crun")
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(name, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}

	write(crun, "#!/bin/sh\necho crun version 1.21\necho commit: 10269840\n", 0o755)
	if got, why := Crun(); got != "" || why != "" {
		t.Errorf("hybrid or v1 host (no cgroup.controllers): Crun() = %q, %q; want runc's \"\"", got, why)
	}
	write(filepath.Join(cgroups, "cgroup.controllers"), "cpu memory pids\n", 0o644)
	for version, want := range map[string]string{"1.21": crun, "1.14.3": crun, "2.0": crun, "1.14.1": "", "1.8.1": "", "unknown": ""} {
		write(crun, "#!/bin/sh\necho crun version "+version+"\n", 0o755)
		if got, why := Crun(); got != want || (got == "") == (why == "") {
			t.Errorf("cgroup v2 host with crun %s: Crun() = %q, %q; want %q", version, got, why, want)
		}
	}
	write(crun, "#!/bin/sh\necho 'cgroups in hybrid mode not supported' >&2\nexit 1\n", 0o755)
	if got, why := Crun(); got != "" || why == "" {
		t.Errorf("a crun that fails: Crun() = %q, want \"\"", got)
	}
	if err := os.Remove(crun); err != nil {
		t.Fatal(err)
	}
	if got, why := Crun(); got != "" || why != "" {
		t.Errorf("no crun in PATH: Crun() = %q, %q", got, why)
	}
}
