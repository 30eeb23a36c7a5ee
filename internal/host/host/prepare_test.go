package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

// fakeKernel points the package at a module directory and /proc/sys of a
// test's own, with modprobe and rmmod that load and unload there: loading
// br_netfilter also loads bridge (its dependency) and makes the bridge
// sysctls appear, as the kernel does.
type fakeKernel struct {
	t       *testing.T
	modules string
	proc    string
	// busy modules refuse to unload.
	busy map[string]bool
}

func newFakeKernel(t *testing.T, loaded ...string) *fakeKernel {
	dir := t.TempDir()
	k := &fakeKernel{t: t, modules: filepath.Join(dir, "module"), proc: filepath.Join(dir, "sys"), busy: map[string]bool{}}
	oldM, oldP, oldF, oldProbe, oldRm := ModuleDir, ProcSys, Filesystems, Modprobe, Rmmod
	t.Cleanup(func() { ModuleDir, ProcSys, Filesystems, Modprobe, Rmmod = oldM, oldP, oldF, oldProbe, oldRm })
	oldT, oldRA := IPTablesMatches, RAInterfaces
	t.Cleanup(func() { IPTablesMatches, RAInterfaces = oldT, oldRA })
	RAInterfaces = func() []string { return nil }
	// No AppArmor unless a test turns it on (apparmor).
	oldAA, oldParser, oldEnabled, oldProc := AppArmorFS, AppArmorParser, AppArmorEnabled, Proc
	t.Cleanup(func() { AppArmorFS, AppArmorParser, AppArmorEnabled, Proc = oldAA, oldParser, oldEnabled, oldProc })
	AppArmorFS, AppArmorParser, AppArmorEnabled, Proc = filepath.Join(dir, "apparmor"), filepath.Join(dir, "apparmor_parser"), filepath.Join(dir, "apparmor-enabled"), filepath.Join(dir, "proc")
	ModuleDir, ProcSys, Filesystems, IPTablesMatches = k.modules, k.proc, filepath.Join(dir, "filesystems"), filepath.Join(dir, "ip_tables_matches")
	os.MkdirAll(k.modules, 0o755)
	k.write("net.ipv4.ip_forward", "0")
	for _, m := range loaded {
		k.load(m)
	}
	Modprobe = func(args ...string) error {
		name := args[len(args)-1]
		if name == "missing" {
			return errors.New("modprobe: FATAL: Module missing not found")
		}
		if args[0] == "--dry-run" {
			return nil
		}
		k.load(name)
		return nil
	}
	Rmmod = func(name string) error {
		if k.busy[name] || (name == "bridge" && k.loaded("br_netfilter")) {
			return fmt.Errorf("rmmod: ERROR: Module %s is in use", name)
		}
		return os.Remove(filepath.Join(k.modules, name))
	}
	return k
}

func (k *fakeKernel) load(name string) {
	if name == "br_netfilter" && !k.loaded("bridge") {
		k.load("bridge")
	}
	os.Mkdir(filepath.Join(k.modules, name), 0o755)
	if name == "br_netfilter" {
		k.write("net.bridge.bridge-nf-call-iptables", "0")
		k.write("net.bridge.bridge-nf-call-ip6tables", "0")
	}
}

func (k *fakeKernel) loaded(name string) bool {
	_, err := os.Stat(filepath.Join(k.modules, name))
	return err == nil
}

func (k *fakeKernel) write(sysctl, v string) {
	p := SysctlPath(sysctl)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
		k.t.Fatal(err)
	}
}

func (k *fakeKernel) read(sysctl string) string {
	b, _ := os.ReadFile(SysctlPath(sysctl))
	return strings.TrimSpace(string(b))
}

// On a machine's own node Prepare loads what is missing, persists it, and
// reset's Undo takes back exactly that: the module that was loaded before
// stays, the sysctl that was 1 stays.
func TestPrepareAndUndoOwnNode(t *testing.T) {
	k := newFakeKernel(t, "overlay")
	root := t.TempDir()
	fs := ownRoot(t, root)
	var lines []string
	logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	if err := Prepare(fs, Base(), logf); err != nil {
		t.Fatal(err)
	}
	for _, s := range Sysctls {
		if got := k.read(s); got != "1" {
			t.Errorf("%s = %s after Prepare", s, got)
		}
	}
	if !k.loaded("br_netfilter") || !k.loaded("bridge") {
		t.Fatalf("br_netfilter not loaded: %v", lines)
	}
	for _, f := range []string{ModulesLoadFile, SysctlFile} {
		b, err := os.ReadFile(fs.Path(f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "br_netfilter") && !strings.Contains(string(b), "net.ipv4.ip_forward = 1") {
			t.Errorf("%s:\n%s", f, b)
		}
	}
	want := []string{"Loaded the kernel module br_netfilter (and bridge, which it needs)", "Set net.ipv4.ip_forward = 1 (it was 0)"}
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Errorf("no line %q in %q", w, lines)
		}
	}
	// A second run changes nothing and says nothing.
	lines = nil
	if err := Prepare(fs, Base(), logf); err != nil || len(lines) != 0 {
		t.Errorf("second Prepare: %v, %q", err, lines)
	}

	lines = nil
	Undo(fs, logf)
	if k.loaded("br_netfilter") || k.loaded("bridge") {
		t.Errorf("br_netfilter or bridge still loaded after Undo: %q", lines)
	}
	if !k.loaded("overlay") {
		t.Error("Undo unloaded overlay, which was loaded before Prepare")
	}
	if got := k.read("net.ipv4.ip_forward"); got != "0" {
		t.Errorf("ip_forward = %s after Undo", got)
	}
	for _, f := range []string{ModulesLoadFile, SysctlFile} {
		if _, err := os.Stat(fs.Path(f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after Undo", f)
		}
	}
}

