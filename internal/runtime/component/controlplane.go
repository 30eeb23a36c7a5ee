package component

import (
	"net"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	netutils "k8s.io/utils/net"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Ports the control plane listens on.
const (
	EtcdClientPort        = kubeadmconstants.EtcdListenClientPort
	EtcdPeerPort          = 2380
	EtcdMetricsPort       = 2381
	ControllerManagerPort = 10257
	SchedulerPort         = 10259
)

// Names of the control-plane components.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
)

// Renderer turns the configuration into specs. Paths in the
// configuration are node paths; the specs carry host paths under the
// root prefix.
type Renderer struct {
	Cfg *config.Config
	FS  fsys.FS
}

func (r Renderer) pki(name string) string {
	return r.FS.Path(path.Join(r.Cfg.Cluster.CertificatesDir, name))
}

func (r Renderer) kubeconfig(file string) string {
	return r.FS.Path(path.Join(node.KubernetesDir, file))
}

// root is the --root of kubeboot's own components (the load
// balancer, the approver): the node's root prefix.
func (r Renderer) root() string {
	if root := strings.TrimSuffix(r.FS.Path("/"), "/"); root != "" {
		return root
	}
	return "/"
}

func (r Renderer) advertise() string { return r.Cfg.Init.LocalAPIEndpoint.AdvertiseAddress }

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// applyExtra sets the configuration's extraArgs over kubeboot's flags. A
// value that is an absolute path is a node path, as everywhere in the
// configuration (kubeadm mounts it into the static pod at the same path):
// it becomes the host path under the root prefix.
func (r Renderer) applyExtra(a *Args, extra []kubeadmv1.Arg) {
	for _, e := range extra {
		a.Set(e.Name, r.nodePath(e.Value))
	}
}

// nodePath maps a flag value that is one absolute path under the root
// prefix, and leaves any other value (a URL, a list, a number) alone.
func (r Renderer) nodePath(v string) string {
	if path.IsAbs(v) && !strings.ContainsAny(v, ",=:") {
		return r.FS.Path(v)
	}
	return v
}

// LocalEtcd renders the local etcd member, with kubeadm's flags.
func (r Renderer) LocalEtcd() Spec {
	adv, node := r.advertise(), r.Cfg.Init.NodeRegistration.Name
	return r.localEtcd(node+"=https://"+hostPort(adv, EtcdPeerPort), "")
}

// JoiningEtcd renders a member joining an existing etcd cluster (stacked
// etcd on a joining control plane): initialCluster names every member,
// this one included ("name=peer-url,...").
func (r Renderer) JoiningEtcd(initialCluster string) Spec {
	return r.localEtcd(initialCluster, "existing")
}

// EtcdPeerURL is this node's etcd peer URL.
func (r Renderer) EtcdPeerURL() string { return "https://" + hostPort(r.advertise(), EtcdPeerPort) }

func (r Renderer) localEtcd(initialCluster, state string) Spec {
	c := r.Cfg
	adv, node := r.advertise(), c.Init.NodeRegistration.Name
	dataDir := r.FS.Path(c.Cluster.Etcd.Local.DataDir)
	a := &Args{}
	a.Set("name", node)
	a.Set("data-dir", dataDir)
	a.Set("advertise-client-urls", "https://"+hostPort(adv, EtcdClientPort))
	listen := "https://" + hostPort("127.0.0.1", EtcdClientPort)
	if ip := netutils.ParseIPSloppy(adv); ip == nil || !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		listen += ",https://" + hostPort(adv, EtcdClientPort)
	}
	a.Set("listen-client-urls", listen)
	a.Set("listen-peer-urls", "https://"+hostPort(adv, EtcdPeerPort))
	a.Set("initial-advertise-peer-urls", "https://"+hostPort(adv, EtcdPeerPort))
	a.Set("initial-cluster", initialCluster)
	if state != "" {
		a.Set("initial-cluster-state", state)
	}
	a.Set("listen-metrics-urls", "http://"+hostPort("127.0.0.1", EtcdMetricsPort))
	a.Set("cert-file", r.pki("etcd/server.crt"))
	a.Set("key-file", r.pki("etcd/server.key"))
	a.Set("trusted-ca-file", r.pki("etcd/ca.crt"))
	a.Set("client-cert-auth", "true")
	a.Set("peer-cert-file", r.pki("etcd/peer.crt"))
	a.Set("peer-key-file", r.pki("etcd/peer.key"))
	a.Set("peer-trusted-ca-file", r.pki("etcd/ca.crt"))
	a.Set("peer-client-cert-auth", "true")
	a.Set("snapshot-count", "10000")
	a.Set("watch-progress-notify-interval", "5s")
	r.applyExtra(a, c.Cluster.Etcd.Local.ExtraArgs)
	// Ready when it serves clients too: a member joining a cluster answers
	// /readyz before it has published itself and opened its client port,
	// and an API server dialling it then backs off for seconds.
	var probe Probe
	clientURLs, _ := a.Get("listen-client-urls")
	if _, hp, _, ok := urlHostPort(clientURLs); ok {
		probe.TCP = hp
	}
	metricsURLs, _ := a.Get("listen-metrics-urls")
	if scheme, hp, _, ok := urlHostPort(metricsURLs); ok && scheme == "http" {
		probe.URL = "http://" + hp + "/readyz"
	}
	peerURLs, _ := a.Get("listen-peer-urls")
	return Spec{
		Name:  Etcd,
		Args:  a.List(),
		Probe: probe,
		Ports: append(urlPorts(clientURLs), urlPorts(peerURLs)...),
		Dirs:  []Dir{{Path: dataDir, Mode: 0o700}},
	}
}

