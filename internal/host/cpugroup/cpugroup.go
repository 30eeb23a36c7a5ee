// Package cpugroup owns a node's cgroups: the parent cgroup its pods live
// under (the kubelet's cgroup root) on the host's cgroup manager, and the
// CPU weights of the node daemon's components, given as a service manager
// would: the control plane in one group, the node side (containerd, the
// kubelet, kube-proxy, the image import) in another.
//
// Where systemd is init the node's parent is a slice named for the node
// (kubeboot.slice, kubeboot_<hash>.slice under another root), which
// systemd makes for the daemon's unit (Slice=) and the kubelet's systemd
// driver fills with its kubepods slices; kubeboot makes no cgroup outside
// systemd's tree there. Elsewhere (cgroupfs) the parent is /<tag>, made by
// kubeboot in every hierarchy.
//
// kubeboot uses it for one thing: while a control-plane node comes up, the
// node side runs at a low weight, so that the API server, which everything
// else waits for, is not slowed down by the image import and the kubelet's
// start on a small machine. Once the API server is ready both groups have
// the same weight. Weights only matter when the CPU is contended; an idle
// core is never left unused.
//
// cgroup v1 (the cpu hierarchy, cpu.shares) and v2 (cpu.weight) are
// supported. Where neither can be written the groups are not used, and
// components run without weights: that costs time, not correctness.
package cpugroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/host"
)

// The groups.
const (
	ControlPlane = "control-plane"
	Node         = "node"
)

// Weights, in cgroup v1 cpu.shares units (1024 is a normal process).
const (
	Normal = 1024
	// Low is the node side's weight while the API server comes up: it
	// gets a sixteenth of a contended CPU.
	Low = 64
)

// Root is where the cgroup filesystem is mounted. The groups are removed
// by reset with cleanup.RemoveCgroups(Name(rootPrefix)).
var Root = "/sys/fs/cgroup"

// Name is the cgroup that holds a node's processes and pods: the node's
// tag (fsys.Tag), "kubeboot" for root prefix "/".
func Name(rootPrefix string) string { return fsys.Tag(rootPrefix) }

// Parent returns the node's parent cgroup as the kubelet names its
// --cgroup-root ("/kubeboot"; its systemd driver makes it the slice
// Slice names), and the directories kubeboot makes for it: the kubelet
// requires its cgroup root to exist in every hierarchy (every cgroup v1
// hierarchy, or the v2 tree). Under systemd on cgroup v2 there are none:
// systemd makes the slice for the daemon's unit.
func Parent(rootPrefix string) (name string, dirs []string) {
	name = Name(rootPrefix)
	dir := parentDir(rootPrefix)
	if _, err := os.Stat(filepath.Join(Root, "cgroup.controllers")); err == nil {
		if host.Systemd() {
			return "/" + name, nil
		}
		return "/" + name, []string{filepath.Join(Root, dir)}
	}
	entries, _ := os.ReadDir(Root)
	for _, e := range entries {
		// Named and co-mounted hierarchies are links or directories;
		// links (cpu -> cpu,cpuacct) would repeat a hierarchy.
		if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
			dirs = append(dirs, filepath.Join(Root, e.Name(), dir))
		}
	}
	return "/" + name, dirs
}

// parentDir is the node's parent cgroup as a directory under a hierarchy:
// the slice where systemd is init, /<tag> elsewhere.
func parentDir(rootPrefix string) string {
	if host.Systemd() {
		return Slice(rootPrefix)
	}
	return Name(rootPrefix)
}

// Slice is the systemd slice of a node's cgroup root, named as the
// kubelet's systemd driver names the cgroup "/<tag>" (cm.CgroupName's
// ToSystemd: a "-" inside a name becomes "_", since systemd reads "-" as
// a slice's parent).
func Slice(rootPrefix string) string {
	return strings.ReplaceAll(Name(rootPrefix), "-", "_") + ".slice"
}

