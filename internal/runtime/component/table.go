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
	// Own declares one of kubeboot's own components, which the node daemon
	// runs in its own process from the typed configuration their spec
	// carries (package service runs them), and which `kubeboot NAME` runs
	// by hand; nil for upstream's. They go with the daemon's binary: an
	// upgrade does not replace them one by one.
	Own *OwnKind
	// Phase is the component's phase under init's control-plane phase
	// (`kubeboot init phase control-plane NAME`), which writes its spec
	// when Runs allows; nil for the components init starts elsewhere (etcd
	// in its own phase, the node side in kubelet-start). A control plane
	// that joins starts the same components (Specs).
	Phase *Phase
	// Engine marks a pod network engine: one of kubeboot's own main
	// packages (cmd/NAME, built as a helper), which StartNetwork hands to
	// the daemon on every node whose configuration runs it.
	Engine bool
}

// Phase names a control-plane component's phase of init: kubeadm's name
// for upstream's components (apiserver, not kube-apiserver), the
// component's own for kubeboot's.
type Phase struct {
	Name, Short string
}

// OwnKind is what an own component declares beside its name and role.
type OwnKind struct {
	// Key names its configuration in a spec's JSON (Own).
	Key string
	// New is an empty configuration of its type.
	New func() OwnConfig
	// Does says what it does, for its command's help.
	Does string
}

// own declares an own component whose configuration has type T.
func own[T any, PT interface {
	*T
	OwnConfig
}](key, does string) *OwnKind {
	return &OwnKind{Key: key, Does: does, New: func() OwnConfig { return PT(new(T)) }}
}

// Table is every component, control plane first, in kubeadm's order.
var Table = []Declared{
	{Name: Etcd, Role: RoleControlPlane, Render: Renderer.LocalEtcd, Runs: Renderer.LocalEtcdRuns},
	{Name: APIServer, Role: RoleControlPlane, Render: Renderer.APIServer,
		Phase: &Phase{"apiserver", "Start the Kubernetes API Server"}},
	{Name: ControllerManager, Role: RoleControlPlane, Render: Renderer.ControllerManager,
		Phase: &Phase{"controller-manager", "Start the Kubernetes Controller Manager"}},
	{Name: Scheduler, Role: RoleControlPlane, Render: Renderer.Scheduler,
		Phase: &Phase{"scheduler", "Start the Kubernetes Scheduler"}},
	{Name: CSRApprover, Role: RoleControlPlane, Render: Renderer.CSRApproverSpec, Runs: Renderer.ServesTLSBootstrap,
		Own:   own[CSRApproverConfig]("csrApprover", "Approve the kubelets' serving certificates for known nodes"),
		Phase: &Phase{CSRApprover, "Start kubeboot's approver of the kubelets' serving certificates (with serverTLSBootstrap)"}},
	{Name: CertRenewer, Role: RoleControlPlane, Render: Renderer.CertRenewerSpec,
		Own:   own[CertRenewerConfig]("certRenewer", "Renew this control plane's certificates and kubeconfigs before they expire"),
		Phase: &Phase{CertRenewer, "Start kubeboot's renewal of this node's certificates and kubeconfigs before they expire"}},
	{Name: EtcdSnapshotter, Role: RoleControlPlane, Render: Renderer.EtcdSnapshotterSpec, Runs: Renderer.SnapshotsRun,
		Own:   own[EtcdSnapshotterConfig]("etcdSnapshotter", "Save etcd snapshots with the cluster's keys on a schedule, keeping the newest"),
		Phase: &Phase{EtcdSnapshotter, "Start kubeboot's scheduled etcd snapshots (--etcd-snapshot-interval)"}},
	{Name: ManifestApplier, Role: RoleControlPlane, Render: Renderer.ManifestApplierSpec,
		Own:   own[ManifestApplierConfig]("manifestApplier", "Apply the manifests directory of this control plane to the cluster"),
		Phase: &Phase{ManifestApplier, "Start kubeboot's applier of the manifests directory (init --manifests copies into it)"}},
	{Name: StorageScaler, Role: RoleControlPlane, Render: Renderer.StorageScalerSpec,
		Own:   own[StorageScalerConfig]("storageScaler", "Run the storage add-on's provisioner only while claims or volumes of its class exist"),
		Phase: &Phase{StorageScaler, "Start kubeboot's scaler of the storage add-on's provisioner (it runs while claims or volumes of its class exist)"}},
	{Name: Containerd, Role: RoleNode, Runs: Renderer.ManagedContainerd},
	{Name: ImageRegistry, Role: RoleNode, Render: Renderer.ImageRegistrySpec,
		Own: own[ImageRegistryConfig]("imageRegistry", "Serve kubeboot's images from the binary to the node's containerd, and import those it lacks")},
	{Name: Kubelet, Role: RoleNode, Render: Renderer.KubeletSpec},
	{Name: KubeProxy, Role: RoleNode, Render: Renderer.KubeProxySpec},
	{Name: Flannel, Role: RoleNode, Render: Renderer.FlannelSpec, Runs: Renderer.RunsFlannel, Engine: true},
	{Name: KubeRouter, Role: RoleNode, Render: Renderer.KubeRouterSpec, Runs: Renderer.RunsNetworkPolicy, Engine: true},
	{Name: CAAgent, Role: RoleNode, Render: Renderer.CAAgentSpec,
		Own: own[CAAgentConfig]("caAgent", "Follow rotations of the cluster CA on this node")},
	{Name: APIServerLB, Role: RoleNode,
		Own: own[APIServerLBConfig]("apiServerLB", "Run the node-local API server load balancer")},
}

// InDaemon are kubeboot's own components (Declared.Own set), in the
// table's order.
var InDaemon = names(func(d Declared) bool { return d.Own != nil })

// IsInDaemon reports whether the daemon runs name in its own process.
func IsInDaemon(name string) bool { return slices.Contains(InDaemon, name) }

// Lookup is the declaration of the component name.
func Lookup(name string) (Declared, bool) {
	i := slices.IndexFunc(Table, func(d Declared) bool { return d.Name == name })
	if i < 0 {
		return Declared{}, false
	}
	return Table[i], true
}

// NodeProcesses lists the node side's upstream processes (containerd, the
// kubelet, kube-proxy, the pod network's engines), in the table's order:
// what a node side runs beside the daemon's own components.
var NodeProcesses = names(func(d Declared) bool { return d.Role == RoleNode && d.Own == nil })

// engines lists the pod network's engines (Declared.Engine), in the
// table's order.
var engines = names(func(d Declared) bool { return d.Engine })

// IsEngine reports whether name is a pod network engine.
func IsEngine(name string) bool { return slices.Contains(engines, name) }

// EngineSpecs renders the pod network engines this configuration runs,
// in the table's order.
func (r Renderer) EngineSpecs() []Spec {
	var out []Spec
	for _, d := range Table {
		if d.Engine && (d.Runs == nil || d.Runs(r)) {
			out = append(out, d.Render(r))
		}
	}
	return out
}

// ControlPlane lists the control-plane components, in the table's order.
var ControlPlane = names(func(d Declared) bool { return d.Role == RoleControlPlane })

// names lists, in the table's order, the components keep keeps.
func names(keep func(Declared) bool) []string {
	var out []string
	for _, d := range Table {
		if keep(d) {
			out = append(out, d.Name)
		}
	}
	return out
}

// RoleOf is a component's role; a name the table does not know is on the
// node side.
func RoleOf(name string) Role {
	if d, ok := Lookup(name); ok {
		return d.Role
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
