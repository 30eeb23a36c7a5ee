package component

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeboot/kubeboot/pkg/config"
)

// Own is the typed configuration of one of kubeboot's own components (the
// ones the node daemon runs in its own process, InDaemon), which the
// component's spec carries. Exactly one field is set, the one of the
// spec's component; package service runs it.
type Own struct {
	CertRenewer     *CertRenewerConfig     `json:"certRenewer,omitempty"`
	EtcdSnapshotter *EtcdSnapshotterConfig `json:"etcdSnapshotter,omitempty"`
	CAAgent         *CAAgentConfig         `json:"caAgent,omitempty"`
	CSRApprover     *CSRApproverConfig     `json:"csrApprover,omitempty"`
	APIServerLB     *APIServerLBConfig     `json:"apiServerLB,omitempty"`
	ManifestApplier *ManifestApplierConfig `json:"manifestApplier,omitempty"`
	StorageScaler   *StorageScalerConfig   `json:"storageScaler,omitempty"`
}

// Issue is how a component re-issues the node's certificates: where they
// are (a node path), their key type and their validity, as the cluster's
// configuration sets them.
type Issue struct {
	CertDir             string          `json:"certDir"`
	EncryptionAlgorithm string          `json:"encryptionAlgorithm"`
	Validity            metav1.Duration `json:"validity"`
}

// CertRenewerConfig configures the renewal of a control plane's
// certificates and kubeconfigs (package renewal).
type CertRenewerConfig struct {
	Issue `json:",inline"`
	// RenewBefore renews this long before expiry, or after two thirds of
	// the validity when that comes first.
	RenewBefore metav1.Duration `json:"renewBefore"`
}

// EtcdSnapshotterConfig configures scheduled etcd snapshots.
type EtcdSnapshotterConfig struct {
	// NodeName names the snapshots.
	NodeName string `json:"nodeName"`
	// CertDir holds the etcd client certificate (a node path).
	CertDir  string          `json:"certDir"`
	Interval metav1.Duration `json:"interval"`
	Keep     int             `json:"keep"`
	// Dir receives the snapshots (a node path).
	Dir string `json:"dir"`
}

// CAAgentConfig configures the node's follower of CA rotations (package
// carotation); on a control plane it re-issues certificates as Issue says.
type CAAgentConfig struct {
	NodeName string `json:"nodeName"`
	Issue    `json:",inline"`
}

// CSRApproverConfig configures the approver of the kubelets' serving
// certificates (package csrapprover).
type CSRApproverConfig struct {
	// Kubeconfig (a host path) is bound to the approver's ClusterRole.
	Kubeconfig string `json:"kubeconfig"`
}

// APIServerLBConfig configures the node-local API server load balancer
// (package apilb).
type APIServerLBConfig struct {
	// Listen is the address it listens on (host:port).
	Listen string `json:"listen"`
	// Seed is the API server the node joined through (host:port).
	Seed string `json:"seed"`
	// CAFile (a host path) verifies the API servers.
	CAFile string `json:"caFile"`
	// Kubeconfig (a host path) watches the EndpointSlices through the
	// balancer; it is waited for when it does not exist yet.
	Kubeconfig string `json:"kubeconfig,omitempty"`
}

// ManifestApplierConfig configures the applier of the control plane's
// manifests directory (package manifests).
type ManifestApplierConfig struct {
	// NodeName is the node its Events are about.
	NodeName string `json:"nodeName"`
	// Kubeconfig (a host path) may apply anything: the administrator's.
	Kubeconfig string `json:"kubeconfig"`
}

// StorageScalerConfig configures the scaler of the storage add-on's
// provisioner (addons.StorageScaler).
type StorageScalerConfig struct {
	// Kubeconfig (a host path) may scale kube-system's Deployments: the
	// administrator's.
	Kubeconfig string `json:"kubeconfig"`
}