// KubeletControllers are the controllers the kubelet requires its cgroup
// root to have (cm's supported unified controllers), where the kernel has
// them.
var KubeletControllers = []string{"cpu", "cpuset", "hugetlb", "memory", "pids"}

// EnableControllers enables, on cgroup v2, every controller of
// KubeletControllers the kernel has in the subtree of the root cgroup and
// of the node's parent, so that the kubelet finds them in its cgroup root
// (systemd enables those it manages itself; hugetlb is not among them,
// and the kubelet refused to start without it). On v1 it does nothing.
func EnableControllers(rootPrefix string) error {
	b, err := os.ReadFile(filepath.Join(Root, "cgroup.controllers"))
	if err != nil {
		return nil // v1
	}
	avail := strings.Fields(string(b))
	var want []string
	for _, c := range KubeletControllers {
		if slices.Contains(avail, c) {
			want = append(want, "+"+c)
		}
	}
	for _, d := range []string{Root, filepath.Join(Root, parentDir(rootPrefix))} {
		if _, err := os.Stat(d); err != nil {
			continue // the parent, before it is made
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0o644); err != nil {
			return fmt.Errorf("enabling the controllers %v in %s: %w", want, d, err)
		}
	}
	return nil
}

// Groups are one node's CPU groups.
type Groups struct {
	dir string // the parent cgroup's directory
	v2  bool
}

// Open creates (or finds) the node's groups. It fails when cgroups cannot
// be written here, and where systemd is init: the daemon's processes stay
// in its unit's cgroup there (see docs/design.md, hosts).
func Open(rootPrefix string) (*Groups, error) {
	if host.Systemd() {
		return nil, fmt.Errorf("systemd is init: the components stay in the unit's cgroup")
	}
	g := &Groups{}
	if _, err := os.Stat(filepath.Join(Root, "cgroup.controllers")); err == nil {
		g.v2 = true
		g.dir = filepath.Join(Root, Name(rootPrefix))
	} else {
		g.dir = filepath.Join(Root, "cpu", Name(rootPrefix))
	}
	for _, sub := range []string{ControlPlane, Node} {
		if err := os.MkdirAll(filepath.Join(g.dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	if g.v2 {
		// Delegate the cpu controller (and the kubelet's) down to the groups.
		if err := EnableControllers(rootPrefix); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Dir is a group's cgroup directory.
func (g *Groups) Dir(group string) string { return filepath.Join(g.dir, group) }

// Add moves a process (all its threads) into a group.
func (g *Groups) Add(group string, pid int) error {
	err := os.WriteFile(filepath.Join(g.Dir(group), "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	if errors.Is(err, syscall.ESRCH) {
		return nil // the process is gone already
	}
	return err
}

// weightFile is the file that holds a group's weight.
func (g *Groups) weightFile(group string) string {
	if g.v2 {
		return filepath.Join(g.Dir(group), "cpu.weight")
	}
	return filepath.Join(g.Dir(group), "cpu.shares")
}

// SetWeight sets a group's weight, in cpu.shares units.
func (g *Groups) SetWeight(group string, shares int) error {
	val := shares
	if g.v2 {
		val = WeightV2(shares)
	}
	return os.WriteFile(g.weightFile(group), []byte(strconv.Itoa(val)), 0o644)
}

// Weight reads a group's weight back, in cpu.shares units.
func (g *Groups) Weight(group string) (int, error) {
	b, err := os.ReadFile(g.weightFile(group))
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, err
	}
	if g.v2 {
		return SharesV1(n), nil
	}
	return n, nil
}

// WeightV2 converts cpu.shares (2..262144) to cpu.weight (1..10000) as
// the kubelet and runc do.
func WeightV2(shares int) int {
	if shares <= 2 {
		return 1
	}
	if shares >= 262144 {
		return 10000
	}
	return 1 + ((shares-2)*9999)/262142
}

// SharesV1 is WeightV2's inverse, to the rounding.
func SharesV1(weight int) int {
	return 2 + ((weight-1)*262142+9998)/9999
}
