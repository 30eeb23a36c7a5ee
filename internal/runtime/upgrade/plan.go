package upgrade

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	kbversion "github.com/kubeboot/kubeboot/internal/base/version"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
)

// Target is what an upgrade of this node reads before it changes
// anything: the new binary and its version, the components it replaces,
// and the cluster's API server.
type Target struct {
	// Binary is the new kubeboot binary, an absolute path.
	Binary string
	// Version is the Kubernetes version it carries.
	Version *version.Version
	// Specs are the components it replaces, in order.
	Specs []component.Spec
	// APIServer is the version the cluster's API server runs.
	APIServer *version.Version
	// Kubeboot is the new binary's kubeboot release.
	Kubeboot string
	// ControlPlane is set when this node runs an API server, LocalEtcd
	// when it runs an etcd member (both from the node's record).
	ControlPlane, LocalEtcd bool
	// NodeName is this node's name.
	NodeName string

	client kubernetes.Interface
}

// Prepare reads the target of an upgrade of the running node under fs to
// binary.
func Prepare(ctx context.Context, fs fsys.FS, binary string) (*Target, error) {
	if binary == "" {
		return nil, fmt.Errorf("--binary is required: the kubeboot binary to upgrade to")
	}
	bin, err := filepath.Abs(binary)
	if err != nil {
		return nil, err
	}
	if daemon.Running(fs) == 0 {
		return nil, fmt.Errorf("the kubeboot daemon is not running for %s: this is not a running kubeboot node", fs.Path("/"))
	}
	rec, err := component.Store{FS: fs}.Node()
	if err != nil {
		return nil, fmt.Errorf("reading the node's record: %w", err)
	}
	t := &Target{Binary: bin, ControlPlane: rec.Runs(component.APIServer), LocalEtcd: rec.Runs(component.Etcd), NodeName: rec.Name}
	var self kbversion.Info
	if t.Version, self, err = BinaryInfo(ctx, bin); err != nil {
		return nil, err
	}
	t.Kubeboot = self.Release()
	if t.Specs, err = Components(fs, component.IsInDaemon); err != nil {
		return nil, err
	}
	// The kubelet's credentials work on every node; a control plane uses
	// admin.conf, which can also list the nodes.
	conf := path.Join(node.KubernetesDir, kubeconfig.Kubelet)
	if t.ControlPlane {
		conf = node.AdminKubeconfig
	}
	if t.client, _, err = apiclient.FromKubeconfig(fs.Path(conf), ""); err != nil {
		return nil, err
	}
	info, err := t.client.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	if t.APIServer, err = version.ParseSemantic(info.GitVersion); err != nil {
		return nil, err
	}
	return t, nil
}

// Policy checks kubeadm's version-skew policy: for a control plane
// against the whole cluster (its API servers and every kubelet), for any
// other node against the API server.
func (t *Target) Policy(ctx context.Context) (mandatory, skippable []error, err error) {
	if !t.ControlPlane {
		if err := NodePolicy(t.Version, t.APIServer); err != nil {
			return []error{err}, nil, nil
		}
		return nil, nil, nil
	}
	nodes, err := t.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	kubelets := map[string][]string{}
	for _, n := range nodes.Items {
		kubelets[n.Status.NodeInfo.KubeletVersion] = append(kubelets[n.Status.NodeInfo.KubeletVersion], n.Name)
	}
	m, s := ControlPlanePolicy(Getter{Cluster: t.APIServer, Tool: t.Version, Kubelets: kubelets}, t.Version, false)
	return m, s, nil
}

// ComponentVersion is one component with the version it runs and the
// one it would run.
type ComponentVersion struct {
	Name, Current, Target string
}

// Versions lists each component the upgrade replaces with the version it
// runs now ("unknown" when its binary does not say) and the target's.
func (t *Target) Versions(ctx context.Context, fs fsys.FS) ([]ComponentVersion, error) {
	daemonExe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", daemon.Running(fs)))
	if err != nil {
		return nil, err
	}
	cache := map[string]string{}
	var out []ComponentVersion
	for _, sp := range t.Specs {
		bin := sp.Exec
		if bin == "" {
			bin = daemonExe
		}
		v, ok := cache[bin]
		if !ok {
			v = "unknown"
			if parsed, err := BinaryVersion(ctx, bin); err == nil {
				v = "v" + parsed.String()
			}
			cache[bin] = v
		}
		out = append(out, ComponentVersion{Name: sp.Name, Current: v, Target: "v" + t.Version.String()})
	}
	return out, nil
}
