// Package joinphases declares the phase tree of `kubeboot join`: kubeadm's
// join phases, in kubeadm's order, calling into the domain packages.
package joinphases

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/poll"
	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/host/nodestate"
	"github.com/kubeboot/kubeboot/internal/host/preflight"
	"github.com/kubeboot/kubeboot/internal/kube/discovery"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/nodeup"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Data is what every join phase works on.
type Data struct {
	// Node brings the node side up. Its Cfg starts with this node's
	// registration (an InitConfiguration made from the JoinConfiguration,
	// as kubeadm makes it) and gets the cluster's documents once discovery
	// has read them.
	*nodeup.Node
	// Join is the JoinConfiguration.
	Join                  *kubeadmv1.JoinConfiguration
	IgnorePreflightErrors []string
	// NodeChecksOnly makes preflight run this node's checks and stop: no
	// discovery, the cluster is not asked (it may not exist yet).
	NodeChecksOnly bool

	cluster   *discovery.Cluster
	bootstrap *clientcmdapi.Config
	// certs are the control-plane certificates downloaded with the
	// certificate key, held until download-certs writes them.
	certs []bootstrap.CertFile
	pki   *pki.Generator
	// host is what was detected of the machine (its addresses).
	host config.Host
}

// NewData wires one join run.
func NewData(join *kubeadmv1.JoinConfiguration, h config.Host, fs fsys.FS, out io.Writer) *Data {
	in := &kubeadmv1.InitConfiguration{NodeRegistration: join.NodeRegistration}
	if join.ControlPlane != nil {
		in.LocalAPIEndpoint = join.ControlPlane.LocalAPIEndpoint
	} else {
		// A worker's node IP, as the kubelet would choose it.
		in.LocalAPIEndpoint.AdvertiseAddress = h.DefaultIP
	}
	cfg := &config.Config{Join: join, Init: in}
	role := nodestate.Worker
	if join.ControlPlane != nil {
		role = nodestate.ControlPlane
	}
	d := &Data{
		Node: &nodeup.Node{Cfg: cfg, FS: fs, Out: out, Role: role, Start: time.Now(), Timeout: join.Timeouts.KubeletHealthCheck.Duration},
		Join: join,
		host: h,
	}
	if join.ControlPlane != nil {
		d.KubeletRequires = []string{component.APIServer}
	}
	return d
}

type phase = workflow.Phase[*Data]

func isControlPlane(d *Data) bool { return d.Join.ControlPlane != nil }

// Phases returns the join tree, kubeadm's.
func Phases() []phase {
	return []phase{
		{Name: "preflight", Short: "Run join pre-flight checks", Run: runPreflight},
		{Name: "control-plane-prepare", Short: "Prepare the machine for serving a control plane", RunIf: isControlPlane, Phases: []phase{
			{Name: "download-certs", Short: "Download certificates shared among control-plane nodes from the kubeadm-certs Secret", Run: runDownloadCerts},
			{Name: "certs", Short: "Generate the certificates for the new control plane components", Run: runControlPlaneCerts},
			{Name: "kubeconfig", Short: "Generate the kubeconfig for the new control plane components", Run: runControlPlaneKubeconfigs},
			{Name: "control-plane", Short: "Generate the specs for the new control plane components", Run: runControlPlaneSpecs},
		}},
		{Name: "kubelet-start", Short: "Write kubelet settings, certificates and (re)start the kubelet", Run: runKubeletStart},
		{Name: "etcd-join", Short: "Join etcd for control plane nodes", RunIf: isControlPlane, Run: runEtcdJoin},
		{Name: "kubelet-wait-bootstrap", Short: "Wait for the kubelet to bootstrap itself", Run: runKubeletWaitBootstrap},
		{Name: "control-plane-join", Short: "Join a machine as a control plane instance", RunIf: isControlPlane, Phases: []phase{
			{Name: "mark-control-plane", Short: "Mark a node as a control-plane", Run: runMarkControlPlane},
		}},
		{Name: "wait-control-plane", Short: "Wait for the control plane to start", RunIf: isControlPlane, Run: runWaitControlPlane},
	}
}