// APIServer renders kube-apiserver with the flags kubeadm v1.37 puts in
// its static pod.
func (r Renderer) APIServer() Spec {
	c := r.Cfg
	port := int(c.Init.LocalAPIEndpoint.BindPort)
	a := &Args{}
	a.Set("advertise-address", r.advertise())
	a.Set("allow-privileged", "true")
	a.Set("authorization-mode", "Node,RBAC")
	a.Set("client-ca-file", r.pki("ca.crt"))
	a.Set("enable-admission-plugins", "NodeRestriction")
	a.Set("enable-bootstrap-token-auth", "true")
	a.Set("kubelet-client-certificate", r.pki("apiserver-kubelet-client.crt"))
	a.Set("kubelet-client-key", r.pki("apiserver-kubelet-client.key"))
	a.Set("kubelet-preferred-address-types", "InternalIP,ExternalIP,Hostname")
	a.Set("proxy-client-cert-file", r.pki("front-proxy-client.crt"))
	a.Set("proxy-client-key-file", r.pki("front-proxy-client.key"))
	a.Set("requestheader-allowed-names", "front-proxy-client")
	a.Set("requestheader-client-ca-file", r.pki("front-proxy-ca.crt"))
	a.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	a.Set("requestheader-group-headers", "X-Remote-Group")
	a.Set("requestheader-username-headers", "X-Remote-User")
	a.Set("secure-port", strconv.Itoa(port))
	a.Set("service-account-issuer", "https://kubernetes.default.svc."+c.Cluster.Networking.DNSDomain)
	a.Set("service-account-key-file", r.pki("sa.pub"))
	a.Set("service-account-signing-key-file", r.pki("sa.key"))
	a.Set("service-cluster-ip-range", c.Cluster.Networking.ServiceSubnet)
	a.Set("tls-cert-file", r.pki("apiserver.crt"))
	a.Set("tls-private-key-file", r.pki("apiserver.key"))
	// On SIGTERM, close the open watches (their clients re-connect) instead
	// of waiting for them: the pods' watches outlive a daemon stop, and
	// the API server then took the daemon's whole 20 s stop timeout.
	a.Set("shutdown-watch-termination-grace-period", "5s")
	if ip := netutils.ParseIPSloppy(r.advertise()); ip != nil && ip.IsLoopback() {
		// A control plane alone on loopback (Config.ControlPlaneOnly): the
		// reconciler cannot store a loopback address in the kubernetes
		// Endpoints, and no pod needs them; as envtest's API server.
		a.Set("endpoint-reconciler-type", "none")
	}
	if ext := c.Cluster.Etcd.External; ext != nil {
		a.Set("etcd-servers", strings.Join(ext.Endpoints, ","))
		if ext.CAFile != "" {
			a.Set("etcd-cafile", r.FS.Path(ext.CAFile))
			a.Set("etcd-certfile", r.FS.Path(ext.CertFile))
			a.Set("etcd-keyfile", r.FS.Path(ext.KeyFile))
		}
	} else {
		a.Set("etcd-servers", "https://"+hostPort("127.0.0.1", EtcdClientPort))
		a.Set("etcd-cafile", r.pki("etcd/ca.crt"))
		a.Set("etcd-certfile", r.pki("apiserver-etcd-client.crt"))
		a.Set("etcd-keyfile", r.pki("apiserver-etcd-client.key"))
	}
	r.applyExtra(a, c.Cluster.APIServer.ExtraArgs)
	port = a.port("secure-port", port)
	bind, _ := a.Get("bind-address")
	var dirs []Dir
	if log, ok := a.Get("audit-log-path"); ok && filepath.IsAbs(log) {
		// The API server would create it with mode 0744.
		dirs = append(dirs, Dir{Path: filepath.Dir(log), Mode: 0o700})
	}
	return Spec{
		Dirs: dirs,
		Name: APIServer,
		Args: a.List(),
		// Not After etcd: the API server's own start (flags, certificates,
		// installing every API group) takes about a second before it first
		// needs etcd, and a new etcd member spends about as long on its
		// first election. The API server retries its etcd connection, as
		// it does under kubeadm, where the kubelet starts both static pods
		// at once. It is stopped before etcd, though: without etcd it
		// hangs in its shutdown until killed.
		Uses:  []string{Etcd},
		Probe: Probe{URL: "https://" + hostPort(probeHost(bind), port) + "/readyz", CAFile: r.pki("ca.crt")},
		Ports: []int{port},
	}
}

