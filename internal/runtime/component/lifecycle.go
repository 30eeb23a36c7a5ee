package component

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		renewBefore = config.DefaultCertificateRenewBefore
	}
	return r.own(CertRenewer, &CertRenewerConfig{Issue: r.issue(), RenewBefore: metav1.Duration{Duration: renewBefore}})
}

// own renders one of kubeboot's own components: its typed configuration,
// and the command that runs it by hand (`kubeboot --root R NAME` reads
// the spec).
func (r Renderer) own(name string, c OwnConfig) Spec {
	return Spec{Name: name, Args: []string{"--root", r.root(), name}, Own: &Own{Config: c}}
}

// issue is how kubeboot's components re-issue the node's certificates:
// where they are, their key type and validity.
func (r Renderer) issue() Issue {
	alg := string(r.Cfg.Cluster.EncryptionAlgorithm)
	if alg == "" {
		alg = "RSA-2048"
	}
	return Issue{CertDir: r.Cfg.Cluster.CertificatesDir, EncryptionAlgorithm: alg, Validity: metav1.Duration{Duration: r.certValidity()}}
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
	sp := r.own(EtcdSnapshotter, &EtcdSnapshotterConfig{
		NodeName: r.Cfg.Init.NodeRegistration.Name,
		CertDir:  r.Cfg.Cluster.CertificatesDir,
		Interval: metav1.Duration{Duration: l.EtcdSnapshotInterval},
		Keep:     l.EtcdSnapshotKeep,
		Dir:      dir,
	})
	sp.After = []string{APIServer}
	return sp
}

// ManifestApplier names kubeboot's applier of the control plane's
// manifests directory (package manifests).
const ManifestApplier = "manifest-applier"

// ManifestApplierSpec renders the applier of the manifests directory, as
// the cluster's administrator (admin.conf). It starts with the API server
// and waits for it.
func (r Renderer) ManifestApplierSpec() Spec {
	conf := r.kubeconfig("admin.conf")
	sp := r.own(ManifestApplier, &ManifestApplierConfig{NodeName: r.Cfg.Init.NodeRegistration.Name, Kubeconfig: conf})
	sp.After = []string{APIServer}
	sp.RestartOn = []string{conf}
	return sp
}

// StorageScaler names kubeboot's scaler of the storage add-on's
// provisioner (addons.StorageScaler).
const StorageScaler = "storage-scaler"

// StorageScalerSpec renders the scaler of the storage add-on's
// provisioner, as the administrator (admin.conf).
func (r Renderer) StorageScalerSpec() Spec {
	conf := r.kubeconfig("admin.conf")
	sp := r.own(StorageScaler, &StorageScalerConfig{Kubeconfig: conf})
	sp.After = []string{APIServer}
	sp.RestartOn = []string{conf}
	return sp
}
