package node

import "github.com/kubeboot/kubeboot/pkg/config"

// Node paths of what kubeboot's node side writes. All sit under the root
// prefix; reset removes them.
const (
	ContainerdConfig = "/etc/kubernetes/kubeboot/containerd.toml"
	ContainerdRoot   = "/var/lib/kubeboot/containerd"
	ContainerdState  = "/run/kubeboot/containerd"
	ContainerdSocket = ContainerdState + "/containerd.sock"
	CNIBinDir        = "/var/lib/kubeboot/cni/bin"
	CNIConfDir       = "/etc/cni/net.d"
	CNIConfFile      = CNIConfDir + "/10-kubeboot.conflist"
	CNIDataDir       = "/var/lib/cni"
	KubeletDir       = "/var/lib/kubelet"
	KubeletConfig    = KubeletDir + "/config.yaml"
	KubeProxyDir     = "/var/lib/kube-proxy"
	KubeProxyConfig  = KubeProxyDir + "/config.conf"
	KubeProxyConf    = "/etc/kubernetes/kube-proxy.conf"
	ManifestsDir     = "/etc/kubernetes/manifests"
	// BridgeName is the CNI bridge every pod of the node attaches to.
	BridgeName = "cni0"
)

// ManagedCRISocket is the CRI socket of the containerd kubeboot runs, as
// a node path URL.
const ManagedCRISocket = config.ManagedCRISocket

// CNIPlugins are the plugins containerd execs from CNIBinDir; each is a
// link to the kubeboot binary.
var CNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}
