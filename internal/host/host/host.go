// Package host knows what kind of machine a node runs on — whether systemd
// is its init, and which cgroup hierarchy it has — and changes the little
// of it that Kubernetes needs changed, as k3s and k0s do rather than
// leaving it to the operator as kubeadm does: the kernel modules
// br_netfilter and overlay, and the sysctls for forwarded and bridged
// traffic.
//
// On a machine's own node (root "/") each change is persisted for the next
// boot in files named for kubeboot (/etc/modules-load.d/kubeboot.conf,
// /etc/sysctl.d/90-kubeboot.conf) and recorded with what was there before,
// so that reset undoes exactly what this node changed and nothing else. A
// node under another root (several nodes on one machine, in tests) shares
// the machine's kernel with the others: its changes are made in the
// running kernel only (the sysctls are its network namespace's), nothing is
// persisted, and reset leaves the kernel as it is.
package host

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// Where the machine is looked at; variables so that tests can point them
// at a directory of their own.
var (
	// SystemdDir exists when systemd is this machine's init (the test
	// sd_booted(3) makes).
	SystemdDir = "/run/systemd/system"
	// CgroupRoot is where the cgroup filesystem is mounted.
	CgroupRoot = "/sys/fs/cgroup"
)

// Cgroup drivers, as the kubelet names them.
const (
	DriverSystemd  = "systemd"
	DriverCgroupfs = "cgroupfs"
)

// Systemd reports whether systemd is this machine's init.
func Systemd() bool {
	st, err := os.Stat(SystemdDir)
	return err == nil && st.IsDir()
}

// CgroupV2 reports whether the machine has the unified cgroup v2 hierarchy
// only. A hybrid machine (v1 hierarchies, with an empty cgroup2 mount
// beside them) is v1 for Kubernetes.
func CgroupV2() bool {
	_, err := os.Stat(filepath.Join(CgroupRoot, "cgroup.controllers"))
	return err == nil
}

// CgroupDriver is the cgroup driver a node on this machine uses, as
// kubeadm chooses it: systemd's wherever systemd is init (two cgroup
// managers on one host disagree under resource pressure), cgroupfs
// elsewhere.
func CgroupDriver() string {
	if Systemd() {
		return DriverSystemd
	}
	return DriverCgroupfs
}

// Crun is the path of the host's crun where a node's containers run with
// it rather than runc: on a cgroup v2 host whose PATH has a crun of
// MinCrun or later, built with systemd's cgroup manager where the node
// uses it (crun refuses a hybrid hierarchy — "cgroups in hybrid mode not
// supported" — and, before 1.14.3, every spec whose ociVersion is not
// 1.0.x: containerd 2 writes 1.3.0, and crun answers "unknown version
// specified"; Debian 12's is 1.8.1). Elsewhere "", runc; and where a
// cgroup v2 host's crun is not used, why.
func Crun(systemdCgroup bool) (path, notUsed string) {
	if !CgroupV2() {
		return "", ""
	}
	p, err := exec.LookPath("crun")
	if err != nil {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, "--version").Output()
	if err != nil {
		return "", fmt.Sprintf("%s --version: %v", p, err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	v, err := version.ParseGeneric(strings.TrimPrefix(strings.TrimSpace(first), "crun version "))
	if err != nil {
		return "", fmt.Sprintf("%s --version: %q", p, first)
	}
	if !v.AtLeast(minCrun) {
		return "", fmt.Sprintf("%s is %s, older than %s, which runs containerd 2's specs", p, v, minCrun)
	}
	// The build's features, a line such as "+SYSTEMD +SELINUX +APPARMOR".
	if systemdCgroup && !slices.Contains(strings.Fields(string(out)), "+SYSTEMD") {
		return "", fmt.Sprintf("%s is built without systemd's cgroup manager (no +SYSTEMD in its --version), which this node's cgroup driver needs", p)
	}
	return p, ""
}

// minCrun is the first crun that runs the specs containerd 2 writes.
var minCrun = version.MustParseGeneric(MinCrun)

// MinCrun is the first crun release that takes any 1.x ociVersion.
const MinCrun = "1.14.3"
