// Package initphases declares the phase tree of `kubeboot init`: kubeadm's
// phases, in kubeadm's order, each calling into the domain packages. It
// holds declarations and the glue between phases; the work lives in the
// groups below it (internal/certs, internal/runtime, …).
package initphases

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/bootstraptoken/clusterinfo"
	nodebootstraptoken "k8s.io/kubernetes/cmd/kubeadm/app/phases/bootstraptoken/node"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/certs/csrapprover"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/host/hardening"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/host/nodestate"
	"github.com/kubeboot/kubeboot/internal/host/preflight"
	"github.com/kubeboot/kubeboot/internal/kube/addons"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/kube/discovery"
	"github.com/kubeboot/kubeboot/internal/kube/manifests"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/nodeup"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Data is what every init phase works on.
type Data struct {
	// Node hands components to the node daemon and brings the node side
	// up; init's control plane goes through it too.
	*nodeup.Node
	Cfg                   *config.Config
	PKI                   *pki.Generator
	Kubeconfigs           *kubeconfig.Writer
	IgnorePreflightErrors []string
	UploadCerts           bool
	SkipTokenPrint        bool
	// SkipCertificateKeyPrint withholds the certificate key, as kubeadm's
	// flag of that name.
	SkipCertificateKeyPrint bool
	// DNSUpstream is the operator's --dns-upstream, nil when not given
	// (see node.DNSUpstream).
	DNSUpstream *string
	// SingleNode leaves the control-plane taint off, so that the one node
	// runs workloads.
	SingleNode bool
	// Manifests are the files init copies into the manifests directory
	// (init --manifests), by name.
	Manifests []manifests.Source
	// Hardened lists the settings --hardened added, for the log.
	Hardened []string
	// AddOnSettings lists the settings the add-ons need that init turned
	// on, for the log.
	AddOnSettings []string
	// ControlPlaneOnly brings up the control plane without the node side
	// (`kubeboot dev up --mode control-plane`): no kubelet to check for or
	// wait for, and no root privileges needed.
	ControlPlaneOnly bool

	client kubernetes.Interface
	rest   *rest.Config
}

// NewData wires the domain objects of one init run.
func NewData(cfg *config.Config, fs fsys.FS, out io.Writer) *Data {
	g := &pki.Generator{FS: fs, Cfg: cfg, Out: out}
	return &Data{
		Node: &nodeup.Node{Cfg: cfg, FS: fs, Out: out, Role: nodestate.ControlPlane, Start: time.Now(),
			Timeout: cfg.Init.Timeouts.ControlPlaneComponentHealthCheck.Duration},
		Cfg: cfg, PKI: g,
		Kubeconfigs: &kubeconfig.Writer{FS: fs, Cfg: cfg, PKI: g, Out: out},
	}
}

// PrepareKeys starts generating, on every core, the keys this run will
// need for the certificates and kubeconfig files that do not exist yet.
// Only a whole init run calls it: a single phase needs one key or none.
func (d *Data) PrepareKeys() {
	n := 0
	missing := func(p string) {
		if !fsys.Exists(d.FS, p) {
			n++
		}
	}
	for _, s := range pki.List(d.Cfg) {
		missing(path.Join(d.PKI.Dir(), s.BaseName+".key"))
	}
	missing(path.Join(d.PKI.Dir(), "sa.key"))
	for _, k := range kubeconfig.List(d.Cfg) {
		missing(path.Join(node.KubernetesDir, k.FileName))
	}
	d.PKI.Keys = pki.NewKeyPool(d.Cfg.Cluster.EncryptionAlgorithm, n)
}

func (d *Data) localServer() string {
	return fmt.Sprintf("https://127.0.0.1:%d", d.Cfg.Init.LocalAPIEndpoint.BindPort)
}

