package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	netutils "k8s.io/utils/net"

	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/host/hardening"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/manifests"
	"github.com/kubeboot/kubeboot/internal/phases/initphases"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// InitOptions are what `kubeboot init` takes.
type InitOptions struct {
	Node
	Runtime
	// Config holds the kubeadm v1beta4 documents (InitConfiguration,
	// ClusterConfiguration, KubeletConfiguration, KubeProxyConfiguration),
	// as `--config` reads them; nil means every default. Init applies
	// kubeadm's defaults to it and validates it before anything is
	// written.
	Config *config.Config
	// ControlPlaneOnly brings up etcd, the API server, the
	// controller-manager and the scheduler without the node side: no
	// kubelet, no containerd, no root privileges needed.
	ControlPlaneOnly bool
	// PodNetwork chooses the pod network's engines (flannel's backend,
	// kube-router's network policies); nil means
	// config.DefaultPodNetwork(): VXLAN, policies enforced.
	PodNetwork *config.PodNetwork
	// SingleNode leaves the control-plane taint off, so that the one node
	// runs workloads.
	SingleNode bool
	// Hardened turns on what the CIS benchmark asks and kubeadm leaves off
	// (init --hardened).
	Hardened bool
	// UploadCerts uploads the control-plane certificates to the
	// kubeadm-certs Secret, encrypted with Config's certificate key
	// (generated when empty), so that more control planes can join.
	UploadCerts bool
	// DNSUpstream is where CoreDNS forwards names outside the cluster
	// (addresses, or a resolv.conf naming them; "" forwards nowhere); nil
	// means the host's resolver configuration without loopback servers.
	DNSUpstream *string
	// Manifests is a directory whose manifests (its .yaml, .yml and .json
	// files) init copies into the control plane's manifests directory,
	// which kubeboot applies to the cluster and keeps applied (package
	// manifests); "" copies none.
	Manifests string
	// SkipTokenPrint and SkipCertificateKeyPrint withhold those secrets
	// from the printed join commands, as kubeadm's flags of those names.
	SkipTokenPrint, SkipCertificateKeyPrint bool
}

// InitResult is what a caller needs once the control plane runs.
type InitResult struct {
	// NodeName is the control-plane node's name.
	NodeName string
	// AdminKubeconfig is the host path of the cluster administrator's
	// kubeconfig (admin.conf under Root).
	AdminKubeconfig string
	// APIServer is the URL every kubeconfig names.
	APIServer string
	// Join is what a worker needs to join (its token is the first
	// bootstrap token); ControlPlaneJoin, set with UploadCerts, what
	// another control plane needs.
	Join, ControlPlaneJoin *JoinCommand
}

// Init makes the node the first control plane of a new cluster and, unless
// ControlPlaneOnly, a node of it, as `kubeboot init` does. A dry run, or a
// run of one phase, returns a nil result.
//
// On failure the node daemon, when this run started it, keeps running for
// inspection (Reset removes everything); when ctx is cancelled, Init stops
// it before returning.
func Init(ctx context.Context, o InitOptions) (*InitResult, error) {
	o.Node.defaults()
	d, wo, err := o.data()
	if err != nil {
		return nil, err
	}
	runner := &workflow.Runner[*initphases.Data]{Phases: initphases.Phases()}
	if err := runner.Validate(wo); err != nil {
		return nil, err
	}
	whole := o.Phase == ""
	if whole {
		fmt.Fprintf(o.Out, "[init] Using Kubernetes version: %s\n", d.Cfg.Cluster.KubernetesVersion)
		for _, h := range d.Hardened {
			fmt.Fprintf(o.Out, "[hardened] %s\n", h)
		}
		for _, s := range d.AddOnSettings {
			fmt.Fprintf(o.Out, "[addons] %s\n", s)
		}
		d.PrepareKeys()
	}
	if err := runNode(ctx, "init", runner, d, wo, o.Node); err != nil {
		return nil, err
	}
	if !whole || o.DryRun {
		if o.DryRun && whole {
			fmt.Fprintln(o.Out, "[dryrun] Finished dry-running successfully. Above are the resources that would be created")
		}
		return nil, nil
	}
	res := &InitResult{
		NodeName:        d.Cfg.Init.NodeRegistration.Name,
		AdminKubeconfig: d.FS.Path(node.AdminKubeconfig),
		APIServer:       kubeconfig.ServerURL(d.Cfg),
	}
	endpoint, token, hash, err := d.JoinInfo()
	if err != nil {
		return nil, err
	}
	res.Join = &JoinCommand{Endpoint: endpoint, Token: token, CACertHash: hash}
	if d.UploadCerts {
		res.ControlPlaneJoin = &JoinCommand{Endpoint: endpoint, Token: token, CACertHash: hash,
			ControlPlane: true, CertificateKey: d.Cfg.Init.CertificateKey}
	}
	return res, nil
}

