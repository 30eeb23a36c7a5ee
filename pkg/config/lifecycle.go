package config

import (
	"fmt"
	"time"
)

// Lifecycle is kubeboot's own day-2 settings of a control-plane node,
// for which kubeadm's documents have no place: init's and join's flags
// set them, and they are rendered into the specs of the node daemon's
// cert-renewer and etcd-snapshotter, the node's record of them.
type Lifecycle struct {
	// CertificateRenewBefore is how long before expiry the daemon renews
	// a certificate (a third of the validity when that is shorter); 0
	// means the default, 90 days.
	CertificateRenewBefore time.Duration
	// EtcdSnapshotInterval is how often the daemon saves an etcd snapshot
	// with the cluster's keys (`kubeboot etcd snapshot save`); 0 means
	// never.
	EtcdSnapshotInterval time.Duration
	// EtcdSnapshotKeep is how many of those snapshots it keeps.
	EtcdSnapshotKeep int
	// EtcdSnapshotDir is where it writes them, a node path.
	EtcdSnapshotDir string
}

// Defaults of the lifecycle flags.
const (
	DefaultCertificateRenewBefore = 90 * 24 * time.Hour
	DefaultEtcdSnapshotInterval   = 12 * time.Hour
	DefaultEtcdSnapshotKeep       = 5
	DefaultEtcdSnapshotDir        = "/var/lib/kubeboot/etcd-snapshots"
)

// DefaultLifecycle is what init and join use when not told otherwise.
func DefaultLifecycle() Lifecycle {
	return Lifecycle{
		CertificateRenewBefore: DefaultCertificateRenewBefore,
		EtcdSnapshotInterval:   DefaultEtcdSnapshotInterval,
		EtcdSnapshotKeep:       DefaultEtcdSnapshotKeep,
		EtcdSnapshotDir:        DefaultEtcdSnapshotDir,
	}
}

// Validate refuses settings that cannot work, before anything is written.
func (l Lifecycle) Validate() error {
	switch {
	case l.CertificateRenewBefore < 0:
		return fmt.Errorf("--certificate-renew-before %s: must not be negative", l.CertificateRenewBefore)
	case l.EtcdSnapshotInterval < 0:
		return fmt.Errorf("--etcd-snapshot-interval %s: must not be negative (0 turns scheduled snapshots off)", l.EtcdSnapshotInterval)
	case l.EtcdSnapshotInterval > 0 && l.EtcdSnapshotInterval < 10*time.Second:
		return fmt.Errorf("--etcd-snapshot-interval %s: at least 10s", l.EtcdSnapshotInterval)
	case l.EtcdSnapshotInterval > 0 && l.EtcdSnapshotKeep < 1:
		return fmt.Errorf("--etcd-snapshot-keep %d: keep at least 1 snapshot (--etcd-snapshot-interval 0 turns them off)", l.EtcdSnapshotKeep)
	case l.EtcdSnapshotInterval > 0 && (l.EtcdSnapshotDir == "" || l.EtcdSnapshotDir[0] != '/'):
		return fmt.Errorf("--etcd-snapshot-dir %q: an absolute path", l.EtcdSnapshotDir)
	}
	return nil
}
