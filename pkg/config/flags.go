package config

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
)

// Flag names shared by the commands, spelled as kubeadm spells them.
const (
	FlagConfig               = "config"
	FlagAdvertiseAddress     = "apiserver-advertise-address"
	FlagBindPort             = "apiserver-bind-port"
	FlagControlPlaneEndpoint = "control-plane-endpoint"
	FlagPodNetworkCIDR       = "pod-network-cidr"
	FlagServiceCIDR          = "service-cidr"
	FlagServiceDNSDomain     = "service-dns-domain"
	FlagNodeName             = "node-name"
	FlagCertDir              = "cert-dir"
	FlagKubernetesVersion    = "kubernetes-version"
	FlagCertSANs             = "apiserver-cert-extra-sans"
	FlagToken                = "token"
	FlagTokenTTL             = "token-ttl"
	FlagCRISocket            = "cri-socket"
	FlagCertificateKey       = "certificate-key"
)

// InitFlags are the values of the configuration flags of `init` and its
// phases; the CLI declares the flags and their defaults.
type InitFlags struct {
	ConfigFile           string
	AdvertiseAddress     string
	BindPort             int32
	ControlPlaneEndpoint string
	PodNetworkCIDR       string
	ServiceCIDR          string
	ServiceDNSDomain     string
	NodeName             string
	CertDir              string
	KubernetesVersion    string
	CertSANs             []string
	Token                string
	TokenTTL             time.Duration
	CRISocket            string
	CertificateKey       string
}

// allowedWithConfig are the flags kubeadm lets stand beside --config;
// every flag starting with "skip-" is allowed too.
var allowedWithConfig = map[string]bool{
	FlagConfig: true, "ignore-preflight-errors": true, "dry-run": true, "kubeconfig": true,
	FlagNodeName: true, "kubeconfig-dir": true, "upload-certs": true, "print-manifest": true,
	"allow-missing-template-keys": true, "output": true, "show-managed-fields": true,
	"print-join-command": true, "rootfs": true, "v": true, "log-file": true, "yes": true,
	"root": true, FlagCertificateKey: true, "force": true, "dns-upstream": true, "single-node": true, "hardened": true, "explain": true,
	// kubeboot's lifecycle and runtime flags: no document of kubeadm's carries them.
	"certificate-renew-before": true, "etcd-snapshot-interval": true, "etcd-snapshot-keep": true, "etcd-snapshot-dir": true,
	"registry-mirror": true, "node-checks-only": true,
}

// Given names the flags given on the command line (not left at their
// defaults); the CLI fills it from its flag set.
type Given []string

// Has reports whether the flag name was given.
func (g Given) Has(name string) bool { return slices.Contains(g, name) }

// CheckMixedFlags refuses configuration flags next to --config, as kubeadm
// does: a file is the whole configuration, and a flag that silently lost
// against it (or won over it) would surprise either way.
func CheckMixedFlags(given Given) error {
	if !given.Has(FlagConfig) {
		return nil
	}
	var mixed []string
	for _, name := range given {
		if allowedWithConfig[name] || strings.HasPrefix(name, "skip-") {
			continue
		}
		mixed = append(mixed, "--"+name)
	}
	if len(mixed) > 0 {
		sort.Strings(mixed)
		return fmt.Errorf("can not mix '--config' with arguments %v: put these settings in the configuration file", mixed)
	}
	return nil
}

// ReadFile parses a configuration file.
func ReadFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	return Parse(path, data)
}

// LoadInit builds the configuration of `init` from --config or from the
// flags, applies defaults and validates it. given tells flags given on the
// command line from defaults.
func LoadInit(f *InitFlags, given Given, h Host) (*Config, error) {
	if err := CheckMixedFlags(given); err != nil {
		return nil, err
	}
	var c *Config
	if f.ConfigFile != "" {
		var err error
		if c, err = ReadFile(f.ConfigFile); err != nil {
			return nil, err
		}
		if err := c.NeedInit(); err != nil {
			return nil, err
		}
		c.EnsureInit()
		if given.Has(FlagNodeName) {
			c.Init.NodeRegistration.Name = f.NodeName
		}
		if given.Has(FlagCertificateKey) {
			c.Init.CertificateKey = f.CertificateKey
		}
	} else {
		c = &Config{}
		if err := f.apply(c); err != nil {
			return nil, err
		}
	}
	if err := c.DefaultInit(h); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// apply turns the flags into Init and Cluster documents.
func (f *InitFlags) apply(c *Config) error {
	c.EnsureInit()
	in, cl := c.Init, c.Cluster
	in.LocalAPIEndpoint.AdvertiseAddress = f.AdvertiseAddress
	in.LocalAPIEndpoint.BindPort = f.BindPort
	in.NodeRegistration.Name = f.NodeName
	in.NodeRegistration.CRISocket = f.CRISocket
	in.CertificateKey = f.CertificateKey
	cl.ControlPlaneEndpoint = f.ControlPlaneEndpoint
	cl.Networking.PodSubnet = f.PodNetworkCIDR
	cl.Networking.ServiceSubnet = f.ServiceCIDR
	cl.Networking.DNSDomain = f.ServiceDNSDomain
	cl.CertificatesDir = f.CertDir
	cl.KubernetesVersion = f.KubernetesVersion
	cl.APIServer.CertSANs = f.CertSANs
	bt := bootstraptokenv1.BootstrapToken{TTL: &metav1.Duration{Duration: f.TokenTTL}}
	if f.Token != "" {
		tok, err := bootstraptokenv1.NewBootstrapTokenString(f.Token)
		if err != nil {
			return fmt.Errorf("--%s: Invalid value: %q: must be of the form [a-z0-9]{6}.[a-z0-9]{16}", FlagToken, f.Token)
		}
		bt.Token = tok
	}
	in.BootstrapTokens = []bootstraptokenv1.BootstrapToken{bt}
	return nil
}
