package node

import (
	"fmt"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"text/template"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/host"
	"github.com/kubeboot/kubeboot/internal/host/images"
)

// ContainerdConfigTOML renders the configuration (version 4, containerd
// 2.4's own, so that it loads without migration) kubeboot
// runs its containerd 2 with: its own root, state and sockets under the
// root prefix (the shims' sockets sit in the state dir), the shim and the
// CNI plugins from kubeboot's helpers, kubeboot's pause image as the
// sandbox image, the kubelet's cgroup driver (systemdCgroup: runc creates
// the containers' cgroups through systemd, as the kubelet its pods'), and restrict_oom_score_adj (root here lacks
// CAP_SYS_RESOURCE, so runc could not apply the kubelet's negative OOM
// scores). NRI is off: its socket would be /var/run/nri/nri.sock, shared
// by every node of a machine, and nothing of kubeboot's uses it.
//
// The host's OCI runtimes (rt): runc, as the runtime handler "runc", the
// default unless the host has a crun that can run containerd 2's specs
// (host.Crun), which then runs every pod that names no other handler,
// through the same shim (its BinaryName); runc stays as the handler "runc"
// (a RuntimeClass with handler: runc selects it) where the host has it.
// crun costs about half of runc's CPU per container (docs/design.md §14).
//
// operatorCNI (init --flannel-backend none): the operator's CNI plugins,
// in /opt/cni/bin, come before kubeboot's helpers, whose directory holds
// programs that are not CNI plugins but share their names (flannel's
// engine, which an operator's flannel CNI names as its plugin type).
func ContainerdConfigTOML(fs fsys.FS, systemdCgroup bool, rt Runtimes, operatorCNI bool) string {
	var b strings.Builder
	err := containerdConfig.Execute(&b, containerdSettings{
		Root: fs.Path(ContainerdRoot), State: fs.Path(ContainerdState),
		Socket: fs.Path(ContainerdSocket), TTRPCSocket: fs.Path(ContainerdSocket) + ".ttrpc",
		Opt: fs.Path(ContainerdOpt), SandboxImage: images.Pause,
		CNIBinDir: fs.Path(CNIBinDir), OperatorCNIBinDir: fs.Path(OperatorCNIBinDir), CNIConfDir: fs.Path(CNIConfDir),
		RuncRoot: fs.Path(RuncRoot), ShimPath: fs.Path(ShimPath), ShimSocketDir: ShimSocketDir(fs),
		RegistryHostsDir: fs.Path(RegistryHostsDir), SystemdCgroup: systemdCgroup,
		Crun: rt.Crun, CrunRoot: fs.Path(CrunRoot), Runc: rt.Crun == "" || !rt.NoRunc,
		OperatorCNI: operatorCNI,
	})
	if err != nil {
		panic(err) // the template and its settings are this package's own
	}
	return b.String()
}

// Runtimes are the OCI runtimes the host gives a node's containerd; the
// zero value is runc alone.
type Runtimes struct {
	// Crun is the host's crun (host.Crun), the pods' default when not "".
	Crun string
	// NoRunc, with Crun, says the host has no runc: no handler "runc".
	NoRunc bool
}

// HostRuntimes are the OCI runtimes this host gives a node's containerd
// (systemdCgroup: the node's cgroup driver is systemd's): its crun where
// host.Crun takes it, and whether its PATH lacks runc; and, where a cgroup
// v2 host's crun is not used, why.
func HostRuntimes(systemdCgroup bool) (rt Runtimes, notUsed string) {
	rt.Crun, notUsed = host.Crun(systemdCgroup)
	_, err := exec.LookPath("runc")
	rt.NoRunc = err != nil
	return rt, notUsed
}

// CheckHostRuntimes is preflight's FileExisting-runc: Check of the
// host's runtimes, with crun (whose --version host.Crun runs) asked only
// where runc is missing, the one case where it decides the verdict.
func CheckHostRuntimes(systemdCgroup bool) (warnings []string, err error) {
	if _, err := exec.LookPath("runc"); err == nil {
		return nil, nil // crun or not, the node has a runtime
	}
	rt := Runtimes{NoRunc: true}
	var notUsed string
	rt.Crun, notUsed = host.Crun(systemdCgroup)
	return rt.Check(notUsed)
}

// Check is preflight's verdict on the runtimes (FileExisting-runc):
// a host without runc passes with a warning where its crun runs the pods,
// and fails otherwise, saying why its crun (notUsed) does not do.
func (rt Runtimes) Check(notUsed string) (warnings []string, err error) {
	switch {
	case !rt.NoRunc:
		return nil, nil
	case rt.Crun != "":
		return []string{"runc not found in PATH: pods run with " + rt.Crun + ", and the runtime handler \"runc\" is not offered (`apt-get install runc` to have it)"}, nil
	}
	fix := "kubeboot's containerd runs containers with runc: run `apt-get install runc` (or give --cri-socket of a CRI runtime of your own)"
	if notUsed != "" {
		fix += "; the host's crun does not do: " + notUsed
	}
	return nil, fmt.Errorf("runc not found in PATH: %s", fix)
}