func runPreflight(ctx context.Context, d *Data) error {
	d.Logf("[preflight] Running pre-flight checks")
	checks := []preflight.Check{preflight.IsPrivilegedUser()}
	for _, f := range []string{path.Join(node.KubernetesDir, kubeconfig.Kubelet), path.Join(node.KubernetesDir, kubeconfig.BootstrapKubelet), d.Join.CACertPath} {
		checks = append(checks, preflight.FileAvailable(d.FS, f))
	}
	checks = append(checks, d.Checks()...)
	if isControlPlane(d) {
		checks = append(checks, d.controlPlaneChecks()...)
	}
	ignore := append(append([]string(nil), d.IgnorePreflightErrors...), d.Join.NodeRegistration.IgnorePreflightErrors...)
	if err := preflight.Run(checks, ignore, d.Out); err != nil {
		return err
	}
	if d.NodeChecksOnly {
		d.Logf("[preflight] This node's checks passed; the cluster was not asked (node checks only)")
		return nil
	}
	if err := d.discover(ctx); err != nil {
		return err
	}
	if isControlPlane(d) {
		d.Logf("[preflight] Running pre-flight checks before initializing the new control plane instance")
		if err := preflight.Run(d.controlPlaneClusterChecks(), ignore, d.Out); err != nil {
			return err
		}
	}
	return nil
}

// discover finds and validates the cluster and reads its configuration,
// once per run; nothing is written on this node before it succeeds.
func (d *Data) discover(ctx context.Context) error {
	if d.cluster != nil {
		return nil
	}
	disc := d.Join.Discovery
	timeout := d.Join.Timeouts.Discovery.Duration
	var cl *discovery.Cluster
	var err error
	switch {
	case disc.BootstrapToken != nil:
		td := &discovery.TokenDiscovery{
			Endpoint:                 disc.BootstrapToken.APIServerEndpoint,
			CACertHashes:             disc.BootstrapToken.CACertHashes,
			UnsafeSkipCAVerification: disc.BootstrapToken.UnsafeSkipCAVerification,
			Timeout:                  timeout,
			Logf:                     d.Logf,
		}
		if td.Token, err = parseToken(disc.BootstrapToken.Token); err != nil {
			return err
		}
		cl, err = td.Discover(ctx)
	case disc.File != nil:
		cl, err = discovery.FileDiscovery(disc.File.KubeConfigPath, timeout)
	default:
		return errors.New("no discovery configured: give the API server endpoint and --token, or --discovery-file")
	}
	if err != nil {
		return fmt.Errorf("could not validate the identity of the API server: %w", err)
	}
	if cl.ClusterInfoServer != "" {
		d.Logf("[discovery] cluster-info names %s; this node uses %s, the endpoint it was given", cl.ClusterInfoServer, cl.Server)
	}
	var boot *clientcmdapi.Config
	switch {
	case disc.TLSBootstrapToken != "":
		boot = kubeconfig.WithToken(cl.Server, "kubernetes", cl.CAData, disc.TLSBootstrapToken)
	case cl.AuthInfo != nil:
		boot = kubeconfigutil.CreateBasic(cl.Server, "kubernetes", kubeconfig.TLSBootstrapUser, cl.CAData)
		boot.AuthInfos[kubeconfig.TLSBootstrapUser] = cl.AuthInfo
	default:
		return errors.New("no credentials for the TLS bootstrap: give --token (or --tls-bootstrap-token), or a discovery file with credentials")
	}
	client, err := kubeconfigutil.ToClientSet(boot)
	if err != nil {
		return err
	}
	d.Logf("[preflight] Reading configuration from the %q ConfigMap in namespace %q...", bootstrap.KubeadmConfigMap, metav1.NamespaceSystem)
	d.Logf("[preflight] Use 'kubeboot init phase upload-config kubeadm --config your-config-file' to re-upload it.")
	fetched, err := bootstrap.FetchConfig(ctx, client, cl.Server)
	if err != nil {
		return err
	}
	// The bootstrap kubeconfig names the cluster as the cluster names itself.
	if name := fetched.Cluster.ClusterName; name != "" && name != "kubernetes" {
		boot = renameCluster(boot, name)
	}
	d.Cfg.Cluster, d.Cfg.Kubelet, d.Cfg.KubeProxy, d.Cfg.PodNetwork = fetched.Cluster, fetched.Kubelet, fetched.KubeProxy, fetched.PodNetwork
	if err := config.DualStackNodeIP(&d.Cfg.Init.NodeRegistration, d.Cfg.Init.LocalAPIEndpoint.AdvertiseAddress, d.Cfg.Cluster.Networking.PodSubnet, d.host); err != nil {
		return err
	}
	if k := d.Cfg.Kubelet; k != nil {
		// The cgroup driver and cgroup v1 are the joining host's, not the
		// init host's: a systemd host joins a cluster made on one without
		// (node.KubeletConfiguration decides for this host).
		k.CgroupDriver, k.FailCgroupV1 = "", nil
	}
	if cp := d.Join.ControlPlane; cp != nil {
		// The shared certificates are read (and the key checked) before
		// anything is written: a wrong or expired key leaves nothing.
		if cp.CertificateKey != "" {
			key, err := hex.DecodeString(cp.CertificateKey)
			if err != nil || len(key) != 32 {
				return errors.New("--certificate-key must be 64 hexadecimal characters, as `kubeboot init --upload-certs` prints it")
			}
			d.Logf("[download-certs] Downloading the certificates in Secret %q in the %q Namespace", bootstrap.KubeadmCertsSecret, metav1.NamespaceSystem)
			if d.certs, err = bootstrap.DownloadCerts(ctx, client, d.Cfg, key); err != nil {
				return err
			}
		} else if !fsys.Exists(d.FS, path.Join(d.Cfg.Cluster.CertificatesDir, "ca.key")) {
			return fmt.Errorf("joining a control plane needs the cluster's shared certificates: give --certificate-key (printed by `kubeboot init --upload-certs`, or by `kubeboot init phase upload-certs --upload-certs` on a control-plane node), or copy them into %s", d.FS.Path(d.Cfg.Cluster.CertificatesDir))
		}
	}
	d.cluster, d.bootstrap = cl, boot
	return nil
}

