package component

import (
	"fmt"
	"path"
	"strconv"

	"github.com/kubeboot/kubeboot/internal/host/helpers"
	"github.com/kubeboot/kubeboot/internal/host/node"
)

// Names of the pod network's engines: two programs of one helper binary
// (helpers.NetworkEngines, reached through the links helpers.Links
// names), each run by the node daemon as a process of its own. The
// binary runs the engine its argv[0] names, which the supervisor sets to
// the spec's Name.
const (
	Flannel    = helpers.Flannel
	KubeRouter = helpers.KubeRouter
)

// RetiredNetAgent is the network agent of kubeboot's nodes before flannel:
// the node daemon no longer runs it (Store.Load leaves its spec out), and
// reset still removes what it left.
const RetiredNetAgent = "netagent"

// Their /readyz ports, on 127.0.0.1.
const (
	FlannelReadyzPort    = 20245
	KubeRouterReadyzPort = 20244
)

// FlannelStateDir holds flannel's net-conf.json, subnet.env and WireGuard
// key on the node.
const FlannelStateDir = "/run/kubeboot/flannel"

// RunsFlannel reports whether the node runs flannel (not with
// --flannel-backend none).
func (r Renderer) RunsFlannel() bool { return r.Cfg.PodNetwork.Flannel() }

// RunsNetworkPolicy reports whether the node runs kube-router's network
// policy controller.
func (r Renderer) RunsNetworkPolicy() bool { return r.Cfg.PodNetwork.NetworkPolicy }

// FlannelSpec renders flannel with the node's identity (the kubelet's
// kubeconfig: a node may annotate its own Node and read the others),
// started once the API server is ready on a control plane. It writes the
// node's CNI configuration when the Node has its pod CIDR (at the MTU the
// backend's overhead leaves), and again when it holds its lease.
func (r Renderer) FlannelSpec() Spec {
	listen := hostPort("127.0.0.1", FlannelReadyzPort)
	kc := r.kubeconfig("kubelet.conf")
	return Spec{
		Name:  Flannel,
		Exec:  r.FS.Path(path.Join(node.HelpersDir, helpers.Flannel)),
		After: []string{APIServer},
		Args: []string{
			"--kubeconfig=" + kc,
			"--node-name=" + r.Cfg.Init.NodeRegistration.Name,
			"--node-ip=" + r.nodeIPs(),
			"--pod-subnets=" + r.Cfg.Cluster.Networking.PodSubnet,
			"--backend=" + r.Cfg.PodNetwork.FlannelType(),
			"--mtu-overhead=" + strconv.Itoa(r.Cfg.PodNetwork.Overhead(r.Cfg.Cluster.Networking.PodSubnet)),
			"--state-dir=" + r.FS.Path(FlannelStateDir),
			"--cni-conf=" + r.FS.Path(node.CNIConfFile),
			"--cni-network=" + node.CNINetwork(r.FS),
			"--cni-bridge=" + node.BridgeName,
			"--cni-data-dir=" + r.FS.Path(node.CNIDataDir+"/networks"),
			"--readyz=" + listen,
		},
		Probe:     Probe{URL: fmt.Sprintf("http://%s/readyz", listen)},
		Dirs:      []Dir{{Path: r.FS.Path(FlannelStateDir), Mode: 0o700}},
		RestartOn: r.engineRestartOn(),
	}
}

// nodeIPs are the node's addresses, as its kubelet registers them: the
// node-ip given to the kubelet (both families' on a dual-stack node), or
// the advertised address.
func (r Renderer) nodeIPs() string {
	ips := r.advertise()
	for _, a := range r.Cfg.Init.NodeRegistration.KubeletExtraArgs {
		if a.Name == "node-ip" {
			ips = a.Value
		}
	}
	return ips
}

// engineRestartOn: the engines read the kubelet's kubeconfig, whose client
// certificate client-go reloads by itself, and its CA only at their start,
// as the kubelet: the CA agent records each rotation step it applies.
func (r Renderer) engineRestartOn() []string {
	return []string{r.FS.Path(node.CARotationApplied)}
}

// KubeRouterSpec renders kube-router's network policy controller, with
// the node's identity (bound to the kubeboot:network-policy ClusterRole
// for the namespaces and policies a node may not read otherwise).
func (r Renderer) KubeRouterSpec() Spec {
	listen := hostPort("127.0.0.1", KubeRouterReadyzPort)
	kc := r.kubeconfig("kubelet.conf")
	nodePorts := "30000-32767"
	for _, a := range r.Cfg.Cluster.APIServer.ExtraArgs {
		if a.Name == "service-node-port-range" {
			nodePorts = a.Value
		}
	}
	return Spec{
		Name:  KubeRouter,
		Exec:  r.FS.Path(path.Join(node.HelpersDir, helpers.KubeRouter)),
		After: []string{APIServer},
		Args: []string{
			"--kubeconfig=" + kc,
			"--node-name=" + r.Cfg.Init.NodeRegistration.Name,
			"--pod-subnets=" + r.Cfg.Cluster.Networking.PodSubnet,
			"--service-subnets=" + r.Cfg.Cluster.Networking.ServiceSubnet,
			"--service-node-port-range=" + nodePorts,
			"--readyz=" + listen,
		},
		Probe:     Probe{URL: fmt.Sprintf("http://%s/readyz", listen)},
		RestartOn: r.engineRestartOn(),
	}
}