// The pod network's needs come on top of the base: its backend's module,
// ipsets for policies, IPv6 forwarding; they are persisted and undone
// like the others. xt_set built in is found among the iptables matches.
func TestPreparePodNetwork(t *testing.T) {
	k := newFakeKernel(t, "overlay", "ip_set")
	k.write("net.ipv6.conf.all.forwarding", "0")
	fs := ownRoot(t, t.TempDir())
	need := Base().With(PodNetwork{Backend: "vxlan", Policy: true, IPv6: true})
	if err := Prepare(fs, need, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"vxlan", "xt_set"} {
		if !k.loaded(m) {
			t.Errorf("%s not loaded", m)
		}
	}
	if got := k.read("net.ipv6.conf.all.forwarding"); got != "1" {
		t.Errorf("IPv6 forwarding %s", got)
	}
	b, _ := os.ReadFile(fs.Path(ModulesLoadFile))
	for _, m := range []string{"vxlan", "ip_set", "xt_set"} {
		if !strings.Contains(string(b), m+"\n") {
			t.Errorf("%s not persisted:\n%s", m, b)
		}
	}
	b, _ = os.ReadFile(fs.Path(SysctlFile))
	if !strings.Contains(string(b), "net.ipv6.conf.all.forwarding = 1") {
		t.Errorf("IPv6 forwarding not persisted:\n%s", b)
	}
	// A VXLAN link of another program's keeps vxlan loaded.
	oldL := LinksOfKind
	t.Cleanup(func() { LinksOfKind = oldL })
	LinksOfKind = func(kind string) int {
		if kind == "vxlan" {
			return 1
		}
		return 0
	}
	var lines []string
	Undo(fs, func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) })
	if !k.loaded("vxlan") || !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "vxlan stays loaded") }) {
		t.Errorf("vxlan unloaded under another program's link: %q", lines)
	}
	LinksOfKind = func(string) int { return 0 }
	os.WriteFile(fs.Path(RecordFile), []byte(`{"modules":["vxlan","xt_set"],"sysctls":{"net.ipv6.conf.all.forwarding":"0"}}`), 0o600)
	Undo(fs, func(string, ...any) {})
	if k.loaded("vxlan") || k.loaded("xt_set") || !k.loaded("ip_set") {
		t.Error("Undo did not take back exactly the modules it loaded")
	}
	if got := k.read("net.ipv6.conf.all.forwarding"); got != "0" {
		t.Errorf("IPv6 forwarding %s after Undo", got)
	}
	if got := Base().With(PodNetwork{Backend: "host-gw"}); len(got.Modules) != len(Modules) || len(got.Sysctls) != len(Sysctls) {
		t.Errorf("host-gw without policies needs more than the base: %+v", got)
	}
	if got := Base().With(PodNetwork{Backend: "wireguard"}); !slices.Contains(got.Modules, "wireguard") {
		t.Errorf("wireguard backend: %+v", got)
	}
	newFakeKernel(t)
	if ModuleLoaded("xt_set") {
		t.Fatal("xt_set found before it is there")
	}
	os.WriteFile(IPTablesMatches, []byte("tcp\nset\nset\n"), 0o644)
	if !ModuleLoaded("xt_set") {
		t.Error("built-in xt_set not found among the iptables matches")
	}
}

// A module something else holds stays loaded, with a warning.
func TestUndoLeavesABusyModule(t *testing.T) {
	k := newFakeKernel(t, "overlay")
	fs := ownRoot(t, t.TempDir())
	if err := Prepare(fs, Base(), func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	k.busy["br_netfilter"] = true
	var lines []string
	Undo(fs, func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) })
	if !k.loaded("br_netfilter") || !k.loaded("bridge") {
		t.Fatal("a busy module was unloaded")
	}
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "WARNING: the kernel module br_netfilter stays loaded")
	}) {
		t.Errorf("no warning: %q", lines)
	}
}

