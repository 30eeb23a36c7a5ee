package joinphases

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/markcontrolplane"
	etcdutil "k8s.io/kubernetes/cmd/kubeadm/app/util/etcd"

	"github.com/kubeboot/kubeboot/internal/base/poll"
	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/etcd/etcdclient"
	"github.com/kubeboot/kubeboot/internal/host/hardening"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/host/preflight"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
)

// controlPlaneChecks are the pre-flight checks of a joining control plane
// that need nothing of the cluster: its component specs are not there.
func (d *Data) controlPlaneChecks() []preflight.Check {
	var checks []preflight.Check
	for _, name := range component.ControlPlane {
		checks = append(checks, preflight.FileAvailable(d.FS, component.SpecPath(name)))
	}
	return checks
}

// controlPlaneClusterChecks are those that need the cluster's
// configuration: the ports the components will listen on, from their
// final flags (the cluster's extraArgs included), and etcd's data dir.
func (d *Data) controlPlaneClusterChecks() []preflight.Check {
	checks := component.PortChecks(d.Renderer().Specs(component.RoleControlPlane))
	if d.Cfg.Cluster.Etcd.Local != nil {
		checks = append(checks, preflight.DirAvailable(d.FS, d.Cfg.Cluster.Etcd.Local.DataDir))
	}
	// Secrets encrypted at rest (--hardened): the key must come with the
	// certificates or be here already, before anything is written.
	checks = append(checks, preflight.Check{Name: "EncryptionConfig", Run: func() ([]string, error) {
		downloaded := slices.ContainsFunc(d.certs, func(f bootstrap.CertFile) bool { return f.Name == hardening.EncryptionConfigName })
		if hardening.EncryptionConfigMissing(d.FS, d.Cfg) && !downloaded {
			return nil, hardening.MissingKeyError(d.FS, d.Cfg)
		}
		return nil, nil
	}})
	return checks
}

// generator is the PKI of this control plane: the cluster's shared CAs and
// keys (downloaded), this node's own certificates.
func (d *Data) generator() *pki.Generator {
	if d.pki == nil {
		d.pki = &pki.Generator{FS: d.FS, Cfg: d.Cfg, Out: d.Out}
	}
	return d.pki
}

func runDownloadCerts(ctx context.Context, d *Data) error {
	if err := d.discover(ctx); err != nil {
		return err
	}
	if d.certs == nil {
		// As kubeadm: without a key the shared certificates must be there.
		d.Logf("[download-certs] No --certificate-key: using the shared certificates in %q", d.FS.Path(d.Cfg.Cluster.CertificatesDir))
		return nil
	}
	d.Logf("[download-certs] Saving the certificates to the folder: %q", d.FS.Path(d.Cfg.Cluster.CertificatesDir))
	for _, f := range d.certs {
		if err := d.FS.WriteFile(path.Join(d.Cfg.Cluster.CertificatesDir, f.Name), f.Data, f.Mode); err != nil {
			return err
		}
	}
	return nil
}

func runControlPlaneCerts(ctx context.Context, d *Data) error {
	if err := d.discover(ctx); err != nil {
		return err
	}
	g := d.generator()
	for _, ca := range []string{"ca", "front-proxy-ca", "etcd-ca"} {
		if d.Cfg.Cluster.Etcd.External != nil && ca == "etcd-ca" {
			continue
		}
		if _, err := g.CA(ca); err != nil {
			return fmt.Errorf("this node has no usable copy of the cluster's %q CA (%w): give the --certificate-key `kubeboot init --upload-certs` printed, or copy the shared certificates into %s", ca, err, d.FS.Path(d.Cfg.Cluster.CertificatesDir))
		}
	}
	d.Logf("[certs] Using certificateDir folder %q", d.FS.Path(g.Dir()))
	for _, s := range pki.List(d.Cfg) {
		if err := g.Ensure(s); err != nil {
			return err
		}
	}
	return g.EnsureServiceAccountKey()
}