// controlPlaneOnlySkips are the phases of the node side, and the add-ons
// that run on nodes: with none, metrics-server's APIService would stay
// unavailable, and a namespace could then never finish deleting (the
// namespace controller waits for every API group's discovery).
var controlPlaneOnlySkips = []string{"kubelet-start", "mark-control-plane", "kubelet-finalize", "addon/coredns", "addon/storage", initphases.MetricsServerPhase}

// data loads and validates the configuration before anything is written.
func (o *InitOptions) data() (*initphases.Data, workflow.Options, error) {
	c := o.Config
	if c == nil {
		c = &config.Config{}
	}
	h := o.host()
	if err := c.DefaultInit(h); err != nil {
		return nil, workflow.Options{}, err
	}
	c.ControlPlaneOnly = o.ControlPlaneOnly
	if ep := &c.Init.LocalAPIEndpoint; o.ControlPlaneOnly && ep.AdvertiseAddress == "" {
		// No default route (a CI container whose only address is
		// loopback): a control plane alone can live there, as envtest's.
		ep.AdvertiseAddress = "127.0.0.1"
		fmt.Fprintln(o.Out, "[init] No default route to take the advertise address from: the control plane, alone, advertises 127.0.0.1")
	}
	if ip := netutils.ParseIPSloppy(c.Init.LocalAPIEndpoint.AdvertiseAddress); o.ControlPlaneOnly && ip != nil && ip.IsLoopback() {
		fmt.Fprintf(o.Out, "[init] WARNING: the API server advertises %s: only this machine reaches it, and no node can join it\n", ip)
	}
	if err := c.Validate(); err != nil {
		return nil, workflow.Options{}, err
	}
	if err := config.DualStackNodeIP(&c.Init.NodeRegistration, c.Init.LocalAPIEndpoint.AdvertiseAddress, c.Cluster.Networking.PodSubnet, h); err != nil {
		return nil, workflow.Options{}, err
	}
	var err error
	if c.Lifecycle, err = o.lifecycle(); err != nil {
		return nil, workflow.Options{}, err
	}
	c.PodNetwork = config.DefaultPodNetwork()
	if o.PodNetwork != nil {
		c.PodNetwork = *o.PodNetwork
	}
	if err := c.PodNetwork.Validate(); err != nil {
		return nil, workflow.Options{}, err
	}
	var hardened []string
	if o.Hardened {
		hardened = hardening.Apply(c)
	}
	d := initphases.NewData(c, o.fs(), o.Out)
	if d.Exe, err = o.binary(o.DryRun); err != nil {
		return nil, workflow.Options{}, err
	}
	d.IgnorePreflightErrors = o.IgnorePreflightErrors
	d.UploadCerts = o.UploadCerts
	d.SkipTokenPrint = o.SkipTokenPrint
	d.SkipCertificateKeyPrint = o.SkipCertificateKeyPrint
	if o.DNSUpstream != nil {
		d.DNSUpstream = o.DNSUpstream
		// Refuse a loopback upstream before anything is written.
		if _, err := node.DNSUpstream(d.DNSUpstream, node.HostDNS{}); err != nil {
			return nil, workflow.Options{}, err
		}
	}
	if d.Mirrors, err = o.mirrors(c.Init.NodeRegistration.CRISocket); err != nil {
		return nil, workflow.Options{}, err
	}
	if o.Manifests != "" {
		// Refuse a file that does not parse before anything is written.
		if d.Manifests, err = manifests.ReadDir(o.Manifests); err != nil {
			return nil, workflow.Options{}, fmt.Errorf("--manifests: %w", err)
		}
	}
	d.SingleNode = o.SingleNode
	d.Hardened = hardened
	d.ControlPlaneOnly = o.ControlPlaneOnly
	skip := c.Init.SkipPhases
	if o.ControlPlaneOnly {
		// No node side; kube-proxy's add-on only stores its configuration,
		// for nodes that join.
		skip = append(append([]string(nil), skip...), controlPlaneOnlySkips...)
	}
	// metrics-server verifies the kubelets against the cluster CA, which
	// signs their serving certificates only with serverTLSBootstrap
	// (kubeboot's csr-approver approves them); the kubelet-config
	// ConfigMap carries the setting to every node that joins. Decided from
	// the skipped phases even when one phase runs, so that `init phase
	// kubelet-start` or `upload-config` agree with a whole init.
	skipsAll := workflow.Options{Skip: append(append([]string(nil), skip...), o.SkipPhases...)}
	if !skipsAll.Skips(initphases.MetricsServerPhase) && (c.Kubelet == nil || !c.Kubelet.ServerTLSBootstrap) {
		if c.Kubelet == nil {
			c.Kubelet = &kubeletv1beta1.KubeletConfiguration{}
		}
		c.Kubelet.ServerTLSBootstrap = true
		d.AddOnSettings = append(d.AddOnSettings, "kubelet: serverTLSBootstrap=true: metrics-server ("+initphases.MetricsServerPhase+") verifies the kubelets' serving certificates, which the cluster CA signs then, instead of self-signed ones")
	}
	return d, o.workflow(skip), nil
}

