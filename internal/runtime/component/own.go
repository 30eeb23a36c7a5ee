package component

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeboot/kubeboot/pkg/config"
)

// OwnConfig is the typed configuration of one of kubeboot's own
// components (the ones the node daemon runs in its own process, InDaemon),
// which the component's spec carries in Own; package service runs it. Its
// type is declared once, in the component's Table entry (OwnKind).
type OwnConfig interface {
	// Validate tells what the component cannot run without.
	Validate() error
}

// Own carries the configuration of one own component. In a spec's JSON it
// is an object with one member, named by the component's OwnKind.Key
// ({"certRenewer": {...}}), as when Own was a struct of one pointer per
// component.
type Own struct {
	Config OwnConfig
	// unread names what a spec carried that this kubeboot does not know
	// (a component of another release, several configurations): only
	// that component is refused, by Validate, as when Own was a struct.
	unread string
}

// missing tells whether c is no configuration: nil, or a nil pointer.
func missing(c OwnConfig) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// OwnOf is the configuration of type T that o carries, or T's zero value
// (nil) when o is nil or carries another.
func OwnOf[T OwnConfig](o *Own) T {
	var zero T
	if o == nil {
		return zero
	}
	c, ok := o.Config.(T)
	if !ok {
		return zero
	}
	return c
}

// ownKind is the declaration of the own component whose configuration has
// c's type.
func ownKind(c OwnConfig) (Declared, bool) {
	t := reflect.TypeOf(c)
	for _, d := range Table {
		if d.Own != nil && reflect.TypeOf(d.Own.New()) == t {
			return d, true
		}
	}
	return Declared{}, false
}

// MarshalJSON writes {"<key>": config}.
func (o Own) MarshalJSON() ([]byte, error) {
	if missing(o.Config) {
		return []byte("{}"), nil
	}
	d, ok := ownKind(o.Config)
	if !ok {
		return nil, fmt.Errorf("%T is no own component's configuration", o.Config)
	}
	return json.Marshal(map[string]OwnConfig{d.Own.Key: o.Config})
}

// UnmarshalJSON reads {"<key>": config} into the type declared for key
// (matched as encoding/json matches a struct's fields: case aside). A key
// no component declares, or several keys, leave no configuration and
// make Validate refuse the spec: one spec this kubeboot cannot run (of a
// later release, after a downgrade) must not stop the node's others from
// loading.
func (o *Own) UnmarshalJSON(b []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	o.Config, o.unread = nil, ""
	if len(members) > 1 {
		o.unread = fmt.Sprintf("%d configurations (%s)", len(members), strings.Join(slices.Sorted(maps.Keys(members)), ", "))
		return nil
	}
	for key, raw := range members {
		i := slices.IndexFunc(Table, func(d Declared) bool { return d.Own != nil && strings.EqualFold(d.Own.Key, key) })
		if i < 0 {
			o.unread = fmt.Sprintf("the configuration %q, which this kubeboot does not know (written by another release?)", key)
			return nil
		}
		c := Table[i].Own.New()
		if err := json.Unmarshal(raw, c); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		o.Config = c
	}
	return nil
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

// ImageRegistryConfig configures the node's image-registry (package
// images' Server, and the import of what the runtime lacks).
type ImageRegistryConfig struct {
	// Listen is the address it serves on (127.0.0.1:port); empty where
	// the runtime is the operator's (--cri-socket), which kubeboot does
	// not point at it: there it only imports.
	Listen string `json:"listen,omitempty"`
	// CRISocket is the runtime's endpoint (unix://...).
	CRISocket string `json:"criSocket"`
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

// Validate checks that o carries the configuration of component name, with
// what it cannot run without.
func (o *Own) Validate(name string) error {
	if o != nil && o.unread != "" {
		return fmt.Errorf("the %s spec carries %s", name, o.unread)
	}
	if o == nil || missing(o.Config) {
		return fmt.Errorf("the %s spec carries no configuration", name)
	}
	if d, ok := ownKind(o.Config); !ok || d.Name != name {
		return fmt.Errorf("the %s spec must carry the configuration of %s only", name, name)
	}
	if err := o.Config.Validate(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Validate implements OwnConfig.
func (c *CertRenewerConfig) Validate() error { return c.Issue.validate() }

// Validate implements OwnConfig.
func (c *CAAgentConfig) Validate() error {
	if c.NodeName == "" {
		return required("nodeName")
	}
	return c.Issue.validate()
}

// Validate implements OwnConfig.
func (c *EtcdSnapshotterConfig) Validate() error {
	if c.Interval.Duration <= 0 {
		return errors.New("interval must be positive")
	}
	return nil
}

// Validate implements OwnConfig.
func (c *CSRApproverConfig) Validate() error {
	if c.Kubeconfig == "" {
		return required("kubeconfig")
	}
	return nil
}

// Validate implements OwnConfig.
func (c *APIServerLBConfig) Validate() error {
	if c.Seed == "" || c.CAFile == "" {
		return required("seed and caFile")
	}
	return nil
}

// Validate implements OwnConfig.
func (c *ImageRegistryConfig) Validate() error {
	if c.CRISocket == "" {
		return required("criSocket")
	}
	return nil
}

// Validate implements OwnConfig.
func (c *ManifestApplierConfig) Validate() error {
	if c.NodeName == "" || c.Kubeconfig == "" {
		return required("nodeName and kubeconfig")
	}
	return nil
}

// Validate implements OwnConfig.
func (c *StorageScalerConfig) Validate() error {
	if c.Kubeconfig == "" {
		return required("kubeconfig")
	}
	return nil
}

func (is Issue) validate() error {
	if is.Validity.Duration <= 0 {
		return errors.New("validity must be positive")
	}
	return nil
}

func required(what string) error { return fmt.Errorf("%s required", what) }

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
	var own OwnConfig
	switch name {
	case CertRenewer:
		c := &CertRenewerConfig{}
		issue(&c.Issue)
		duration(&c.RenewBefore, "renew-before", config.DefaultCertificateRenewBefore)
		own = c
	case EtcdSnapshotter:
		c := &EtcdSnapshotterConfig{}
		fl.StringVar(&c.NodeName, config.FlagNodeName, "", "")
		fl.StringVar(&c.CertDir, config.FlagCertDir, config.DefaultCertificatesDir, "")
		duration(&c.Interval, "interval", config.DefaultEtcdSnapshotInterval)
		fl.IntVar(&c.Keep, "keep", config.DefaultEtcdSnapshotKeep, "")
		fl.StringVar(&c.Dir, "dir", config.DefaultEtcdSnapshotDir, "")
		own = c
	case CAAgent:
		c := &CAAgentConfig{}
		fl.StringVar(&c.NodeName, config.FlagNodeName, "", "")
		issue(&c.Issue)
		own = c
	case CSRApprover:
		c := &CSRApproverConfig{}
		fl.StringVar(&c.Kubeconfig, "kubeconfig", "", "")
		own = c
	case APIServerLB:
		c := &APIServerLBConfig{}
		fl.StringVar(&c.Listen, "listen", "", "")
		fl.StringVar(&c.Seed, "seed", "", "")
		fl.StringVar(&c.CAFile, "ca-file", "", "")
		fl.StringVar(&c.Kubeconfig, "kubeconfig", "", "")
		own = c
	}
	if err := fl.Parse(args[i+1:]); err != nil {
		return nil, fmt.Errorf("the %s spec's flags: %w", name, err)
	}
	return &Own{Config: own}, nil
}