// controlPlaneKubeconfigs are the files a joining control plane writes
// itself, as kubeadm's CreateJoinControlPlaneKubeConfigFiles (and
// kube-proxy's, since kube-proxy runs on the host): kubelet.conf comes
// from the TLS bootstrap, super-admin.conf stays on the first node.
var controlPlaneKubeconfigs = []string{"admin", "controller-manager", "scheduler", "kube-proxy"}

func runControlPlaneKubeconfigs(ctx context.Context, d *Data) error {
	if err := d.discover(ctx); err != nil {
		return err
	}
	d.Logf("[kubeconfig] Using kubeconfig folder %q", d.FS.Path(node.KubernetesDir))
	w := &kubeconfig.Writer{FS: d.FS, Cfg: d.Cfg, PKI: d.generator(), Out: d.Out}
	for _, s := range kubeconfig.List(d.Cfg) {
		if slices.Contains(controlPlaneKubeconfigs, s.Name) {
			if err := w.Ensure(s); err != nil {
				return err
			}
		}
	}
	return nil
}

func runControlPlaneSpecs(ctx context.Context, d *Data) error {
	if err := d.discover(ctx); err != nil {
		return err
	}
	r := d.Renderer()
	d.Logf("[control-plane] Using component spec folder %q", d.FS.Path(node.SpecDir))
	if err := hardening.Files(d.FS, d.Cfg, false, d.Logf); err != nil {
		return err
	}
	for _, spec := range withoutEtcd(r.Specs(component.RoleControlPlane)) {
		if spec.Name == component.APIServer && d.Cfg.Cluster.Etcd.External == nil {
			// The local etcd member starts only once it has joined: an API
			// server started before would back off its etcd connection for
			// seconds longer than the member takes.
			spec.Requires = append(spec.Requires, component.Etcd)
		}
		if err := d.WriteSpec(spec, "control-plane"); err != nil {
			return err
		}
	}
	return nil
}

// adminClient is a cluster-admin client of this node's admin.conf,
// talking to the API server this node joined through (its own does not
// serve before its etcd member does).
func (d *Data) adminClient() (kubernetes.Interface, error) {
	c, _, err := apiclient.FromKubeconfig(d.FS.Path(node.AdminKubeconfig), d.cluster.Server)
	return c, err
}

// etcdClient is a client of the cluster's etcd members, found as kubeadm
// finds them (the control-plane nodes' addresses; kubeboot runs no etcd
// static pods whose annotations kubeadm reads).
func (d *Data) etcdClient(ctx context.Context) (*etcdutil.Client, error) {
	c, err := d.adminClient()
	if err != nil {
		return nil, err
	}
	var endpoints []string
	err = apiclient.Retry(ctx, d.Join.Timeouts.KubernetesAPICall.Duration, func(ctx context.Context) error {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubeadmconstants.LabelNodeRoleControlPlane})
		if err != nil {
			return err
		}
		endpoints = nil
		for _, n := range nodes.Items {
			if n.Name == d.Join.NodeRegistration.Name {
				continue
			}
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					endpoints = append(endpoints, etcdutil.GetClientURLByIP(a.Address))
				}
			}
		}
		if len(endpoints) == 0 {
			return errors.New("no control-plane node with an internal address")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding the cluster's etcd members: %w", err)
	}
	return etcdclient.Members(d.FS.Path(d.Cfg.Cluster.CertificatesDir), endpoints...)
}