// Client is an admin client of the local API server. init talks to its
// own API server directly; the kubeconfig files name the endpoint.
func (d *Data) Client() (kubernetes.Interface, error) {
	if d.client != nil {
		return d.client, nil
	}
	c, rc, err := apiclient.FromKubeconfig(d.FS.Path(node.AdminKubeconfig), d.localServer())
	if err != nil {
		return nil, err
	}
	d.client, d.rest = c, rc
	return c, nil
}

// aggregator is the client of the API server's aggregation layer
// (APIServices), as Client's admin.
func (d *Data) aggregator() (aggregator.Interface, error) {
	if _, err := d.Client(); err != nil {
		return nil, err
	}
	if d.rest == nil { // a client set by a test
		return nil, fmt.Errorf("no REST configuration for the aggregation layer")
	}
	return aggregator.NewForConfig(d.rest)
}

func (d *Data) apiTimeout() time.Duration { return d.Cfg.Init.Timeouts.KubernetesAPICall.Duration }

// withClient runs an API phase with retries (a fresh control plane can
// still refuse a call while its caches warm). In a dry run it only says
// what it would do.
func (d *Data) withClient(ctx context.Context, what string, f func(context.Context, kubernetes.Interface) error) error {
	if d.FS.DryRun() {
		d.Logf("[dryrun] Would %s", what)
		return nil
	}
	c, err := d.Client()
	if err != nil {
		return err
	}
	if err := apiclient.Retry(ctx, d.apiTimeout(), func(ctx context.Context) error { return f(ctx, c) }); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

type phase = workflow.Phase[*Data]

// Phases returns the init tree. Its shape does not depend on the
// configuration; phases a configuration does not need (the etcd
// certificates with external etcd) are skipped at run time.
func Phases() []phase {
	return []phase{
		{Name: "preflight", Short: "Run pre-flight checks", Run: runPreflight},
		certsPhase(),
		kubeconfigPhase(),
		{Name: "etcd", Short: "Generate the configuration for and start a local etcd member", Phases: []phase{
			{Name: "local", Short: "Start the local, single-node etcd member",
				RunIf: func(d *Data) bool { return d.Cfg.Cluster.Etcd.External == nil }, Run: runLocalEtcd},
		}},
		{Name: "control-plane", Short: "Generate the configuration for and start the control-plane components",
			Run: func(_ context.Context, d *Data) error {
				d.Logf("[control-plane] Using component spec folder %q", d.FS.Path(node.SpecDir))
				return hardening.Files(d.FS, d.Cfg, true, d.Logf)
			},
			Phases: controlPlanePhases(),
		},
		{Name: "kubelet-start", Short: "Write kubelet settings and (re)start the kubelet", Run: runKubeletStart},
		{Name: "wait-control-plane", Short: "Wait for the control plane to start", Run: runWaitControlPlane},
		{Name: "upload-config", Short: "Upload the kubeadm and kubelet configuration to a ConfigMap", Phases: []phase{
			{Name: "kubeadm", Short: "Upload the kubeadm ClusterConfiguration to a ConfigMap", Run: func(ctx context.Context, d *Data) error {
				d.Logf("[upload-config] Storing the configuration used in ConfigMap %q in the %q Namespace", bootstrap.KubeadmConfigMap, "kube-system")
				return d.withClient(ctx, "upload the ClusterConfiguration", func(ctx context.Context, c kubernetes.Interface) error {
					if err := bootstrap.UploadKubeadmConfig(ctx, c, d.Cfg); err != nil {
						return err
					}
					// kubeboot's own choice of pod network, beside it.
					return bootstrap.UploadPodNetwork(ctx, c, d.Cfg)
				})
			}},
			{Name: "kubelet", Short: "Upload the kubelet component config to a ConfigMap", Run: func(ctx context.Context, d *Data) error {
				d.Logf("[kubelet] Creating a ConfigMap %q in namespace kube-system with the configuration for the kubelets in the cluster", bootstrap.KubeletConfigMap)
				return d.withClient(ctx, "upload the KubeletConfiguration", func(ctx context.Context, c kubernetes.Interface) error {
					return bootstrap.UploadKubeletConfig(ctx, c, d.Cfg)
				})
			}},
		}},
		{Name: "upload-certs", Short: "Upload certificates to kubeadm-certs", RunIf: func(d *Data) bool { return d.UploadCerts }, Run: runUploadCerts},
		{Name: "mark-control-plane", Short: "Mark a node as a control-plane", Run: runMarkControlPlane},
		{Name: "bootstrap-token", Short: "Generates bootstrap tokens used to join a node to a cluster", Run: runBootstrapToken},
		{Name: "kubelet-finalize", Short: "Updates settings relevant to the kubelet after TLS bootstrap", Phases: []phase{
			{Name: "enable-client-cert-rotation", Short: "Enable kubelet client certificate rotation", Run: runEnableClientCertRotation},
		}},
		{Name: "addon", Short: "Install required addons for passing conformance tests", Phases: []phase{
			{Name: "coredns", Short: "Install the CoreDNS addon to a Kubernetes cluster", RunIf: func(d *Data) bool { return !d.Cfg.Cluster.DNS.Disabled }, Run: runCoreDNS},
			{Name: "kube-proxy", Short: "Install the kube-proxy addon to a Kubernetes cluster", RunIf: func(d *Data) bool { return !d.Cfg.Cluster.Proxy.Disabled }, Run: runKubeProxy},
			{Name: "storage", Short: "Install the storage addon: local-path-provisioner behind the default StorageClass", Run: runStorage},
			{Name: "metrics-server", Short: "Install the metrics addon: metrics-server behind the metrics.k8s.io API (kubectl top)", Run: runMetricsServer},
		}},
		{Name: "show-join-command", Short: "Show the join command for control-plane and worker node", Run: runShowJoinCommand},
	}
}

func runPreflight(_ context.Context, d *Data) error {
	d.Logf("[preflight] Running pre-flight checks")
	c := d.Cfg
	var checks []preflight.Check
	if !d.ControlPlaneOnly {
		checks = append(checks, preflight.IsPrivilegedUser())
	}
	// The ports the components will listen on, from their final flags.
	r := d.Renderer()
	checks = append(checks, component.PortChecks(r.Specs(component.RoleControlPlane))...)
	for _, name := range component.ControlPlane {
		checks = append(checks, preflight.FileAvailable(d.FS, component.SpecPath(name)))
	}
	if c.Cluster.Etcd.Local != nil {
		checks = append(checks, preflight.DirAvailable(d.FS, c.Cluster.Etcd.Local.DataDir))
	}
	if !d.ControlPlaneOnly {
		checks = append(checks, d.Checks()...)
	}
	ignore := append(append([]string(nil), d.IgnorePreflightErrors...), c.Init.NodeRegistration.IgnorePreflightErrors...)
	return preflight.Run(checks, ignore, d.Out)
}

// certsPhase is generated from the certificate list, as kubeadm does.
func certsPhase() phase {
	p := phase{Name: "certs", Short: "Certificate generation",
		Run: func(_ context.Context, d *Data) error {
			d.Logf("[certs] Using certificateDir folder %q", d.FS.Path(d.PKI.Dir()))
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
			d.Logf("[kubeconfig] Using kubeconfig folder %q", d.FS.Path(node.KubernetesDir))
			return d.FS.MkdirAll(node.KubernetesDir, 0o755)
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

// runLocalEtcd hands the member to the node daemon without waiting for
// it, as kubeadm writes etcd's static pod: the API server starts alongside
// and wait-control-plane checks etcd first.
func runLocalEtcd(_ context.Context, d *Data) error {
	return d.WriteSpec(d.Renderer().LocalEtcd(), "etcd")
}

// controlPlanePhases are the control-plane phase's children: a phase for
// each component the table gives one, in the table's order, which writes
// its spec when the configuration runs it.
func controlPlanePhases() []phase {
	var out []phase
	for _, c := range component.Table {
		if c.Phase == nil {
			continue
		}
		p := phase{Name: c.Phase.Name, Short: c.Phase.Short, Run: controlPlane(c.Render)}
		if runs := c.Runs; runs != nil {
			p.RunIf = func(d *Data) bool { return runs(d.Renderer()) }
		}
		if c.Name == component.ManifestApplier {
			p.Run = runManifestApplier
		}
		out = append(out, p)
	}
	return out
}

func controlPlane(render func(component.Renderer) component.Spec) func(context.Context, *Data) error {
	return func(_ context.Context, d *Data) error {
		return d.WriteSpec(render(d.Renderer()), "control-plane")
	}
}

// runManifestApplier copies the manifests of init --manifests into the
// manifests directory and starts its applier.
func runManifestApplier(ctx context.Context, d *Data) error {
	if len(d.Manifests) > 0 {
		var names []string
		for _, m := range d.Manifests {
			names = append(names, m.Name)
		}
		d.Logf("[control-plane] Copying the manifests %s into %q, which kubeboot applies to the cluster and keeps applied", strings.Join(names, ", "), d.FS.Path(manifests.Dir))
		if err := d.FS.MkdirAll(manifests.Dir, 0o700); err != nil {
			return err
		}
		for _, m := range d.Manifests {
			if err := d.FS.WriteFile(path.Join(manifests.Dir, m.Name), m.Data, 0o600); err != nil {
				return err
			}
		}
	}
	return controlPlane(component.Renderer.ManifestApplierSpec)(ctx, d)
}

func runWaitControlPlane(ctx context.Context, d *Data) error {
	r := d.Renderer()
	d.Logf("[control-plane-check] Waiting for healthy control plane components. This can take up to %s", d.Cfg.Init.Timeouts.ControlPlaneComponentHealthCheck.Duration)
	if !d.ControlPlaneOnly {
		if err := d.waitKubelet(ctx); err != nil {
			return err
		}
	}
	for _, spec := range r.Specs(component.RoleControlPlane) {
		if err := d.Wait(ctx, "control-plane-check", spec); err != nil {
			return err
		}
	}
	if d.FS.DryRun() {
		return nil
	}
	// admin.conf's group has no rights until this binding exists; only
	// super-admin.conf can create it.
	super, _, err := apiclient.FromKubeconfig(d.FS.Path(path.Join(node.KubernetesDir, "super-admin.conf")), d.localServer())
	if err != nil {
		return err
	}
	return apiclient.Retry(ctx, d.apiTimeout(), func(ctx context.Context) error { return bootstrap.EnsureAdminBinding(ctx, super) })
}

func runUploadCerts(ctx context.Context, d *Data) error {
	if d.Cfg.Init.CertificateKey == "" {
		key, err := bootstrap.NewCertificateKey()
		if err != nil {
			return err
		}
		d.Cfg.Init.CertificateKey = key
	}
	d.Logf("[upload-certs] Storing the certificates in Secret %q in the %q Namespace", bootstrap.KubeadmCertsSecret, "kube-system")
	if err := d.withClient(ctx, "upload the control-plane certificates", func(ctx context.Context, c kubernetes.Interface) error {
		return bootstrap.UploadCerts(ctx, c, d.FS, d.Cfg, d.Cfg.Init.CertificateKey)
	}); err != nil {
		return err
	}
	if d.SkipCertificateKeyPrint {
		d.Logf("[upload-certs] The certificate key is not printed (--skip-certificate-key-print)")
		return nil
	}
	d.Logf("[upload-certs] Using certificate key:\n%s", d.Cfg.Init.CertificateKey)
	return nil
}

func runBootstrapToken(ctx context.Context, d *Data) error {
	if !d.SkipTokenPrint {
		for _, bt := range d.Cfg.Init.BootstrapTokens {
			d.Logf("[bootstrap-token] Using token: %s", bt.Token)
		}
	}
	d.Logf("[bootstrap-token] Configuring bootstrap tokens, cluster-info ConfigMap, RBAC Roles")
	admin, err := clientcmd.LoadFromFile(d.FS.Path(node.AdminKubeconfig))
	if err != nil && !d.FS.DryRun() {
		return err
	}
	// kubeadm's own bootstrap-token phase, step by step
	// (cmd/kubeadm/app/cmd/phases/init/bootstraptoken.go), its lines
	// included; then the rules kubeboot's nodes need besides.
	return d.withClient(ctx, "create the bootstrap tokens and cluster-info", func(ctx context.Context, c kubernetes.Interface) error {
		return apiclient.KubeadmPrintsTo(d.Out, func() error { return d.bootstrapTokens(ctx, c, admin) })
	})
}

func (d *Data) bootstrapTokens(ctx context.Context, c kubernetes.Interface, admin *clientcmdapi.Config) error {
	if err := nodebootstraptoken.UpdateOrCreateTokens(c, false, d.Cfg.Init.BootstrapTokens); err != nil {
		return fmt.Errorf("error updating or creating token: %w", err)
	}
	for _, rbac := range []func(kubernetes.Interface) error{
		nodebootstraptoken.AllowBootstrapTokensToGetNodes,
		nodebootstraptoken.AllowBootstrapTokensToPostCSRs,
		nodebootstraptoken.AutoApproveNodeBootstrapTokens,
		nodebootstraptoken.AutoApproveNodeCertificateRotation,
		nodebootstraptoken.AllowAPIServerToAccessKubeletAPI,
	} {
		if err := rbac(c); err != nil {
			return err
		}
	}
	if err := bootstrap.NodeRBAC(ctx, c, d.Cfg.PodNetwork.NetworkPolicy); err != nil {
		return err
	}
	d.Logf("[bootstrap-token] Configured RBAC rules to allow nodes to run kube-proxy with their own credentials and to remove their own Node object on reset")
	if d.Renderer().ServesTLSBootstrap() {
		if err := csrapprover.RBAC(ctx, c); err != nil {
			return err
		}
		d.Logf("[bootstrap-token] Configured RBAC rules to allow the control plane to approve the serving certificates of known nodes' kubelets")
	}
	if err := clusterinfo.CreateBootstrapConfigMapIfNotExists(c, admin); err != nil {
		return fmt.Errorf("error creating bootstrap ConfigMap: %w", err)
	}
	return clusterinfo.CreateClusterInfoRBACRules(c)
}

func runCoreDNS(ctx context.Context, d *Data) error {
	if err := d.WaitImages(ctx); err != nil {
		return err
	}
	host, err := d.HostDNS()
	if err != nil {
		return err
	}
	up, err := node.DNSUpstream(d.DNSUpstream, host)
	if err != nil {
		return err
	}
	if up.Warning != "" {
		d.Logf("[addons] WARNING: %s", up.Warning)
	}
	o := addons.DNSOptions{
		Domain:    d.Cfg.Cluster.Networking.DNSDomain,
		ServiceIP: node.ClusterDNSIP(d.Cfg.Cluster.Networking.ServiceSubnet),
		Upstream:  up.Forward,
	}
	if err := d.withClient(ctx, "install CoreDNS", func(ctx context.Context, c kubernetes.Interface) error {
		return addons.EnsureCoreDNS(ctx, c, o)
	}); err != nil {
		return err
	}
	if o.Upstream != "" {
		d.Logf("[addons] Applied essential addon: CoreDNS (forwarding names outside the cluster to %s)", o.Upstream)
	} else {
		d.Logf("[addons] Applied essential addon: CoreDNS (answering cluster names only)")
	}
	return nil
}

func runStorage(ctx context.Context, d *Data) error {
	// Its image is imported after CoreDNS's, off CoreDNS's path; the
	// Deployment waits for it rather than for an image pull's back-off.
	if err := d.WaitAllImages(ctx); err != nil {
		return err
	}
	if err := d.withClient(ctx, "install the storage addon", func(ctx context.Context, c kubernetes.Interface) error {
		return addons.EnsureStorage(ctx, c)
	}); err != nil {
		return err
	}
	d.Logf("[addons] Applied addon: storage (the default StorageClass %q: rancher's local-path-provisioner, each node's volumes under %s/<node>)", addons.StorageClass, node.StorageRoot)
	return nil
}

// MetricsServerPhase is the path of the metrics add-on's phase.
const MetricsServerPhase = "addon/metrics-server"

func runMetricsServer(ctx context.Context, d *Data) error {
	if err := d.WaitAllImages(ctx); err != nil {
		return err
	}
	if err := d.withClient(ctx, "install the metrics addon", func(ctx context.Context, c kubernetes.Interface) error {
		a, err := d.aggregator()
		if err != nil {
			return err
		}
		return addons.EnsureMetricsServer(ctx, c, a)
	}); err != nil {
		return err
	}
	how := "the kubelets verified against the cluster CA"
	if !d.Renderer().ServesTLSBootstrap() {
		// `init phase addon metrics-server` on a cluster made without it.
		how = "WARNING: the kubelets serve self-signed certificates (serverTLSBootstrap is off), which metrics-server refuses: set serverTLSBootstrap: true in the KubeletConfiguration"
	}
	d.Logf("[addons] Applied addon: metrics-server (the metrics.k8s.io API for kubectl top; %s)", how)
	return nil
}

// JoinInfo is what another node needs to join the cluster this run made:
// the endpoint every kubeconfig names (host:port), the first bootstrap
// token and the pin of the cluster CA's public key.
func (d *Data) JoinInfo() (endpoint, token, caHash string, err error) {
	ca, err := d.PKI.CA("ca")
	if err != nil {
		return "", "", "", err
	}
	if len(d.Cfg.Init.BootstrapTokens) > 0 && d.Cfg.Init.BootstrapTokens[0].Token != nil {
		token = d.Cfg.Init.BootstrapTokens[0].Token.String()
	}
	return strings.TrimPrefix(kubeconfig.ServerURL(d.Cfg), "https://"), token, pubkeypin.Hash(ca.Cert), nil
}

func runShowJoinCommand(_ context.Context, d *Data) error {
	endpoint, token, hash, err := d.JoinInfo()
	if err != nil {
		return err
	}
	// As kubeadm: a withheld secret is not printed anywhere, the join
	// command included. Token and certificate key together open the
	// cluster's CA keys for two hours.
	key := d.Cfg.Init.CertificateKey
	if d.SkipTokenPrint {
		token = "<value withheld>"
	}
	if d.SkipCertificateKeyPrint {
		key = "<value withheld>"
	}
	admin := d.FS.Path(node.AdminKubeconfig)
	fmt.Fprintf(d.Out, `
Your Kubernetes control-plane has initialized successfully!

To start using your cluster, you need to run the following as a regular user:

  mkdir -p $HOME/.kube
  sudo cp -i %[1]s $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

Alternatively, if you are the root user, you can run:

  export KUBECONFIG=%[1]s

kubectl is built in: kubeboot kubectl --kubeconfig %[1]s get nodes

`, admin)
	if d.UploadCerts {
		fmt.Fprintf(d.Out, "You can now join any number of control-plane nodes running the following command on each as root:\n\n%s\n\n",
			discovery.JoinCommand(endpoint, token, hash, true, key))
		fmt.Fprintf(d.Out, "Please note that the certificate-key gives access to cluster sensitive data, keep it secret!\nAs a safeguard, uploaded-certs will be deleted in two hours.\n\n")
	}
	fmt.Fprintf(d.Out, "Then you can join any number of worker nodes by running the following on each as root:\n\n%s\n",
		discovery.JoinCommand(endpoint, token, hash, false, ""))
	return nil
}