// Choice says, for init's and join's log, which runtime runs the node's
// containers where the host has a crun; "" where it has none.
func (rt Runtimes) Choice(notUsed string) string {
	switch {
	case rt.Crun != "" && rt.NoRunc:
		return "This cgroup v2 host has crun and no runc: containerd runs containers with " + rt.Crun
	case rt.Crun != "":
		return "This cgroup v2 host has crun: containerd runs containers with " + rt.Crun + " (runc stays, as the runtime handler \"runc\")"
	case notUsed != "":
		return "containerd runs containers with runc, not the host's crun: " + notUsed
	}
	return ""
}

// containerdSettings are what the configuration names of this node.
type containerdSettings struct {
	Root, State, Socket, TTRPCSocket, Opt, SandboxImage      string
	CNIBinDir, CNIConfDir, RuncRoot, ShimPath, ShimSocketDir string
	RegistryHostsDir, OperatorCNIBinDir, Crun, CrunRoot      string
	SystemdCgroup, Runc, OperatorCNI                         bool
}

// containerdConfig is the configuration with its comments, for the
// operator who reads the file; q quotes a string as TOML's basic strings
// (Go's escapes, the same for the paths and names it is given).
var containerdConfig = template.Must(template.New("containerd.toml").Funcs(template.FuncMap{"q": strconv.Quote}).Parse(`# Written by kubeboot. containerd runs under the kubeboot node daemon.
version = 4
root = {{q .Root}}
state = {{q .State}}
disabled_plugins = [
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.differ.v1.erofs",
  "io.containerd.nri.v1.nri",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[plugins."io.containerd.server.v1.grpc"]
  address = {{q .Socket}}

[plugins."io.containerd.server.v1.ttrpc"]
  address = {{q .TTRPCSocket}}

[plugins."io.containerd.shim.v1.manager"]
  socket_dir = {{q .ShimSocketDir}}

[plugins."io.containerd.internal.v1.opt"]
  path = {{q .Opt}}

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = {{q .SandboxImage}}
  # A directory per registry with its hosts.toml (mirrors, CAs): the
  # node's own, not the host's /etc/containerd/certs.d.
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = {{q .RegistryHostsDir}}

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  # containerd's own CPU samples of every container and sandbox (for the
  # CRI's usage in nanocores), each a call into the pod's shim and a read
  # of its cgroups: every 10 s, as the kubelet's cAdvisor housekeeping,
  # rather than containerd's default of every second, which with 50 pods
  # cost containerd and the shims ~0.2 CPU-seconds a second at idle.
  stats_collect_period = "10s"
  # No CDI devices: the default spec dirs are the host's /etc/cdi and
  # /var/run/cdi, shared by every node of a machine.
  cdi_spec_dirs = []
  # Pod network namespaces live under the state dir, so that they sit
  # under the root prefix and reset finds them.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = {{if .Crun}}"crun"{{else}}"runc"{{end}}
{{- if .Runc}}
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = {{q .ShimPath}}
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = {{.SystemdCgroup}}
        Root = {{q .RuncRoot}}
{{- end}}
{{- if .Crun}}
    # This cgroup v2 host has a crun that runs containerd 2's specs: the
    # same shim runs it in runc's stead for every pod that names no other
    # runtime handler (about half of runc's CPU per container).
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.crun]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = {{q .ShimPath}}
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.crun.options]
        BinaryName = {{q .Crun}}
        SystemdCgroup = {{.SystemdCgroup}}
        Root = {{q .CrunRoot}}
{{- end}}
  [plugins."io.containerd.cri.v1.runtime".cni]
{{- if .OperatorCNI}}
    # The operator's CNI (init --flannel-backend none): its plugins, in
    # the usual directory, first; then kubeboot's.
    bin_dirs = [{{q .OperatorCNIBinDir}}, {{q .CNIBinDir}}]
{{- else}}
    # kubeboot's plugins first, then the usual directory, where an
    # operator adds plugins of its own.
    bin_dirs = [{{q .CNIBinDir}}, {{q .OperatorCNIBinDir}}]
{{- end}}
    conf_dir = {{q .CNIConfDir}}
    max_conf_num = 1
    # containerd brings up a pod's lo itself, rather than by an exec of
    # the loopback plugin for every pod's setup and teardown.
    use_internal_loopback = true

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`))

// maxShimSocketDir is containerd's limit on the shims' socket directory
// (a socket's path is the directory and a 64-hex name, within the 108
// bytes of a unix socket address).
const maxShimSocketDir = 42

// ShimSocketDir is where the node's shims put their sockets: under the
// state dir when its path is short enough, else a directory named after
// the node's tag in /run/kubeboot-shims, which reset removes (not in
// /run/kubeboot, the state of a node whose root is "/", which its reset
// removes whole). containerd's default, /run/containerd/s, is shared by
// every containerd of a machine.
func ShimSocketDir(fs fsys.FS) string {
	if d := fs.Path(ContainerdState + "/s"); len(d) <= maxShimSocketDir {
		return d
	}
	return path.Join(ShimSocketsDir, fsys.Tag(fs.Path("/")))
}
