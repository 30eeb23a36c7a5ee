package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

// Modules are the kernel modules a node needs: br_netfilter, so that
// iptables sees bridged pod traffic (Services between pods of one node),
// and overlay, containerd's snapshotter.
var Modules = []string{"br_netfilter", "overlay"}

// Sysctls are the sysctls a node needs set to 1: routing between pods and
// nodes, and bridged traffic through iptables. They are per network
// namespace.
var Sysctls = []string{"net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables"}

// Needs are the kernel modules and the sysctls (set to 1) a node needs.
type Needs struct {
	Modules []string
	Sysctls []string
}

// Base is what every node needs (Modules, Sysctls).
func Base() Needs { return Needs{Modules: slices.Clone(Modules), Sysctls: slices.Clone(Sysctls)} }

// PodNetwork is what a node's pod network asks of its kernel.
type PodNetwork struct {
	// Backend is the overlay's flannel backend: "vxlan" needs the vxlan
	// module, "wireguard" the wireguard module, "host-gw" (or "") none.
	Backend string
	// Policy: the NetworkPolicy engine matches ipsets in iptables.
	Policy bool
	// IPv6: the pod network has an IPv6 subnet, routed by the node.
	IPv6 bool
}

// With adds what the pod network needs: the backend's module, ip_set and
// xt_set for policies, IPv6 forwarding.
func (n Needs) With(p PodNetwork) Needs {
	switch p.Backend {
	case "vxlan":
		n.Modules = append(n.Modules, "vxlan")
	case "wireguard":
		n.Modules = append(n.Modules, "wireguard")
	}
	if p.Policy {
		n.Modules = append(n.Modules, "ip_set", "xt_set")
	}
	if p.IPv6 {
		n.Sysctls = append(n.Sysctls, ipv6Forwarding)
	}
	return n
}

// Node paths of what kubeboot writes on a machine's own node.
const (
	ModulesLoadFile = "/etc/modules-load.d/kubeboot.conf"
	SysctlFile      = "/etc/sysctl.d/90-kubeboot.conf"
	// RecordFile is what this node changed on the machine, read by reset.
	RecordFile = "/var/lib/kubeboot/host.json"
)

// Where the running kernel is looked at and changed; variables for tests.
var (
	// MachineRoot is the root prefix of a machine's own node, whose
	// changes are persisted and recorded.
	MachineRoot = "/"
	ModuleDir   = "/sys/module"
	ProcSys     = "/proc/sys"
	// Filesystems lists the filesystems the kernel knows.
	Filesystems = "/proc/filesystems"
	// IPTablesMatches lists the iptables matches the kernel has.
	IPTablesMatches = "/proc/net/ip_tables_matches"
	// LinksOfKind counts this network namespace's links of a kind
	// ("vxlan", "wireguard").
	LinksOfKind = linksOfKind
	// RAInterfaces lists the interfaces this network namespace's IPv6
	// default routes leave by that came from router advertisements.
	RAInterfaces = raInterfaces
	// Modprobe and Rmmod load and unload a kernel module.
	Modprobe = func(args ...string) error { return run("modprobe", args...) }
	Rmmod    = func(name string) error { return run("rmmod", name) }
)

// linkModules are the modules that provide a kind of network link.
var linkModules = map[string]bool{"vxlan": true, "wireguard": true}

func linksOfKind(kind string) int {
	links, err := netlink.LinkList()
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range links {
		if l.Type() == kind {
			n++
		}
	}
	return n
}

// ipv6Forwarding is the sysctl that makes the node route IPv6.
const ipv6Forwarding = "net.ipv6.conf.all.forwarding"

