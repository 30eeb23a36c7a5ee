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

	features := "\necho commit: 10269840\necho spec: 1.0.0\necho +SYSTEMD +SELINUX +APPARMOR +CAP +SECCOMP +EBPF +YAJL\n"
	write(crun, "#!/bin/sh\necho crun version 1.21"+features, 0o755)
	if got, why := Crun(true); got != "" || why != "" {
		t.Errorf("hybrid or v1 host (no cgroup.controllers): Crun() = %q, %q; want runc's \"\"", got, why)
	}
	write(filepath.Join(cgroups, "cgroup.controllers"), "cpu memory pids\n", 0o644)
	for version, want := range map[string]string{"1.21": crun, "1.14.3": crun, "2.0": crun, "1.14.1": "", "1.8.1": "", "unknown": ""} {
		write(crun, "#!/bin/sh\necho crun version "+version+features, 0o755)
		if got, why := Crun(true); got != want || (got == "") == (why == "") {
			t.Errorf("cgroup v2 host with crun %s: Crun() = %q, %q; want %q", version, got, why, want)
		}
	}
	// Built without systemd: fine with cgroupfs, not with systemd's driver.
	write(crun, "#!/bin/sh\necho crun version 1.21\necho -SYSTEMD +CAP +SECCOMP\n", 0o755)
	if got, why := Crun(true); got != "" || why == "" {
		t.Errorf("crun without +SYSTEMD, systemd cgroup driver: Crun() = %q, %q; want runc's \"\" and why", got, why)
	}
	if got, _ := Crun(false); got != crun {
		t.Errorf("crun without +SYSTEMD, cgroupfs driver: Crun() = %q, want %q", got, crun)
	}
	write(crun, "#!/bin/sh\nexit 1\n", 0o755)
	if got, why := Crun(true); got != "" || why == "" {
		t.Errorf("a crun that fails: Crun() = %q, %q; want \"\" and why", got, why)
	}
	if err := os.Remove(crun); err != nil {
		t.Fatal(err)
	}
	if got, why := Crun(true); got != "" || why != "" {
		t.Errorf("no crun in PATH: Crun() = %q, %q", got, why)
	}
}