// ControllerManager renders kube-controller-manager as kubeadm does,
// bootstrap signer and token cleaner included.
func (r Renderer) ControllerManager() Spec {
	c := r.Cfg
	conf := r.kubeconfig("controller-manager.conf")
	a := &Args{}
	a.Set("authentication-kubeconfig", conf)
	a.Set("authorization-kubeconfig", conf)
	a.Set("bind-address", "127.0.0.1")
	a.Set("client-ca-file", r.pki("ca.crt"))
	a.Set("cluster-name", c.Cluster.ClusterName)
	a.Set("cluster-signing-cert-file", r.pki("ca.crt"))
	a.Set("cluster-signing-key-file", r.pki("ca.key"))
	a.Set("controllers", "*,bootstrapsigner,tokencleaner")
	a.Set("kubeconfig", conf)
	a.Set("leader-elect", "true")
	a.Set("requestheader-client-ca-file", r.pki("front-proxy-ca.crt"))
	a.Set("root-ca-file", r.pki("ca.crt"))
	a.Set("secure-port", strconv.Itoa(ControllerManagerPort))
	a.Set("service-account-private-key-file", r.pki("sa.key"))
	a.Set("use-service-account-credentials", "true")
	// The FlexVolume directory it creates, the kubelet's, under the root
	// prefix (kubeadm mounts the host's into its static pod).
	a.Set("flex-volume-plugin-dir", r.FS.Path(node.VolumePluginDir))
	// The controller-manager's client rate is the scheduler's and the
	// kubelet's (50/s) rather than its own default of 20/s, with a burst of
	// 200 rather than 30: with one service account per controller it makes
	// about three calls for each of its ~45 controllers at start, and at
	// 20/s with a burst of 30 its start took 5.5 s.
	a.Set("kube-api-qps", "50")
	a.Set("kube-api-burst", "200")
	if pods := c.Cluster.Networking.PodSubnet; pods != "" {
		a.Set("allocate-node-cidrs", "true")
		a.Set("cluster-cidr", pods)
		a.Set("service-cluster-ip-range", c.Cluster.Networking.ServiceSubnet)
	}
	r.applyExtra(a, c.Cluster.ControllerManager.ExtraArgs)
	return Spec{
		Name:      ControllerManager,
		Args:      a.List(),
		After:     []string{APIServer},
		Prestart:  true,
		Probe:     healthzProbe(a, ControllerManagerPort),
		Ports:     []int{a.port("secure-port", ControllerManagerPort)},
		RestartOn: kubeconfigsOf(a),
	}
}

// CSRApprover names kubeboot's approver of kubelet serving certificates.
const CSRApprover = "csr-approver"

// ServesTLSBootstrap reports whether the kubelets ask the cluster for
// their serving certificates (serverTLSBootstrap), which the control
// planes then approve with the csr-approver component.
func (r Renderer) ServesTLSBootstrap() bool {
	return r.Cfg.Kubelet != nil && r.Cfg.Kubelet.ServerTLSBootstrap
}

// CSRApproverSpec renders kubeboot's approver of the kubelets' serving
// certificates (package csrapprover), as the controller-manager's
// identity: it completes the controller-manager's CSR controllers.
func (r Renderer) CSRApproverSpec() Spec {
	conf := r.kubeconfig("controller-manager.conf")
	sp := r.own(CSRApprover, &CSRApproverConfig{Kubeconfig: conf})
	sp.After = []string{APIServer}
	sp.RestartOn = []string{conf}
	return sp
}

// kubeconfigsOf are the distinct kubeconfig files a component's flags name
// (extraArgs included), which it reads only at its start.
func kubeconfigsOf(a *Args) []string {
	var out []string
	for _, f := range []string{"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"} {
		if v, ok := a.Get(f); ok && v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// healthzProbe is the /healthz of a component serving on --bind-address
// and --secure-port (self-signed: not verified, as kubeadm's probes).
func healthzProbe(a *Args, defaultPort int) Probe {
	bind, _ := a.Get("bind-address")
	return Probe{URL: "https://" + hostPort(probeHost(bind), a.port("secure-port", defaultPort)) + "/healthz"}
}

// Scheduler renders kube-scheduler as kubeadm does.
func (r Renderer) Scheduler() Spec {
	conf := r.kubeconfig("scheduler.conf")
	a := &Args{}
	a.Set("authentication-kubeconfig", conf)
	a.Set("authorization-kubeconfig", conf)
	a.Set("bind-address", "127.0.0.1")
	a.Set("kubeconfig", conf)
	a.Set("leader-elect", "true")
	a.Set("secure-port", strconv.Itoa(SchedulerPort))
	r.applyExtra(a, r.Cfg.Cluster.Scheduler.ExtraArgs)
	return Spec{
		Name:      Scheduler,
		Args:      a.List(),
		After:     []string{APIServer},
		Prestart:  true,
		Probe:     healthzProbe(a, SchedulerPort),
		Ports:     []int{a.port("secure-port", SchedulerPort)},
		RestartOn: kubeconfigsOf(a),
	}
}