func raInterfaces() []string {
	// Every table (the kernel deletes a VRF's too); a dump that a route
	// change interrupted is read again.
	var routes []netlink.Route
	var err error = netlink.ErrDumpInterrupted
	for try := 0; try < 5 && errors.Is(err, netlink.ErrDumpInterrupted); try++ {
		routes, err = netlink.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{Protocol: unix.RTPROT_RA, Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	}
	if err != nil {
		return nil
	}
	var names []string
	add := func(index int) {
		if l, err := netlink.LinkByIndex(index); err == nil && !slices.Contains(names, l.Attrs().Name) {
			names = append(names, l.Attrs().Name)
		}
	}
	for _, r := range routes {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		add(r.LinkIndex)
		for _, h := range r.MultiPath {
			add(h.LinkIndex)
		}
	}
	return names
}

// acceptRA is the sysctl that says whether an interface takes router
// advertisements, in the slash form where the interface's name has a dot
// (a VLAN's eth0.100), as sysctl.d reads it.
func acceptRA(iface string) string {
	if strings.Contains(iface, ".") {
		return "net/ipv6/conf/" + iface + "/accept_ra"
	}
	return "net.ipv6.conf." + iface + ".accept_ra"
}

// keepRouterAdvertisements sets accept_ra to 2 on the interfaces whose IPv6
// default route came from router advertisements (SLAAC hosts, many clouds):
// the kernel deletes such routes the moment forwarding is turned on, and
// takes no more advertisements, unless accept_ra is 2 (Talos and hybridnet
// do the same; k3s documents it for its users to do by hand). An interface
// at 0 is left alone: its advertisements are someone else's (networkd's).
// It returns the sysctls kubeboot set to 2, to persist.
func keepRouterAdvertisements(fs fsys.FS, rec *Record, logf func(string, ...any)) ([]string, error) {
	var set []string
	for _, iface := range RAInterfaces() {
		s := acceptRA(iface)
		old, err := readSysctl(s)
		if err != nil {
			continue
		}
		if _, ours := rec.Sysctls[s]; old == "2" && ours {
			set = append(set, s)
			continue
		}
		if old != "1" {
			continue
		}
		if fs.DryRun() {
			logf("[dryrun] Would set %s = 2 (it is 1): the IPv6 default route via %s comes from router advertisements", s, iface)
			continue
		}
		if err := rec.setSysctl(s, "2", old); err != nil {
			return nil, err
		}
		logf("Set %s = 2 (it was 1): the IPv6 default route via %s comes from router advertisements, which the kernel drops on a forwarding host unless accept_ra is 2", s, iface)
		set = append(set, s)
	}
	return set, nil
}

// setSysctl sets a sysctl and records its value from before (the first
// one: a second init keeps what the machine had), for Undo.
func (rec *Record) setSysctl(name, value, old string) error {
	if err := os.WriteFile(SysctlPath(name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("setting sysctl %s: %w", name, err)
	}
	if rec.Sysctls == nil {
		rec.Sysctls = map[string]string{}
	}
	if _, ok := rec.Sysctls[name]; !ok {
		rec.Sysctls[name] = old
	}
	return nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// loadedModules lists the loaded modules.
func loadedModules() map[string]bool {
	entries, _ := os.ReadDir(ModuleDir)
	out := map[string]bool{}
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// Record is what a node changed on its machine: what reset undoes.
type Record struct {
	// Modules are the modules kubeboot loaded, with those they depend on
	// that were not loaded either, in the order they came.
	Modules []string `json:"modules,omitempty"`
	// Sysctls are the sysctls kubeboot changed, with their values before.
	Sysctls map[string]string `json:"sysctls,omitempty"`
	// Files are the files kubeboot wrote to persist the changes.
	Files []string `json:"files,omitempty"`
	// AppArmorProfiles are the profiles the node's containerd loads that
	// were not loaded before it (ContainerdAppArmorProfile, on an
	// AppArmor host).
	AppArmorProfiles []string `json:"appArmorProfiles,omitempty"`
}

// ModuleLoaded reports whether a kernel module is loaded, or built into
// the kernel: a built-in module without parameters has no /sys/module
// entry, so br_netfilter is also found by its sysctls, overlay in the
// filesystems the kernel knows and xt_set among the iptables matches.
func ModuleLoaded(name string) bool {
	if _, err := os.Stat(filepath.Join(ModuleDir, name)); err == nil {
		return true
	}
	switch name {
	case "br_netfilter":
		_, err := os.Stat(SysctlPath("net.bridge.bridge-nf-call-iptables"))
		return err == nil
	case "overlay":
		b, _ := os.ReadFile(Filesystems)
		return regexp.MustCompile(`(?m)\soverlay$`).Match(b)
	case "xt_set":
		b, _ := os.ReadFile(IPTablesMatches)
		return regexp.MustCompile(`(?m)^set$`).Match(b)
	}
	return false
}

// SysctlPath is the /proc/sys file of a sysctl, named with dots or, where
// a part has a dot of its own, with slashes.
func SysctlPath(name string) string {
	if strings.Contains(name, "/") {
		return filepath.Join(ProcSys, name)
	}
	return filepath.Join(ProcSys, strings.ReplaceAll(name, ".", "/"))
}

// readSysctl reads a sysctl's value.
func readSysctl(name string) (string, error) {
	b, err := os.ReadFile(SysctlPath(name))
	return strings.TrimSpace(string(b)), err
}

// Prepare loads the modules and sets the sysctls a node needs where they
// are not in place, with one line per change. On a machine's own node
// (fs's root is "/") it persists them for the next boot and records what
// it changed for reset (Undo).
func Prepare(fs fsys.FS, need Needs, logf func(string, ...any)) error {
	own := fs.Path("/") == MachineRoot
	rec := Record{}
	if own {
		// A second init after a failed one keeps the first one's values
		// from before.
		_ = readRecord(fs, &rec)
	}
	for _, m := range need.Modules {
		if ModuleLoaded(m) {
			continue
		}
		if fs.DryRun() {
			logf("[dryrun] Would load the kernel module %s", m)
			continue
		}
		before := loadedModules()
		if err := Modprobe(m); err != nil {
			return fmt.Errorf("loading the kernel module %s: %w", m, err)
		}
		var deps []string
		for name := range loadedModules() {
			if !before[name] && name != m {
				deps = append(deps, name)
			}
		}
		slices.Sort(deps)
		if len(deps) > 0 {
			logf("Loaded the kernel module %s (and %s, which it needs)", m, strings.Join(deps, ", "))
		} else {
			logf("Loaded the kernel module %s", m)
		}
		for _, d := range append(deps, m) {
			if !slices.Contains(rec.Modules, d) {
				rec.Modules = append(rec.Modules, d)
			}
		}
	}
	// Before forwarding is on: turning it on deletes the routes.
	var raSysctls []string
	if slices.Contains(need.Sysctls, ipv6Forwarding) {
		var err error
		if raSysctls, err = keepRouterAdvertisements(fs, &rec, logf); err != nil {
			return err
		}
	}
	for _, s := range need.Sysctls {
		old, err := readSysctl(s)
		if err != nil {
			return fmt.Errorf("reading sysctl %s: %w", s, err)
		}
		if old == "1" {
			continue
		}
		if fs.DryRun() {
			logf("[dryrun] Would set %s = 1 (it is %s)", s, old)
			continue
		}
		if err := rec.setSysctl(s, "1", old); err != nil {
			return err
		}
		logf("Set %s = 1 (it was %s)", s, old)
	}
	if !own {
		return nil
	}
	if AppArmorConfinesContainers() && !AppArmorProfileLoaded(ContainerdAppArmorProfile) && !slices.Contains(rec.AppArmorProfiles, ContainerdAppArmorProfile) {
		rec.AppArmorProfiles = append(rec.AppArmorProfiles, ContainerdAppArmorProfile)
	}
	persist := []struct {
		file, content string
	}{
		{ModulesLoadFile, "# Written by kubeboot init/join: the kernel modules a Kubernetes node needs.\n# kubeboot reset removes this file.\n" + strings.Join(need.Modules, "\n") + "\n"},
		{SysctlFile, "# Written by kubeboot init/join: the sysctls a Kubernetes node needs.\n# kubeboot reset removes this file.\n" + sysctlLines(raSysctls, "2") + sysctlLines(need.Sysctls, "1")},
	}
	for _, p := range persist {
		if b, err := os.ReadFile(fs.Path(p.file)); err == nil && string(b) == p.content {
			continue
		}
		if fs.DryRun() {
			logf("[dryrun] Would write %q", p.file)
			continue
		}
		if err := fs.MkdirAll(filepath.Dir(p.file), 0o755); err != nil {
			return err
		}
		if err := fs.WriteFile(p.file, []byte(p.content), 0o644); err != nil {
			return err
		}
		logf("Wrote %q: the same after a reboot", fs.Path(p.file))
		if !slices.Contains(rec.Files, p.file) {
			rec.Files = append(rec.Files, p.file)
		}
	}
	if fs.DryRun() {
		return nil
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := fs.MkdirAll(filepath.Dir(RecordFile), 0o755); err != nil {
		return err
	}
	return fs.WriteFile(RecordFile, b, 0o600)
}

func sysctlLines(sysctls []string, value string) string {
	var b strings.Builder
	for _, s := range sysctls {
		b.WriteString(s + " = " + value + "\n")
	}
	return b.String()
}

func readRecord(fs fsys.FS, rec *Record) error {
	b, err := os.ReadFile(fs.Path(RecordFile))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, rec)
}

// Undo reverts what Prepare changed on this node's machine, as its record
// says: it removes the files kubeboot wrote, sets the sysctls it changed
// back and unloads the modules it loaded (a module something else uses
// stays, with a warning) and the AppArmor profile its containerd loaded,
// unless a process still runs under it. Without a record it does nothing.
func Undo(fs fsys.FS, logf func(string, ...any)) {
	var rec Record
	if err := readRecord(fs, &rec); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			logf("WARNING: reading %s: %v: the machine's kernel modules and sysctls are left as they are", fs.Path(RecordFile), err)
		}
		return
	}
	for _, f := range rec.Files {
		if fs.DryRun() {
			logf("[dryrun] Would remove %q", fs.Path(f))
			continue
		}
		if err := os.Remove(fs.Path(f)); err == nil {
			logf("Removed %q", fs.Path(f))
		} else if !errors.Is(err, os.ErrNotExist) {
			logf("WARNING: removing %q: %v", fs.Path(f), err)
		}
	}
	names := make([]string, 0, len(rec.Sysctls))
	for s := range rec.Sysctls {
		names = append(names, s)
	}
	slices.Sort(names)
	for _, s := range names {
		old := rec.Sysctls[s]
		if fs.DryRun() {
			logf("[dryrun] Would set %s back to %s", s, old)
			continue
		}
		if err := os.WriteFile(SysctlPath(s), []byte(old), 0o644); err != nil {
			logf("WARNING: setting %s back to %s: %v", s, old, err)
			continue
		}
		logf("Set %s back to %s", s, old)
	}
	// One by one, with rmmod: `modprobe -r` would also take a dependency
	// that was loaded before kubeboot came. A module that others still
	// hold (bridge, while br_netfilter is loaded) goes in a later round.
	left := slices.Clone(rec.Modules)
	var errs map[string]error
	for round := 0; round <= len(rec.Modules) && len(left) > 0; round++ {
		errs = map[string]error{}
		var next []string
		for i := len(left) - 1; i >= 0; i-- {
			m := left[i]
			if !ModuleLoaded(m) {
				continue
			}
			// A link does not hold its module: unloading vxlan or
			// wireguard would delete every link of its kind, another
			// program's too (a VPN, an overlay made after init).
			if linkModules[m] && LinksOfKind(m) > 0 {
				logf("WARNING: the kernel module %s stays loaded: %d %s link(s) of another program use it", m, LinksOfKind(m), m)
				continue
			}
			if fs.DryRun() {
				logf("[dryrun] Would unload the kernel module %s", m)
				continue
			}
			if err := Rmmod(m); err != nil {
				errs[m] = err
				next = append([]string{m}, next...)
				continue
			}
			logf("Unloaded the kernel module %s", m)
		}
		if len(next) == len(left) {
			break
		}
		left = next
	}
	for _, m := range left {
		if err := errs[m]; err != nil {
			logf("WARNING: the kernel module %s stays loaded (something else uses it): %v", m, err)
		}
	}
	for _, p := range rec.AppArmorProfiles {
		if fs.DryRun() {
			if AppArmorProfileLoaded(p) {
				logf("[dryrun] Would unload the AppArmor profile %s", p)
			}
			continue
		}
		unloadAppArmorProfile(p, logf)
	}
}

// CheckModule fails when a module is neither loaded nor loadable: what
// Prepare cannot fix.
func CheckModule(name string) error {
	if ModuleLoaded(name) {
		return nil
	}
	if err := Modprobe("--dry-run", name); err != nil {
		return fmt.Errorf("the kernel module %s is not loaded and this kernel has none to load (%v): install the kernel's modules package", name, err)
	}
	return nil
}

// CheckSysctl fails when a sysctl is not 1 and cannot be set: what Prepare
// cannot fix. A sysctl that a module brings (the bridge's) is checked with
// that module.
func CheckSysctl(name string) error {
	v, err := readSysctl(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || v == "1" {
		return err
	}
	f, err := os.OpenFile(SysctlPath(name), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("%s is %s and cannot be set to 1 here (%v): set it on the host", name, v, err)
	}
	return f.Close()
}
