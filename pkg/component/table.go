package component

import "slices"

// Role tells which side of a node a component belongs to.
type Role string

// The roles.
const (
	RoleControlPlane Role = "control-plane"
	RoleNode         Role = "node"
)

// Declared is one component kubeboot runs, declared once: its name, its
// role, and how it is rendered. The renderer derives everything else
// (flags, ports, readiness probe, dependencies) from the final
// configuration, into the Spec that preflight, wait-control-plane, the
// node daemon, status and reset all read.
type Declared struct {
	Name string
	Role Role
	// Render renders the component from the configuration alone; nil for
	// those that need what only the run knows (containerd's executable, a
	// joining etcd member's cluster, the load balancer's seed), whose
	// renderers take it as an argument.
	Render func(Renderer) Spec
	// Runs tells whether the configuration runs the component on a node of
	// its role; nil means always.
	Runs func(Renderer) bool
}

// Table is every component, control plane first, in kubeadm's order.
var Table = []Declared{
	{Name: Etcd, Role: RoleControlPlane, Render: Renderer.LocalEtcd, Runs: Renderer.LocalEtcdRuns},
	{Name: APIServer, Role: RoleControlPlane, Render: Renderer.APIServer},
	{Name: ControllerManager, Role: RoleControlPlane, Render: Renderer.ControllerManager},
	{Name: Scheduler, Role: RoleControlPlane, Render: Renderer.Scheduler},
	{Name: CSRApprover, Role: RoleControlPlane, Render: Renderer.CSRApproverSpec, Runs: Renderer.ServesTLSBootstrap},
	{Name: CertRenewer, Role: RoleControlPlane, Render: Renderer.CertRenewerSpec},
	{Name: EtcdSnapshotter, Role: RoleControlPlane, Render: Renderer.EtcdSnapshotterSpec, Runs: Renderer.SnapshotsRun},
	{Name: ManifestApplier, Role: RoleControlPlane, Render: Renderer.ManifestApplierSpec},
	{Name: StorageScaler, Role: RoleControlPlane, Render: Renderer.StorageScalerSpec},
	{Name: Containerd, Role: RoleNode, Runs: Renderer.ManagedContainerd},
	{Name: Kubelet, Role: RoleNode, Render: Renderer.KubeletSpec},
	{Name: KubeProxy, Role: RoleNode, Render: Renderer.KubeProxySpec},
	{Name: Flannel, Role: RoleNode, Render: Renderer.FlannelSpec, Runs: Renderer.RunsFlannel},
	{Name: KubeRouter, Role: RoleNode, Render: Renderer.KubeRouterSpec, Runs: Renderer.RunsNetworkPolicy},
	{Name: CAAgent, Role: RoleNode, Render: Renderer.CAAgentSpec},
	{Name: APIServerLB, Role: RoleNode},
}

// ControlPlane lists the control-plane components, in the table's order.
var ControlPlane = names(RoleControlPlane)

func names(role Role) []string {
	var out []string
	for _, d := range Table {
		if d.Role == role {
			out = append(out, d.Name)
		}
	}
	return out
}

// RoleOf is a component's role; a name the table does not know is on the
// node side.
func RoleOf(name string) Role {
	for _, d := range Table {
		if d.Name == name {
			return d.Role
		}
	}
	return RoleNode
}

// IsControlPlane tells whether a component is part of the control plane.
func IsControlPlane(name string) bool { return slices.Contains(ControlPlane, name) }

// Specs renders, in the table's order, the components of role that this
// configuration runs and that render from the configuration alone.
func (r Renderer) Specs(role Role) []Spec {
	var out []Spec
	for _, d := range Table {
		if d.Role != role || d.Render == nil || (d.Runs != nil && !d.Runs(r)) {
			continue
		}
		out = append(out, d.Render(r))
	}
	return out
}

// LocalEtcdRuns reports whether the control plane runs its own etcd
// member (the configuration has no external etcd).
func (r Renderer) LocalEtcdRuns() bool { return r.Cfg.Cluster.Etcd.External == nil }