// workflow selects the phases a run of the node runs.
func (n Node) workflow(configSkip []string) workflow.Options {
	wo := workflow.Options{DryRun: n.DryRun, Out: n.Out, Done: n.PhaseDone}
	if n.Phase != "" {
		wo.Only = n.Phase
		return wo
	}
	wo.Skip = append(append([]string(nil), configSkip...), n.SkipPhases...)
	return wo
}

// started is run data whose run may have started the node daemon.
type started interface {
	DaemonStarted() (bool, string)
}

// runNode runs init's or join's phases. When ctx is cancelled after the
// run started the node daemon, it stops the daemon, so that nothing runs
// half-configured (files stay for Reset); on another failure the daemon
// keeps running for inspection, and Err says so.
func runNode[D started](ctx context.Context, verb string, r *workflow.Runner[D], d D, wo workflow.Options, n Node) error {
	err := r.Run(ctx, d, wo)
	if err == nil {
		return nil
	}
	startedDaemon, logs := d.DaemonStarted()
	if startedDaemon && ctx.Err() != nil && n.Phase == "" {
		fmt.Fprintf(n.Err, "[%s] Interrupted: stopping the kubeboot daemon this run started\n", verb)
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if serr := daemon.Stop(stopCtx, n.fs(), time.Minute, nil); serr != nil {
			err = errors.Join(err, serr)
		}
	} else if startedDaemon && n.Phase == "" {
		fmt.Fprintf(n.Err, "[%s] The node daemon keeps running for inspection (`kubeboot status`, logs in %s); `kubeboot reset` removes everything\n", verb, logs)
	}
	return err
}