// A module built into the kernel has no /sys/module entry: br_netfilter
// is found by its sysctls, overlay among the filesystems.
func TestBuiltInModules(t *testing.T) {
	k := newFakeKernel(t)
	if ModuleLoaded("br_netfilter") || ModuleLoaded("overlay") {
		t.Fatal("modules found before they are there")
	}
	k.write("net.bridge.bridge-nf-call-iptables", "1")
	os.WriteFile(Filesystems, []byte("nodev\tsysfs\nnodev\toverlay\n"), 0o644)
	if !ModuleLoaded("br_netfilter") || !ModuleLoaded("overlay") {
		t.Error("built-in modules not found")
	}
}

// A node under another root changes the running kernel but writes and
// records nothing: the machine is shared with other nodes.
func TestPrepareOtherRoot(t *testing.T) {
	newFakeKernel(t, "overlay", "br_netfilter")
	root := t.TempDir()
	fs := fsys.NewRoot(root)
	if err := Prepare(fs, Base(), func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ModulesLoadFile, SysctlFile, RecordFile} {
		if _, err := os.Stat(fs.Path(f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s written for a node under %s", f, root)
		}
	}
}

func TestChecks(t *testing.T) {
	newFakeKernel(t)
	if err := CheckModule("br_netfilter"); err != nil {
		t.Errorf("a loadable module fails its check: %v", err)
	}
	if err := CheckModule("missing"); err == nil || !strings.Contains(err.Error(), "has none to load") {
		t.Errorf("a module the kernel lacks: %v", err)
	}
	if err := CheckSysctl("net.ipv4.ip_forward"); err != nil {
		t.Errorf("a writable sysctl fails its check: %v", err)
	}
	if err := CheckSysctl("net.bridge.bridge-nf-call-iptables"); err != nil {
		t.Errorf("a sysctl its module brings fails its check: %v", err)
	}
}

// ownRoot is a root directory that Prepare takes for a machine's own
// node ("/"), so that its files land in the test's directory.
func ownRoot(t *testing.T, dir string) fsys.FS {
	old := MachineRoot
	t.Cleanup(func() { MachineRoot = old })
	MachineRoot = dir
	return fsys.NewRoot(dir)
}

// An interface whose IPv6 default route came from router advertisements
// gets accept_ra 2 before forwarding is turned on, persisted first and
// undone; one at 0 (networkd takes the advertisements) is left alone.
func TestPrepareKeepsRouterAdvertisements(t *testing.T) {
	k := newFakeKernel(t)
	k.write(ipv6Forwarding, "0")
	k.write("net.ipv6.conf.eth0.accept_ra", "1")
	k.write("net/ipv6/conf/eth0.100/accept_ra", "1")
	k.write("net.ipv6.conf.eth1.accept_ra", "0")
	calls := 0
	RAInterfaces = func() []string {
		// Forwarding already on would have deleted the routes.
		if calls++; calls == 1 && k.read(ipv6Forwarding) != "0" {
			t.Error("forwarding turned on before accept_ra was set")
		}
		return []string{"eth0", "eth0.100", "eth1"}
	}
	fs := ownRoot(t, t.TempDir())
	need := Needs{Sysctls: []string{ipv6Forwarding}}
	if err := Prepare(fs, need, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]string{"net.ipv6.conf.eth0.accept_ra": "2", "net/ipv6/conf/eth0.100/accept_ra": "2", "net.ipv6.conf.eth1.accept_ra": "0", ipv6Forwarding: "1"} {
		if got := k.read(s); got != want {
			t.Errorf("%s = %s, want %s", s, got, want)
		}
	}
	b, _ := os.ReadFile(fs.Path(SysctlFile))
	want := "net.ipv6.conf.eth0.accept_ra = 2\nnet/ipv6/conf/eth0.100/accept_ra = 2\nnet.ipv6.conf.all.forwarding = 1\n"
	if !strings.HasSuffix(string(b), want) {
		t.Errorf("%s:\n%s\nwant it to end with\n%s", SysctlFile, b, want)
	}
	// A second init keeps them, and their values from before.
	if err := Prepare(fs, need, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(fs.Path(SysctlFile)); string(b2) != string(b) {
		t.Errorf("the second init persisted\n%s", b2)
	}
	Undo(fs, func(string, ...any) {})
	for s, want := range map[string]string{"net.ipv6.conf.eth0.accept_ra": "1", "net/ipv6/conf/eth0.100/accept_ra": "1", "net.ipv6.conf.eth1.accept_ra": "0", ipv6Forwarding: "0"} {
		if got := k.read(s); got != want {
			t.Errorf("after Undo %s = %s, want %s", s, got, want)
		}
	}
}
