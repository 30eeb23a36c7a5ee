package component

import (
	"slices"
	"strconv"
	"time"

	"github.com/kubeboot/kubeboot/pkg/config"
)

// kubeboot's own day-2 components of a control plane, which the node
// daemon runs in its own process.
const (
	// CertRenewer renews the node's certificates and kubeconfigs before
	// they expire (package renewal).
	CertRenewer = "cert-renewer"
	// EtcdSnapshotter saves etcd snapshots with the cluster's keys on a
	// schedule, keeping the newest few.
	EtcdSnapshotter = "etcd-snapshotter"
)

// certValidity is the validity of the leaf certificates kubeboot issues.
func (r Renderer) certValidity() time.Duration {
	if p := r.Cfg.Cluster.CertificateValidityPeriod; p != nil {
		return p.Duration
	}
	return 365 * 24 * time.Hour
}

// CertRenewerSpec renders the renewer with the cluster's certificate
// settings, so it renews as `kubeboot certs renew` does.
func (r Renderer) CertRenewerSpec() Spec {
	renewBefore := r.Cfg.Lifecycle.CertificateRenewBefore
	if renewBefore == 0 {
		renewBefore = 90 * 24 * time.Hour
	}
	return Spec{
		Name: CertRenewer,
		Args: append(append([]string{"--root", r.root(), "cert-renewer"}, r.issueFlags()...),
			"--renew-before", renewBefore.String()),
	}
}

// issueFlags are the flags of kubeboot's components that re-issue the
// node's certificates: where they are, their key type and validity.
func (r Renderer) issueFlags() []string {
	alg := string(r.Cfg.Cluster.EncryptionAlgorithm)
	if alg == "" {
		alg = "RSA-2048"
	}
	return []string{"--cert-dir", r.Cfg.Cluster.CertificatesDir, "--encryption-algorithm", alg, "--validity", r.certValidity().String()}
}

// SnapshotsRun tells whether this control plane takes scheduled etcd
// snapshots: its etcd is local and an interval is set.
func (r Renderer) SnapshotsRun() bool {
	return r.LocalEtcdRuns() && r.Cfg.Lifecycle.EtcdSnapshotInterval > 0
}

// EtcdSnapshotterSpec renders the scheduled snapshots. It starts once the
// API server is ready: each snapshot carries the cluster's configuration,
// read from it.
func (r Renderer) EtcdSnapshotterSpec() Spec {
	l := r.Cfg.Lifecycle
	dir := l.EtcdSnapshotDir
	if dir == "" {
		dir = config.DefaultEtcdSnapshotDir
	}
	return Spec{
		Name:  EtcdSnapshotter,
		After: []string{APIServer},
		Args: []string{"--root", r.root(), "etcd-snapshotter",
			"--node-name", r.Cfg.Init.NodeRegistration.Name,
			"--cert-dir", r.Cfg.Cluster.CertificatesDir,
			"--interval", l.EtcdSnapshotInterval.String(),
			"--keep", strconv.Itoa(l.EtcdSnapshotKeep),
			"--dir", dir},
	}
}

// InDaemon are the components the node daemon runs in its own process (a
// spec without Exec): they go with the daemon's binary, and an upgrade
// does not replace them one by one.
var InDaemon = []string{NetAgent, CertRenewer, EtcdSnapshotter, CAAgent}

// IsInDaemon reports whether the daemon runs name in its own process.
func IsInDaemon(name string) bool { return slices.Contains(InDaemon, name) }