// useLB tells whether this node reaches the API servers through its
// node-local load balancer: a worker of a cluster without a
// controlPlaneEndpoint (a VIP or DNS name the operator provides is used as
// given). A control plane talks to its own API server.
func (d *Data) useLB() bool {
	return !isControlPlane(d) && d.Cfg.Cluster.ControlPlaneEndpoint == ""
}

// apiServer is the API server URL this node's kubelet and kube-proxy use:
// a control plane's own (kubeadm's local mode), the node-local load
// balancer, or the endpoint the node joined through.
func (d *Data) apiServer() string {
	switch {
	case isControlPlane(d):
		return kubeconfig.LocalURL(d.Cfg)
	case d.useLB():
		return fmt.Sprintf("https://127.0.0.1:%d", node.APIServerLBPort)
	}
	return d.cluster.Server
}

func renameCluster(kc *clientcmdapi.Config, name string) *clientcmdapi.Config {
	for old, c := range kc.Clusters {
		delete(kc.Clusters, old)
		kc.Clusters[name] = c
	}
	for _, ctx := range kc.Contexts {
		ctx.Cluster = name
	}
	return kc
}

// client is a client with the bootstrap credentials.
func (d *Data) client() (kubernetes.Interface, error) { return kubeconfigutil.ToClientSet(d.bootstrap) }