// Validate checks that exactly the field of component name is set, with
// what it cannot run without.
func (o *Own) Validate(name string) error {
	if o == nil {
		return fmt.Errorf("the %s spec carries no configuration", name)
	}
	set := map[string]bool{CertRenewer: o.CertRenewer != nil, EtcdSnapshotter: o.EtcdSnapshotter != nil, CAAgent: o.CAAgent != nil,
		CSRApprover: o.CSRApprover != nil, APIServerLB: o.APIServerLB != nil,
		ManifestApplier: o.ManifestApplier != nil, StorageScaler: o.StorageScaler != nil}
	for n, ok := range set {
		if ok != (n == name) {
			return fmt.Errorf("the %s spec must carry the configuration of %s only", name, name)
		}
	}
	var missing string
	switch name {
	case CertRenewer:
		if o.CertRenewer.Validity.Duration <= 0 {
			return fmt.Errorf("%s: validity must be positive", name)
		}
	case CAAgent:
		if o.CAAgent.NodeName == "" {
			missing = "nodeName"
		} else if o.CAAgent.Validity.Duration <= 0 {
			return fmt.Errorf("%s: validity must be positive", name)
		}
	case EtcdSnapshotter:
		if o.EtcdSnapshotter.Interval.Duration <= 0 {
			return fmt.Errorf("%s: interval must be positive", name)
		}
	case CSRApprover:
		if o.CSRApprover.Kubeconfig == "" {
			missing = "kubeconfig"
		}
	case APIServerLB:
		if o.APIServerLB.Seed == "" || o.APIServerLB.CAFile == "" {
			missing = "seed and caFile"
		}
	case ManifestApplier:
		if o.ManifestApplier.NodeName == "" || o.ManifestApplier.Kubeconfig == "" {
			missing = "nodeName and kubeconfig"
		}
	case StorageScaler:
		if o.StorageScaler.Kubeconfig == "" {
			missing = "kubeconfig"
		}
	}
	if missing != "" {
		return fmt.Errorf("%s: %s required", name, missing)
	}
	return nil
}

// legacyOwn reads the configuration of one of kubeboot's own components
// from the flags its spec carried before specs carried Own (a node made
// by an older kubeboot): "--root R name --flag value ...". It returns nil
// for any other spec.
func legacyOwn(name string, args []string) (*Own, error) {
	i := slices.Index(args, name)
	if !slices.Contains(InDaemon, name) || i < 0 {
		return nil, nil
	}
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	duration := func(d *metav1.Duration, flagName string, def time.Duration) {
		d.Duration = def
		fl.DurationVar(&d.Duration, flagName, def, "")
	}
	issue := func(is *Issue) {
		fl.StringVar(&is.CertDir, config.FlagCertDir, config.DefaultCertificatesDir, "")
		fl.StringVar(&is.EncryptionAlgorithm, "encryption-algorithm", "RSA-2048", "")
		duration(&is.Validity, "validity", 365*24*time.Hour)
	}
	o := &Own{}
	switch name {
	case CertRenewer:
		c := &CertRenewerConfig{}
		issue(&c.Issue)
		duration(&c.RenewBefore, "renew-before", config.DefaultCertificateRenewBefore)
		o.CertRenewer = c
	case EtcdSnapshotter:
		c := &EtcdSnapshotterConfig{}
		fl.StringVar(&c.NodeName, config.FlagNodeName, "", "")
		fl.StringVar(&c.CertDir, config.FlagCertDir, config.DefaultCertificatesDir, "")
		duration(&c.Interval, "interval", config.DefaultEtcdSnapshotInterval)
		fl.IntVar(&c.Keep, "keep", config.DefaultEtcdSnapshotKeep, "")
		fl.StringVar(&c.Dir, "dir", config.DefaultEtcdSnapshotDir, "")
		o.EtcdSnapshotter = c
	case CAAgent:
		c := &CAAgentConfig{}
		fl.StringVar(&c.NodeName, config.FlagNodeName, "", "")
		issue(&c.Issue)
		o.CAAgent = c
	case CSRApprover:
		c := &CSRApproverConfig{}
		fl.StringVar(&c.Kubeconfig, "kubeconfig", "", "")
		o.CSRApprover = c
	case APIServerLB:
		c := &APIServerLBConfig{}
		fl.StringVar(&c.Listen, "listen", "", "")
		fl.StringVar(&c.Seed, "seed", "", "")
		fl.StringVar(&c.CAFile, "ca-file", "", "")
		fl.StringVar(&c.Kubeconfig, "kubeconfig", "", "")
		o.APIServerLB = c
	}
	if err := fl.Parse(args[i+1:]); err != nil {
		return nil, fmt.Errorf("the %s spec's flags: %w", name, err)
	}
	return o, nil
}
