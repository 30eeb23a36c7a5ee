package node

import (
	"fmt"

	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/images"
)

// ContainerdConfigTOML renders the containerd configuration kubeboot runs
// containerd with: its own root, state and socket under the root prefix,
// kubeboot's pause image as the sandbox image, the CNI dirs, cgroupfs, and
// restrict_oom_score_adj (root here lacks CAP_SYS_RESOURCE, so runc could
// not apply the kubelet's negative OOM scores).
func ContainerdConfigTOML(fs fsys.FS) string {
	return fmt.Sprintf(`# Written by kubeboot. containerd runs under the kubeboot node daemon.
version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_cdi = false
  # Pod network namespaces live under the state dir, so that they sit
  # under the root prefix and reset finds them.
  netns_mounts_under_state_dir = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[9]q

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
    max_conf_num = 1
`, fs.Path(ContainerdRoot), fs.Path(ContainerdState), fs.Path(ContainerdSocket), fs.Path(ContainerdSocket)+".ttrpc",
		fs.Path("/var/lib/kubeboot/containerd-opt"), images.Pause, fs.Path(CNIBinDir), fs.Path(CNIConfDir), fs.Path(RuncRoot))
}
