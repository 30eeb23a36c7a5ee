// Package initphases declares the phase tree of `kubeboot init`: kubeadm's
// phases, in kubeadm's order, each calling into the domain packages. It
// holds declarations only; the work lives in pkg/.
package initphases

import (
	"context"
	"fmt"
	"io"

	"github.com/kubeboot/kubeboot/internal/workflow"
	"github.com/kubeboot/kubeboot/pkg/config"
	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/kubeconfig"
	"github.com/kubeboot/kubeboot/pkg/pki"
)

// Data is what every init phase works on.
type Data struct {
	Cfg         *config.Config
	FS          fsys.FS
	Out         io.Writer
	PKI         *pki.Generator
	Kubeconfigs *kubeconfig.Writer
}

// NewData wires the domain objects of one init run.
func NewData(cfg *config.Config, fs fsys.FS, out io.Writer) *Data {
	g := &pki.Generator{FS: fs, Cfg: cfg, Out: out}
	return &Data{
		Cfg: cfg, FS: fs, Out: out, PKI: g,
		Kubeconfigs: &kubeconfig.Writer{FS: fs, Cfg: cfg, PKI: g, Out: out},
	}
}

type phase = workflow.Phase[*Data]

const (
	pendingControlPlane = "needs the embedded control-plane components and the node daemon"
	pendingNode         = "needs the kubelet, the container runtime and the node images"
)

// Phases returns the init tree. Its shape does not depend on the
// configuration; phases that a configuration does not need (the etcd
// certificates with external etcd) are skipped at run time.
func Phases() []phase {
	return []phase{
		{Name: "preflight", Short: "Run pre-flight checks", Pending: pendingControlPlane},
		certsPhase(),
		kubeconfigPhase(),
		{Name: "etcd", Short: "Generate the configuration for and start a local etcd member", Phases: []phase{
			{Name: "local", Short: "Start the local, single-node etcd member", Pending: pendingControlPlane,
				RunIf: func(d *Data) bool { return d.Cfg.Cluster.Etcd.External == nil }},
		}},
		{Name: "control-plane", Short: "Generate the configuration for and start the control-plane components", Phases: []phase{
			{Name: "apiserver", Short: "Start the Kubernetes API Server", Pending: pendingControlPlane},
			{Name: "controller-manager", Short: "Start the Kubernetes Controller Manager", Pending: pendingControlPlane},
			{Name: "scheduler", Short: "Start the Kubernetes Scheduler", Pending: pendingControlPlane},
		}},
		{Name: "kubelet-start", Short: "Write kubelet settings and (re)start the kubelet", Pending: pendingNode},
		{Name: "wait-control-plane", Short: "Wait for the control plane to start", Pending: pendingControlPlane},
		{Name: "upload-config", Short: "Upload the kubeadm and kubelet configuration to a ConfigMap", Phases: []phase{
			{Name: "kubeadm", Short: "Upload the kubeadm ClusterConfiguration to a ConfigMap", Pending: pendingControlPlane},
			{Name: "kubelet", Short: "Upload the kubelet component config to a ConfigMap", Pending: pendingControlPlane},
		}},
		{Name: "upload-certs", Short: "Upload certificates to kubeadm-certs", Pending: pendingControlPlane},
		{Name: "mark-control-plane", Short: "Mark a node as a control-plane", Pending: pendingNode},
		{Name: "bootstrap-token", Short: "Generates bootstrap tokens used to join a node to a cluster", Pending: pendingControlPlane},
		{Name: "kubelet-finalize", Short: "Updates settings relevant to the kubelet after TLS bootstrap", Phases: []phase{
			{Name: "enable-client-cert-rotation", Short: "Enable kubelet client certificate rotation", Pending: pendingNode},
		}},
		{Name: "addon", Short: "Install required addons for passing conformance tests", Phases: []phase{
			{Name: "coredns", Short: "Install the CoreDNS addon to a Kubernetes cluster", Pending: pendingControlPlane},
			{Name: "kube-proxy", Short: "Install the kube-proxy addon to a Kubernetes cluster", Pending: pendingNode},
		}},
		{Name: "show-join-command", Short: "Show the join command for control-plane and worker node", Pending: pendingControlPlane},
	}
}

// certsPhase is generated from the certificate list, as kubeadm does.
func certsPhase() phase {
	p := phase{Name: "certs", Short: "Certificate generation",
		Run: func(_ context.Context, d *Data) error {
			fmt.Fprintf(d.Out, "[certs] Using certificateDir folder %q\n", d.FS.Path(d.PKI.Dir()))
			return d.FS.MkdirAll(d.PKI.Dir(), 0o700)
		}}
	for _, s := range pki.List(nil) {
		name := s.Name
		p.Phases = append(p.Phases, phase{
			Name:  name,
			Short: "Generate the " + s.LongName,
			RunIf: func(d *Data) bool { _, needed := pki.List(d.Cfg).Get(name); return needed },
			Run: func(_ context.Context, d *Data) error {
				spec, _ := pki.List(d.Cfg).Get(name)
				return d.PKI.Ensure(spec)
			},
		})
	}
	p.Phases = append(p.Phases, phase{
		Name:  "sa",
		Short: "Generate a private key for signing service account tokens along with its public key",
		Run:   func(_ context.Context, d *Data) error { return d.PKI.EnsureServiceAccountKey() },
	})
	return p
}

func kubeconfigPhase() phase {
	p := phase{Name: "kubeconfig", Short: "Generate all kubeconfig files necessary to establish the control plane and the admin kubeconfig file",
		Run: func(_ context.Context, d *Data) error {
			fmt.Fprintf(d.Out, "[kubeconfig] Using kubeconfig folder %q\n", d.FS.Path(kubeconfig.Dir))
			return d.FS.MkdirAll(kubeconfig.Dir, 0o755)
		}}
	for i, s := range kubeconfig.List(nil) {
		p.Phases = append(p.Phases, phase{
			Name:  s.Name,
			Short: s.Short,
			Run: func(_ context.Context, d *Data) error {
				return d.Kubeconfigs.Ensure(kubeconfig.List(d.Cfg)[i])
			},
		})
	}
	return p
}