func runEtcdJoin(ctx context.Context, d *Data) error {
	if err := d.discover(ctx); err != nil {
		return err
	}
	if d.Cfg.Cluster.Etcd.External != nil {
		d.Logf("[etcd] External etcd mode: skipping the local etcd member")
		return nil
	}
	if d.FS.DryRun() {
		d.Logf("[dryrun] Would add this node's etcd member to the cluster as a learner, start it and promote it")
		return nil
	}
	r := d.Renderer()
	ec, err := d.etcdClient(ctx)
	if err != nil {
		return err
	}
	name, peer := d.Join.NodeRegistration.Name, r.EtcdPeerURL()
	d.Logf("[etcd] Announced new etcd member joining to the existing etcd cluster as a learner (%s at %s)", name, peer)
	members, err := ec.AddMemberAsLearner(name, peer)
	if err != nil {
		return fmt.Errorf("adding this node's etcd member %s to the cluster at %v: %w", peer, ec.Endpoints, err)
	}
	var initial []string
	for _, m := range members {
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	spec := r.JoiningEtcd(strings.Join(initial, ","))
	d.Logf("[etcd] Writing the component spec for the new etcd member to %q", d.FS.Path(component.SpecPath(spec.Name)))
	if err := d.WriteSpec(spec, "etcd"); err != nil {
		return err
	}
	id, err := ec.GetMemberID(peer)
	if err != nil {
		return err
	}
	// Promote once the learner serves clients, that is once it has
	// published itself: a promotion racing the publication (in a cluster
	// going from one voting member to two) had the publication proposal
	// dropped and retried after etcd's 7 s request timeout. (A learner's
	// /readyz fails: the rest of the probe passes once it votes.)
	if err := d.waitEtcdServing(ctx, ec.Endpoints, peer); err != nil {
		return err
	}
	d.Logf("[etcd] Waiting for the new etcd member to catch up and promoting it to a voting member")
	if err := ec.MemberPromote(id); err != nil {
		return fmt.Errorf("promoting this node's etcd member %x: %w; its log is %s", id, err, d.FS.Path(node.ComponentLog(component.Etcd)))
	}
	d.Logf("[etcd] The etcd member %s is a voting member after %s", name, d.Since())
	return d.Wait(ctx, "etcd", spec)
}

func runMarkControlPlane(ctx context.Context, d *Data) error {
	c, err := d.adminClient()
	if err != nil {
		return err
	}
	taints := d.Join.NodeRegistration.Taints
	if taints == nil {
		taints = []corev1.Taint{{Key: kubeadmconstants.LabelNodeRoleControlPlane, Effect: corev1.TaintEffectNoSchedule}}
	}
	if d.FS.DryRun() {
		d.Logf("[dryrun] Would mark the node %s as control-plane", d.Join.NodeRegistration.Name)
		return nil
	}
	return apiclient.KubeadmPrintsTo(d.Out, func() error {
		return markcontrolplane.MarkControlPlane(c, d.Join.NodeRegistration.Name, taints)
	})
}

// withoutEtcd drops the etcd member: a joining one is rendered with the
// cluster's members and waited for in the etcd phase.
func withoutEtcd(specs []component.Spec) []component.Spec {
	return slices.DeleteFunc(specs, func(s component.Spec) bool { return s.Name == component.Etcd })
}

func runWaitControlPlane(ctx context.Context, d *Data) error {
	r := d.Renderer()
	d.Logf("[control-plane-check] Waiting for healthy control plane components. This can take up to %s", d.Timeout)
	for _, spec := range withoutEtcd(r.Specs(component.RoleControlPlane)) {
		if err := d.Wait(ctx, "control-plane-check", spec); err != nil {
			return err
		}
	}
	return nil
}

// waitEtcdServing waits until the local etcd member answers a client
// request (its status): it does once it has published itself to the
// cluster. Its client port accepts connections before that, and its
// /readyz fails as long as it is a learner.
//
// A new member of etcd 3.7 can wait 7 s more than it needs to: it asks the
// cluster to publish its name and client URLs, and when the leader then
// sends it a snapshot that already holds the publication, nothing answers
// its request and it serves only once the request times out and is sent
// again. When the other members (cluster, its endpoints) list this member
// (peer) as published for more than stuckFor while it does not serve, and
// it has persisted and applied the snapshot it was sent, the member is
// restarted once: it comes back from its own snapshot and WAL, publishes
// again and serves at once.
func (d *Data) waitEtcdServing(ctx context.Context, cluster []string, peer string) error {
	dir := d.FS.Path(d.Cfg.Cluster.CertificatesDir)
	// The member's own client address, as its spec's probe dials it.
	endpoint := "https://" + d.Renderer().LocalEtcd().Probe.TCP
	own, err := etcdclient.Config(dir, time.Second, endpoint)
	if err != nil {
		return err
	}
	c, err := clientv3.New(*own)
	if err != nil {
		return err
	}
	defer c.Close()
	all, err := etcdclient.Config(dir, time.Second, cluster...)
	if err != nil {
		return err
	}
	others, err := clientv3.New(*all)
	if err != nil {
		return err
	}
	defer others.Close()
	dataDir := d.FS.Path(d.Cfg.Cluster.Etcd.Local.DataDir)
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	progress := poll.Progress(d.Logf, "etcd", "the new etcd member to serve clients", true)
	var stuckSince time.Time
	restarted := false
	err = poll.Until(ctx, 100*time.Millisecond, 5*time.Second, progress, func(ctx context.Context) error {
		sctx, scancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Status(sctx, endpoint)
		scancel()
		if err == nil || restarted {
			return err
		}
		switch {
		// The local look first: no member list is asked for before the
		// member has applied a snapshot.
		case !snapshotApplied(dataDir) || !publishedElsewhere(ctx, others, peer):
			stuckSince = time.Time{}
		case stuckSince.IsZero():
			stuckSince = time.Now()
		case time.Since(stuckSince) >= stuckFor:
			restarted = true
			d.Logf("[etcd] %s: the cluster lists it as published for %s while it does not serve, its publication having come inside the snapshot it was sent", etcdRestartLine, time.Since(stuckSince).Round(time.Millisecond))
			// Not until ready: a learner's /readyz fails until it is promoted.
			if err := daemon.NewClient(d.FS).Restart(ctx, component.Etcd, "a new member listed as published that does not serve (its publication came inside its snapshot)", false, d.Timeout); err != nil {
				d.Logf("[etcd] WARNING: restarting the new etcd member: %v", err)
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("the new etcd member did not serve clients within %s: %v; its log is %s", d.Timeout, err, d.FS.Path(node.ComponentLog(component.Etcd)))
	}
	d.Logf("[etcd] The new etcd member serves clients after %s", d.Since())
	return nil
}

// etcdRestartLine begins the line a join prints when it restarts its new
// etcd member (bench/ha counts them).
const etcdRestartLine = "Restarting the new etcd member"

// stuckFor is how long a new etcd member may not serve while the cluster
// lists it as published before it is restarted.
const stuckFor = time.Second

// publishedElsewhere reports whether the other members list the member of
// peer with its name and client URLs, that is whether its publication
// has been applied.
func publishedElsewhere(ctx context.Context, c *clientv3.Client, peer string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := c.MemberList(ctx)
	if err != nil {
		return false
	}
	for _, m := range resp.Members {
		if slices.Contains(m.PeerURLs, peer) {
			return m.Name != "" && len(m.ClientURLs) > 0
		}
	}
	return false
}

// snapshotApplied reports whether the etcd member of dataDir has persisted
// a raft snapshot (member/snap/*.snap, recorded in its WAL) and applied
// its database (no member/snap/*.snap.db left to move into place): one
// restarted then comes back from its own data.
func snapshotApplied(dataDir string) bool {
	snaps, _ := filepath.Glob(filepath.Join(dataDir, "member", "snap", "*.snap"))
	pending, _ := filepath.Glob(filepath.Join(dataDir, "member", "snap", "*.snap.db"))
	return len(snaps) > 0 && len(pending) == 0
}
