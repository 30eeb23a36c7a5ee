package component

import (
	"fmt"
	"path"

	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
	"github.com/kubeboot/kubeboot/internal/host/node"
)

// Names of the node components.
const (
	Containerd = "containerd"
	Kubelet    = "kubelet"
	KubeProxy  = "kube-proxy"
	// APIServerLB is the node-local API server load balancer of a worker.
	APIServerLB = "apiserver-lb"
	// CAAgent follows a rotation of the cluster CA on the node (package
	// carotation); it runs in the daemon's process.
	CAAgent = "ca-agent"
	// ImageRegistry serves kubeboot's own images from the binary to the
	// node's containerd, and brings them into it; it runs in the daemon's
	// process.
	ImageRegistry = "image-registry"
)

// KubeletPort and friends are the node components' ports.
const (
	KubeletPort        = 10250
	KubeletHealthzPort = 10248
	KubeProxyHealthz   = 10256
)

// CRISocket returns the CRI endpoint as a host path URL.
func (r Renderer) CRISocket() string {
	s := r.Cfg.Init.NodeRegistration.CRISocket
	if s == node.ManagedCRISocket {
		return "unix://" + r.FS.Path(node.ContainerdSocket)
	}
	return s
}

// ManagedContainerd reports whether kubeboot runs containerd itself.
func (r Renderer) ManagedContainerd() bool {
	return r.Cfg.Init.NodeRegistration.CRISocket == node.ManagedCRISocket
}

// ContainerdSpec renders containerd 2, linked into kubeboot like the other
// components, run with kubeboot's configuration.
func (r Renderer) ContainerdSpec() Spec {
	return Spec{
		Name:  Containerd,
		Args:  []string{"--config", r.FS.Path(node.ContainerdConfig)},
		Probe: Probe{Socket: r.FS.Path(node.ContainerdSocket)},
		Dirs:  []Dir{{Path: r.FS.Path(node.ContainerdRoot), Mode: 0o711}, {Path: r.FS.Path(node.ContainerdState), Mode: 0o711}},
	}
}

// KubeletSpec renders the kubelet with kubeadm's flags, every path under
// the root prefix.
func (r Renderer) KubeletSpec() Spec {
	c := r.Cfg
	a := &Args{}
	a.Set("config", r.FS.Path(node.KubeletConfig))
	// As kubeadm's kubelet drop-in, on every node: the kubelet uses the
	// bootstrap kubeconfig only while kubelet.conf does not exist yet.
	a.Set("bootstrap-kubeconfig", r.kubeconfig("bootstrap-kubelet.conf"))
	a.Set("kubeconfig", r.kubeconfig("kubelet.conf"))
	a.Set("root-dir", r.FS.Path(node.KubeletDir))
	a.Set("cert-dir", r.FS.Path(path.Join(node.KubeletDir, "pki")))
	a.Set("hostname-override", c.Init.NodeRegistration.Name)
	a.Set("node-ip", r.advertise())
	r.applyExtra(a, c.Init.NodeRegistration.KubeletExtraArgs)
	var after, uses []string
	if r.ManagedContainerd() {
		after = []string{Containerd}
		// Its pulls of kubeboot's images go there; they retry.
		uses = []string{ImageRegistry}
	}
	dirs := []Dir{{Path: r.FS.Path(node.KubeletDir), Mode: 0o700}}
	if c.Kubelet == nil || c.Kubelet.CgroupRoot == "" {
		// The node's parent cgroup, the kubelet's cgroup root (see
		// node.LocalKubeletConfiguration): the kubelet requires it to
		// exist, and it is gone after a reboot.
		_, cgroups := cpugroup.Parent(r.FS.Path("/"))
		for _, d := range cgroups {
			dirs = append(dirs, Dir{Path: d, Mode: 0o755})
		}
	}
	return Spec{
		Name:     Kubelet,
		Args:     a.List(),
		After:    after,
		Uses:     uses,
		Prestart: true,
		Probe:    Probe{URL: fmt.Sprintf("http://127.0.0.1:%d/healthz", KubeletHealthzPort)},
		Dirs:     dirs,
		// The kubelet reads its kubeconfig's CA and holds its client
		// certificate from its start: the CA agent records each rotation
		// step it applies there.
		RestartOn: []string{r.FS.Path(node.CARotationApplied)},
	}
}

// CAAgentSpec renders the node's follower of CA rotations: it reads the
// published step with the kubelet's identity, so it works once the
// kubelet has its certificate. On a control plane it re-issues the
// certificates the CA signs, as the cert-renewer does.
func (r Renderer) CAAgentSpec() Spec {
	return r.own(CAAgent, &CAAgentConfig{NodeName: r.Cfg.Init.NodeRegistration.Name, Issue: r.issue()})
}

// KubeProxySpec renders kube-proxy, run on the host. On a control-plane
// node it starts with the API server ready: started earlier, its first
// lists are refused while the API server still bootstraps RBAC, its
// informers back off, and Services (CoreDNS's own route to the API
// server among them) worked only about 3 s later.
func (r Renderer) KubeProxySpec() Spec {
	return Spec{
		After:    []string{APIServer},
		Prestart: true,
		Name:     KubeProxy,
		Args:     []string{"--config=" + r.FS.Path(node.KubeProxyConfig)},
		Probe:    Probe{URL: fmt.Sprintf("http://127.0.0.1:%d/healthz", KubeProxyHealthz)},
		// A control plane's kube-proxy.conf embeds its certificate; a
		// worker's names the kubelet's rotating files, and never changes.
		RestartOn: []string{r.FS.Path(node.KubeProxyConf)},
	}
}

// ImageRegistrySpec renders the node's image-registry: on a node whose
// containerd kubeboot runs, it serves kubeboot's images on
// 127.0.0.1:ImageRegistryPort (containerd's hosts.toml for kubeboot.local
// points there) and is ready once it listens; on every node it imports
// into the runtime those the runtime lacks, the node's first.
func (r Renderer) ImageRegistrySpec() Spec {
	c := &ImageRegistryConfig{CRISocket: r.CRISocket()}
	if r.ManagedContainerd() {
		c.Listen = fmt.Sprintf("127.0.0.1:%d", node.ImageRegistryPort)
	}
	sp := r.own(ImageRegistry, c)
	if c.Listen != "" {
		sp.Probe = Probe{TCP: c.Listen}
		sp.Ports = []int{node.ImageRegistryPort}
		sp.Uses = []string{Containerd}
	}
	return sp
}

// APIServerLBSpec renders the node-local API server load balancer (package
// apilb), seeded with the API server the node joined through (host:port).
// It watches the API servers through itself, with kube-proxy.conf (the
// node's own identity), once the kubelet's TLS bootstrap has made it.
func (r Renderer) APIServerLBSpec(seed string) Spec {
	listen := fmt.Sprintf("127.0.0.1:%d", node.APIServerLBPort)
	sp := r.own(APIServerLB, &APIServerLBConfig{Listen: listen, Seed: seed,
		CAFile: r.FS.Path(path.Join(r.Cfg.Cluster.CertificatesDir, "ca.crt")), Kubeconfig: r.FS.Path(node.KubeProxyConf)})
	// Ready once it listens: the kubelet must start even when no API
	// server answers yet (after a reboot, say).
	sp.Probe = Probe{TCP: listen}
	return sp
}
