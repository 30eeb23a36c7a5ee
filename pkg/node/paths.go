package node

import (
	"github.com/kubeboot/kubeboot/pkg/config"
	"github.com/kubeboot/kubeboot/pkg/fsys"
)

// Node paths of what kubeboot's node side writes. All sit under the root
// prefix; reset removes them.
const (
	ContainerdConfig = "/etc/kubernetes/kubeboot/containerd.toml"
	ContainerdRoot   = "/var/lib/kubeboot/containerd"
	ContainerdState  = "/run/kubeboot/containerd"
	ContainerdSocket = ContainerdState + "/containerd.sock"
	// RuncRoot is runc's state (one directory per container); runc's own
	// default is /run/containerd/runc, shared by every node of a machine.
	RuncRoot      = "/run/kubeboot/runc"
	CNIBinDir     = "/var/lib/kubeboot/cni/bin"
	CNIConfDir    = "/etc/cni/net.d"
	CNIConfFile   = CNIConfDir + "/10-kubeboot.conflist"
	CNIDataDir    = "/var/lib/cni"
	KubeletDir    = "/var/lib/kubelet"
	KubeletConfig = KubeletDir + "/config.yaml"
	// PodLogsDir is where the kubelet keeps the pods' logs (its podLogsDir).
	PodLogsDir = "/var/log/pods"
	// VolumePluginDir is the kubelet's FlexVolume plugin directory (its
	// volumePluginDir), which it creates.
	VolumePluginDir = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"
	KubeProxyDir    = "/var/lib/kube-proxy"
	KubeProxyConfig = KubeProxyDir + "/config.conf"
	KubeProxyConf   = "/etc/kubernetes/kube-proxy.conf"
	ManifestsDir    = "/etc/kubernetes/manifests"
	// BridgeName is the CNI bridge every pod of the node attaches to.
	BridgeName = "cni0"
)

// ManagedCRISocket is the CRI socket of the containerd kubeboot runs, as
// a node path URL.
const ManagedCRISocket = config.ManagedCRISocket

// CNIPlugins are the plugins containerd execs from CNIBinDir; each is a
// link to the kubeboot binary.
var CNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// CNINetwork is the name of the node's CNI network. The CNI library caches
// each attachment's result in /var/lib/cni/results/<network>-<container>-<if>
// whatever the root prefix; a name of the node's own (its fsys.Tag) lets
// reset find the node's entries there and leave other nodes' alone.
func CNINetwork(fs fsys.FS) string { return fsys.Tag(fs.Path("/")) }
