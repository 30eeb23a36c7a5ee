package daemon

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"text/template"

	"github.com/kubeboot/kubeboot/pkg/fsys"
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
	_ = unitTemplate.Execute(&b, struct{ Exe, Root string }{exe, fs.Path("/")})
	return b.Bytes()
}

// SystemdRunning reports whether systemd is this machine's init (the test
// sd_booted(3) makes).
func SystemdRunning() bool {
	st, err := os.Stat("/run/systemd/system")
	return err == nil && st.IsDir()
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
	out, err := exec.Command("systemctl", "enable", fs.Path(p)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl enable %s: %v: %s", fs.Path(p), err, strings.TrimSpace(string(out)))
	}
	logf("Enabled %s: systemd starts this node after a reboot", UnitName(fs))
	return nil
}

// RemoveUnit disables the unit where systemd runs; the file goes with the
// root's state.
func RemoveUnit(fs fsys.FS, logf func(string, ...any)) {
	if !fsys.Exists(fs, UnitPath(fs)) || !SystemdRunning() {
		return
	}
	if out, err := exec.Command("systemctl", "disable", UnitName(fs)).CombinedOutput(); err != nil {
		logf("WARNING: systemctl disable %s: %v: %s", UnitName(fs), err, strings.TrimSpace(string(out)))
		return
	}
	logf("Disabled %s", UnitName(fs))
}

func rootFlag(fs fsys.FS) string {
	if fs.Path("/") == "/" {
		return ""
	}
	return " --root " + fs.Path("/")
}
