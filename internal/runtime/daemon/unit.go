package daemon

import (
	"bytes"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"text/template"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
	"github.com/kubeboot/kubeboot/internal/host/host"
)

// UnitDir is the node path of systemd's unit directory for units an
// administrator installs.
const UnitDir = "/etc/systemd/system"

// UnitName is the systemd unit of this root's node daemon: kubeboot.service
// for a machine's own node, kubeboot-<tag>.service for a node under another
// root (several nodes on one machine).
func UnitName(fs fsys.FS) string { return fsys.Tag(fs.Path("/")) + ".service" }

// UnitPath is the node path of the unit file.
func UnitPath(fs fsys.FS) string { return path.Join(UnitDir, UnitName(fs)) }

var unitTemplate = template.Must(template.New("unit").Parse(`# Written by kubeboot init/join; kubeboot reset removes it.
[Unit]
Description=kubeboot node daemon: this node's Kubernetes components ({{.Root}})
Documentation=https://github.com/kubeboot/kubeboot
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
# The node's slice: the kubelet's systemd driver puts the node's pods
# beside this service in it (its cgroup root), and reset stops it.
Slice={{.Slice}}
ExecStart={{.Exe}} --root {{.Root}} daemon run
Restart=always
RestartSec=5
# The daemon stops its components itself on SIGTERM; the containers' shims
# outlive a restart of it, as under kubeadm's containerd.service.
KillMode=process
TimeoutStopSec=90
# The kubelet manages the cgroups of its pods under this service's.
Delegate=yes
LimitNOFILE=1048576
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
`))

// Unit is the systemd unit that runs this root's node daemon from exe.
func Unit(fs fsys.FS, exe string) []byte {
	var b bytes.Buffer
	_ = unitTemplate.Execute(&b, struct{ Exe, Root, Slice string }{exe, fs.Path("/"), cpugroup.Slice(fs.Path("/"))})
	return b.Bytes()
}

// SystemdRunning reports whether systemd is this machine's init.
func SystemdRunning() bool { return host.Systemd() }

// systemctl runs systemctl with args.
func systemctl(args ...string) error {
	out, err := exec.Command("systemctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// runByUnit reports whether this root's daemon is started and stopped
// through its systemd unit: where systemd is init and init or join wrote
// the unit.
func runByUnit(fs fsys.FS) bool {
	return SystemdRunning() && fsys.Exists(fs, UnitPath(fs))
}

// InstallUnit writes the node daemon's unit under the root and, where
// systemd runs, enables it (linked from the root when the root is not
// "/"), so that the node comes back after a reboot. Elsewhere it says how
// to start the node.
func InstallUnit(fs fsys.FS, exe string, logf func(string, ...any)) error {
	p := UnitPath(fs)
	logf("Writing the node daemon's systemd unit to %q", fs.Path(p))
	if err := fs.MkdirAll(UnitDir, 0o755); err != nil {
		return err
	}
	if err := fs.WriteFile(p, Unit(fs, exe), 0o644); err != nil {
		return err
	}
	if fs.DryRun() {
		return nil
	}
	if !SystemdRunning() {
		logf("systemd is not this machine's init: after a reboot, start this node with `kubeboot%s daemon start`", rootFlag(fs))
		return nil
	}
	// enable also reloads systemd's units, so a rewritten file is read.
	if err := systemctl("enable", fs.Path(p)); err != nil {
		return err
	}
	logf("Enabled %s: systemd runs this node's daemon, also after a reboot", UnitName(fs))
	return nil
}

// RemoveUnit disables the unit where systemd runs; the file goes with the
// root's state, and systemd forgets the unit at the next reload
// (ReloadUnits).
func RemoveUnit(fs fsys.FS, logf func(string, ...any)) {
	if !SystemdRunning() || !fsys.Exists(fs, UnitPath(fs)) {
		return
	}
	if err := systemctl("disable", UnitName(fs)); err != nil {
		logf("WARNING: %v", err)
		return
	}
	logf("Disabled %s", UnitName(fs))
}

// StopSlice stops the node's slice where systemd runs, once the daemon is
// stopped: whatever the kubelet's systemd driver left in it (its pods'
// slices) goes, and the slice with it.
func StopSlice(fs fsys.FS, logf func(string, ...any)) {
	if !SystemdRunning() {
		return
	}
	slice := cpugroup.Slice(fs.Path("/"))
	if err := systemctl("stop", slice); err != nil {
		logf("WARNING: %v", err)
		return
	}
	logf("Stopped %s", slice)
}

// ReloadUnits makes systemd forget the node's removed unit file.
func ReloadUnits(fs fsys.FS, logf func(string, ...any)) {
	if !SystemdRunning() {
		return
	}
	if err := systemctl("daemon-reload"); err != nil {
		logf("WARNING: %v", err)
	}
	_ = systemctl("reset-failed", UnitName(fs)) // forgotten already, unless it failed
}

func rootFlag(fs fsys.FS) string {
	if fs.Path("/") == "/" {
		return ""
	}
	return " --root " + fs.Path("/")
}
