package host

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// apparmor turns AppArmor on in the fake kernel, with the parser
// installed and the profiles given loaded.
func (k *fakeKernel) apparmor(profiles ...string) {
	os.MkdirAll(AppArmorFS, 0o755)
	os.WriteFile(AppArmorParser, nil, 0o755)
	os.WriteFile(AppArmorEnabled, []byte("Y\n"), 0o644)
	k.profiles(profiles...)
}

func (k *fakeKernel) profiles(names ...string) {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + " (enforce)\n")
	}
	if err := os.WriteFile(filepath.Join(AppArmorFS, "profiles"), []byte(b.String()), 0o644); err != nil {
		k.t.Fatal(err)
	}
}

// process adds a process confined by a profile to the fake /proc.
func (k *fakeKernel) process(pid int, profile string) {
	dir := filepath.Join(Proc, fmt.Sprint(pid), "attr")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "current"), []byte(profile+"\n"), 0o644)
}

func removed(t *testing.T) string {
	b, _ := os.ReadFile(filepath.Join(AppArmorFS, ".remove"))
	return string(b)
}

// On an AppArmor host, the profile containerd loads for containers is
// recorded at init when it was not loaded before, and reset unloads it —
// unless another containerd's containers still run under it.
func TestAppArmorProfileUndone(t *testing.T) {
	k := newFakeKernel(t, "overlay", "br_netfilter")
	k.write("net.ipv4.ip_forward", "1")
	k.write("net.bridge.bridge-nf-call-iptables", "1")
	k.write("net.bridge.bridge-nf-call-ip6tables", "1")
	k.apparmor("/usr/bin/man", "lsb_release")
	if !AppArmorConfinesContainers() {
		t.Fatal("AppArmor host not seen")
	}
	fs := ownRoot(t, t.TempDir())
	var lines []string
	logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	if err := Prepare(fs, Base(), logf); err != nil {
		t.Fatal(err)
	}
	// containerd loads it at its first container; one ran, and has ended.
	k.profiles("/usr/bin/man", ContainerdAppArmorProfile, "lsb_release")
	k.process(4242, "unconfined")
	Undo(fs, logf)
	if got := removed(t); got != ContainerdAppArmorProfile {
		t.Errorf("unloaded %q, want %q (%q)", got, ContainerdAppArmorProfile, lines)
	}
	if !slices.Contains(lines, "Unloaded the AppArmor profile cri-containerd.apparmor.d (containerd's, for containers)") {
		t.Errorf("no line for the profile: %q", lines)
	}

	// Loaded before init (another containerd on the machine): left.
	os.Remove(filepath.Join(AppArmorFS, ".remove"))
	fs = ownRoot(t, t.TempDir())
	if err := Prepare(fs, Base(), logf); err != nil {
		t.Fatal(err)
	}
	Undo(fs, logf)
	if got := removed(t); got != "" {
		t.Errorf("unloaded %q, which was loaded before init", got)
	}

	// Recorded, but a process still runs under it: left, with a warning.
	k.profiles("lsb_release")
	fs = ownRoot(t, t.TempDir())
	if err := Prepare(fs, Base(), logf); err != nil {
		t.Fatal(err)
	}
	k.profiles(ContainerdAppArmorProfile)
	k.process(4343, ContainerdAppArmorProfile+" (enforce)")
	lines = nil
	Undo(fs, logf)
	if got := removed(t); got != "" {
		t.Errorf("unloaded %q while a process runs under it", got)
	}
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "stays loaded: 1 process(es)") {
		t.Errorf("lines: %q", lines)
	}
}

// Without AppArmor (no parser: containerd does not confine), nothing is
// recorded.
func TestNoAppArmorNoProfile(t *testing.T) {
	k := newFakeKernel(t, "overlay")
	k.apparmor()
	os.Remove(AppArmorParser)
	if AppArmorConfinesContainers() {
		t.Fatal("confines without apparmor_parser")
	}
	fs := ownRoot(t, t.TempDir())
	if err := Prepare(fs, Base(), func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	var rec Record
	if err := readRecord(fs, &rec); err != nil || len(rec.AppArmorProfiles) != 0 {
		t.Errorf("record: %+v, %v", rec, err)
	}
}