func runKubeletStart(ctx context.Context, d *Data) error {
	if err := d.discover(ctx); err != nil {
		return err
	}
	name := d.Join.NodeRegistration.Name
	if !d.FS.DryRun() {
		// As kubeadm: a second node of the same name would take over the
		// first one's Node object.
		c, err := d.client()
		if err != nil {
			return err
		}
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("checking for an existing Node %q: %w", name, err)
		}
		if err == nil && nodeReady(n) {
			return fmt.Errorf("a Node with name %q and status Ready already exists in the cluster: delete it (`kubectl delete node %s`) or give this node another name with --node-name", name, name)
		}
	}
	ca := d.Join.CACertPath
	if !fsys.Exists(d.FS, ca) {
		if err := d.FS.WriteFile(ca, d.cluster.CAData, 0o644); err != nil {
			return err
		}
	}
	boot := d.bootstrap.DeepCopy()
	for _, c := range boot.Clusters {
		c.Server = d.apiServer()
	}
	b, err := clientcmd.Write(*boot)
	if err != nil {
		return err
	}
	bootFile := path.Join(node.KubernetesDir, kubeconfig.BootstrapKubelet)
	d.Logf("[kubelet-start] Writing the bootstrap kubeconfig to file %q", d.FS.Path(bootFile))
	if err := d.FS.WriteFile(bootFile, b, 0o600); err != nil {
		return err
	}
	if err := d.PrepareHost("kubelet-start"); err != nil {
		return err
	}
	if err := d.StartRuntime(ctx, "kubelet-start"); err != nil {
		return err
	}
	if d.useLB() {
		seed := strings.TrimPrefix(d.cluster.Server, "https://")
		d.Logf("[apiserver-lb] Starting the node-local API server load balancer on 127.0.0.1:%d, seeded with %s; it follows every API server of the cluster", node.APIServerLBPort, seed)
		if err := d.WriteSpec(d.Renderer().APIServerLBSpec(seed), "apiserver-lb"); err != nil {
			return err
		}
	}
	return d.StartKubelet("kubelet-start")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func runKubeletWaitBootstrap(ctx context.Context, d *Data) error {
	if err := d.discover(ctx); err != nil {
		return err
	}
	if d.FS.DryRun() {
		d.Logf("[kubelet-wait] Would wait for the kubelet to be bootstrapped")
		return nil
	}
	boot := path.Join(node.KubernetesDir, kubeconfig.BootstrapKubelet)
	// The bootstrap token leaves the disk once the kubelet has its
	// certificate, as kubeadm removes it.
	defer os.Remove(d.FS.Path(boot))
	if err := d.WaitKubelet(ctx); err != nil {
		return err
	}
	d.Logf("[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap")
	if err := d.waitTLSBootstrap(ctx); err != nil {
		return err
	}
	if !isControlPlane(d) {
		// A control plane has a CA-signed kube-proxy.conf of its own.
		if err := d.writeKubeProxyConf(); err != nil {
			return err
		}
	}
	if err := d.StartNetwork("kubelet-start"); err != nil {
		return err
	}
	return d.WaitSandboxImage(ctx)
}

// waitTLSBootstrap waits until kubelet.conf exists with the files it
// names: the kubelet has its client certificate.
func (d *Data) waitTLSBootstrap(ctx context.Context) error {
	file := d.FS.Path(path.Join(node.KubernetesDir, kubeconfig.Kubelet))
	timeout := d.Join.Timeouts.TLSBootstrap.Duration
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	progress := poll.Progress(d.Logf, "kubelet-start", "the kubelet's TLS bootstrap", false)
	err := poll.Until(ctx, 50*time.Millisecond, 5*time.Second, progress, func(context.Context) error {
		_, err := kubeconfigutil.ClientSetFromFile(file)
		return err
	})
	if err != nil {
		return fmt.Errorf("the kubelet did not complete its TLS bootstrap within %s: its certificate request may not have been approved; see %s", timeout,
			d.FS.Path(node.ComponentLog(component.Kubelet)))
	}
	d.Logf("[kubelet-start] The kubelet has its client certificate after %s", d.Since())
	return nil
}

// writeKubeProxyConf writes the kubeconfig of kube-proxy and the network
// agent: the node's own identity, through the kubelet's rotating client
// certificate, and the endpoint this node joined through.
func (d *Data) writeKubeProxyConf() error {
	current := d.FS.Path(path.Join(node.KubeletDir, "pki", "kubelet-client-current.pem"))
	name := d.Cfg.Cluster.ClusterName
	kc := kubeconfig.WithCertFiles(d.apiServer(), name, d.cluster.CAData, "system:node:"+d.Join.NodeRegistration.Name, current, current)
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	return d.FS.WriteFile(path.Join(node.KubernetesDir, kubeconfig.KubeProxy), b, 0o600)
}

func parseToken(s string) (*bootstraptokenv1.BootstrapTokenString, error) {
	t, err := bootstraptokenv1.NewBootstrapTokenString(s)
	if err != nil {
		return nil, fmt.Errorf("the bootstrap token %q is not of the form [a-z0-9]{6}.[a-z0-9]{16}", s)
	}
	return t, nil
}
