package node

import (
	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Node paths of what kubeboot's node side writes. All sit under the root
// prefix; reset removes them.
const (
	// StateDir holds kubeboot's state of the node (its record, the
	// runtime's, the helpers, upgrade's and the manifests' state),
	// ConfigDir its configuration beside kubeadm's files.
	StateDir  = "/var/lib/kubeboot"
	ConfigDir = KubernetesDir + "/kubeboot"

	ContainerdConfig = ConfigDir + "/containerd.toml"
	ContainerdRoot   = StateDir + "/containerd"
	ContainerdState  = "/run/kubeboot/containerd"
	ContainerdSocket = ContainerdState + "/containerd.sock"
	// RuncRoot is runc's state (one directory per container); runc's own
	// default is /run/containerd/runc, shared by every node of a machine.
	RuncRoot = "/run/kubeboot/runc"
	// CrunRoot is crun's, where the host's crun runs the containers
	// (host.Crun).
	CrunRoot = "/run/kubeboot/crun"
	// ShimSocketsDir holds, in a directory per node tag, the shims'
	// sockets of nodes whose root prefix is too long for them to sit in
	// the state dir (see ShimSocketDir). It is a host path, apart from
	// /run/kubeboot, which a node with --root / owns and its reset removes.
	ShimSocketsDir = "/run/kubeboot-shims"
	// HelpersRoot holds the content-addressed directories of the helpers
	// kubeboot carries (see package helpers), HelpersDir the link to the
	// running binary's (the runc shim, pause, the CNI plugins, the
	// images' files).
	HelpersRoot = StateDir + "/helpers"
	HelpersDir  = HelpersRoot + "/current"
	ShimPath    = HelpersDir + "/containerd-shim-runc-v2"
	CNIBinDir   = HelpersDir
	// ContainerdOpt is containerd's opt directory: containerd puts its
	// bin, a link to HelpersDir, first in its PATH, where it finds the
	// shim of the containers it finds running when it starts again
	// (runtime_path serves only the containers it creates).
	ContainerdOpt    = StateDir + "/containerd-opt"
	ContainerdOptBin = ContainerdOpt + "/bin"
	// OperatorCNIBinDir is where a CNI of the operator's installs its
	// plugins (init --flannel-backend none); not kubeboot's to remove.
	OperatorCNIBinDir = "/opt/cni/bin"
	CNIConfDir        = "/etc/cni/net.d"
	CNIConfFile       = CNIConfDir + "/10-kubeboot.conflist"
	CNIDataDir        = "/var/lib/cni"
	KubeletDir        = "/var/lib/kubelet"
	KubeletConfig     = KubeletDir + "/config.yaml"
	// PodLogsDir is where the kubelet keeps the pods' logs (its podLogsDir).
	PodLogsDir = "/var/log/pods"
	// VolumePluginDir is the kubelet's FlexVolume plugin directory (its
	// volumePluginDir), which it creates.
	VolumePluginDir = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"
	KubeProxyDir    = "/var/lib/kube-proxy"
	KubeProxyConfig = KubeProxyDir + "/config.conf"
	KubeProxyConf   = KubernetesDir + "/kube-proxy.conf"
	ManifestsDir    = KubernetesDir + "/manifests"

	// KubernetesDir is kubeadm's /etc/kubernetes, where the kubeconfigs
	// are; AdminKubeconfig the cluster administrator's (kubeadm's
	// admin.conf); SpecDir the node's component specs.
	KubernetesDir   = "/etc/kubernetes"
	AdminKubeconfig = KubernetesDir + "/admin.conf"
	SpecDir         = ConfigDir + "/components"
	// RunDir and LogDir are the node daemon's; LinkDir holds the links
	// named after the components that the daemon starts them through.
	RunDir           = "/run/kubeboot"
	DaemonPidFile    = RunDir + "/daemon.pid"
	DaemonStatusFile = RunDir + "/status.json"
	LogDir           = "/var/log/kubeboot"
	DaemonLogFile    = LogDir + "/daemon.log"
	LinkDir          = StateDir + "/bin"
	// The files the hardened settings (--hardened) name.
	AuditPolicyFile = KubernetesDir + "/audit-policy.yaml"
	AuditLogDir     = "/var/log/kubernetes/audit"
	AuditLogFile    = AuditLogDir + "/audit.log"
	// StorageRoot is the base path of the storage add-on's volumes: a
	// node's are in StorageDir(its name), a host path (see
	// EnsureStorageDir).
	StorageRoot = StateDir + "/storage"
	// BridgeName is the CNI bridge every pod of the node attaches to.
	BridgeName = "cni0"
	// CARotationDir holds the node's record of the CA rotation steps it
	// applied (package carotation).
	CARotationDir = StateDir + "/ca-rotation"
	// CARotationApplied is the ID of the last step this node applied. The
	// kubelet's spec lists it in RestartOn: the kubelet reads its
	// kubeconfig's CA and its client certificate only at start.
	CARotationApplied = CARotationDir + "/applied"
	// APIServerLBPort is where the node-local API server load balancer
	// (package apilb) listens on 127.0.0.1: beside the API server's 6443,
	// as k3s's agent balancer.
	APIServerLBPort = 6444
	// ImageRegistryPort is where the node daemon's image-registry serves
	// kubeboot's own images, from the binary, on 127.0.0.1 only: the
	// node's containerd pulls kubeboot.local/... from it.
	ImageRegistryPort = 6445
	// APIServerLBState keeps the servers the balancer knows across its
	// restarts.
	APIServerLBState = StateDir + "/apiserver-lb.json"
)

// ManagedCRISocket is the CRI socket of the containerd kubeboot runs, as
// a node path URL.
const ManagedCRISocket = config.ManagedCRISocket

// CNINetwork is the name of the node's CNI network. The CNI library caches
// each attachment's result in /var/lib/cni/results/<network>-<container>-<if>
// whatever the root prefix; a name of the node's own (its fsys.Tag) lets
// reset find the node's entries there and leave other nodes' alone.
func CNINetwork(fs fsys.FS) string { return fsys.Tag(fs.Path("/")) }

// ComponentLog is the node path of the log the node daemon keeps of the
// component name (as its supervisor writes it, in LogDir).
func ComponentLog(name string) string { return LogDir + "/" + name + ".log" }
