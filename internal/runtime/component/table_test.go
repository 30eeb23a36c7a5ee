package component

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// TestTable: each renderer renders the component it is declared for, and
// the configuration decides which control-plane components run.
func TestTable(t *testing.T) {
	cfg, err := config.InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	r := Renderer{Cfg: cfg, FS: fsys.NewRoot(t.TempDir())}
	for _, d := range Table {
		if d.Render != nil {
			if s := d.Render(r); s.Name != d.Name {
				t.Errorf("the renderer declared for %s renders %s", d.Name, s.Name)
			}
		}
	}
	names := func(specs []Spec) []string {
		var out []string
		for _, s := range specs {
			out = append(out, s.Name)
		}
		return out
	}
	if got, want := names(r.Specs(RoleControlPlane)), []string{Etcd, APIServer, ControllerManager, Scheduler, CertRenewer, ManifestApplier, StorageScaler}; !slices.Equal(got, want) {
		t.Errorf("control plane %v, want %v", got, want)
	}
	// Scheduled snapshots run where etcd is local and an interval is set.
	cfg.Lifecycle.EtcdSnapshotInterval = time.Hour
	if got, want := names(r.Specs(RoleControlPlane)), []string{Etcd, APIServer, ControllerManager, Scheduler, CertRenewer, EtcdSnapshotter, ManifestApplier, StorageScaler}; !slices.Equal(got, want) {
		t.Errorf("with scheduled snapshots %v, want %v", got, want)
	}
	cfg.Kubelet = &kubeletv1beta1.KubeletConfiguration{ServerTLSBootstrap: true}
	cfg.Cluster.Etcd = kubeadmv1.Etcd{External: &kubeadmv1.ExternalEtcd{Endpoints: []string{"https://10.0.0.9:2379"}}}
	if got, want := names(r.Specs(RoleControlPlane)), []string{APIServer, ControllerManager, Scheduler, CSRApprover, CertRenewer, ManifestApplier, StorageScaler}; !slices.Equal(got, want) {
		t.Errorf("with external etcd and serverTLSBootstrap: %v, want %v", got, want)
	}
	if want := []string{Containerd, Kubelet, KubeProxy, Flannel, KubeRouter}; !slices.Equal(NodeProcesses, want) {
		t.Errorf("the node side's processes %v, want %v", NodeProcesses, want)
	}
	if got, want := names(r.Specs(RoleNode)), []string{ImageRegistry, Kubelet, KubeProxy, CAAgent}; !slices.Equal(got, want) {
		t.Errorf("node side %v, want %v", got, want)
	}
	// The pod network's engines run as init's flags say.
	cfg.PodNetwork = config.DefaultPodNetwork()
	if got, want := names(r.Specs(RoleNode)), []string{ImageRegistry, Kubelet, KubeProxy, Flannel, KubeRouter, CAAgent}; !slices.Equal(got, want) {
		t.Errorf("node side with the default pod network %v, want %v", got, want)
	}
	if got, want := names(r.EngineSpecs()), []string{Flannel, KubeRouter}; !slices.Equal(got, want) {
		t.Errorf("the default pod network's engines %v, want %v", got, want)
	}
	cfg.PodNetwork = config.PodNetwork{Backend: config.BackendNone, NetworkPolicy: true}
	if got, want := names(r.EngineSpecs()), []string{KubeRouter}; !slices.Equal(got, want) {
		t.Errorf("--flannel-backend none: engines %v, want %v", got, want)
	}
	if got, want := names(r.Specs(RoleNode)), []string{ImageRegistry, Kubelet, KubeProxy, KubeRouter, CAAgent}; !slices.Equal(got, want) {
		t.Errorf("node side with --flannel-backend none %v, want %v", got, want)
	}

	// A written spec carries its role, for the daemon and status.
	store := Store{FS: r.FS}
	if err := store.Write(r.Scheduler()); err != nil {
		t.Fatal(err)
	}
	b, _ := r.FS.ReadFile(SpecPath(Scheduler))
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil || s.Role != RoleControlPlane {
		t.Errorf("written spec's role %q (%v)", s.Role, err)
	}
}

// TestPhases: every control-plane component but etcd (which has init's
// etcd phase) has its phase under init's control-plane phase, a name of
// its own, and a renderer for the phase to write; nothing else has one.
func TestPhases(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Table {
		if d.Engine && (d.Role != RoleNode || d.Render == nil || d.Own != nil) {
			t.Errorf("%s: an engine is an upstream-style process of the node side with a renderer", d.Name)
		}
		wants := d.Role == RoleControlPlane && d.Name != Etcd
		if (d.Phase != nil) != wants {
			t.Errorf("%s (%s): phase %v; a phase is for the control plane's components but etcd", d.Name, d.Role, d.Phase)
			continue
		}
		if d.Phase == nil {
			continue
		}
		if d.Phase.Name == "" || d.Phase.Short == "" || seen[d.Phase.Name] || d.Render == nil {
			t.Errorf("%s: phase %+v (a name used before: %v), renderer %v", d.Name, *d.Phase, seen[d.Phase.Name], d.Render != nil)
		}
		seen[d.Phase.Name] = true
	}
}

// The components that read a kubeconfig with an embedded certificate only
// at start name it in RestartOn; the API server and etcd, which reload
// their certificates, name nothing.
func TestRestartOn(t *testing.T) {
	cfg, err := config.InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	r := Renderer{Cfg: cfg, FS: fsys.NewRoot("/r")}
	for _, tc := range []struct {
		spec Spec
		want []string
	}{
		{r.APIServer(), nil},
		{r.LocalEtcd(), nil},
		{r.ControllerManager(), []string{"/r/etc/kubernetes/controller-manager.conf"}},
		{r.Scheduler(), []string{"/r/etc/kubernetes/scheduler.conf"}},
		{r.CSRApproverSpec(), []string{"/r/etc/kubernetes/controller-manager.conf"}},
		{r.KubeProxySpec(), []string{"/r/etc/kubernetes/kube-proxy.conf"}},
	} {
		if !slices.Equal(tc.spec.RestartOn, tc.want) {
			t.Errorf("%s restarts on %v, want %v", tc.spec.Name, tc.spec.RestartOn, tc.want)
		}
	}
}
