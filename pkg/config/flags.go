package config

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
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

// InitFlags are the configuration flags of `init` and its phases.
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

// AddFlags registers the flags on fs.
func (f *InitFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.ConfigFile, FlagConfig, "", "Path to a kubeadm v1beta4 configuration file (InitConfiguration, ClusterConfiguration, KubeletConfiguration, KubeProxyConfiguration)")
	fs.StringVar(&f.AdvertiseAddress, FlagAdvertiseAddress, "", "The IP address the API server advertises it is listening on (default: the address of the default-route interface)")
	fs.Int32Var(&f.BindPort, FlagBindPort, 6443, "Port for the API server to bind to")
	fs.StringVar(&f.ControlPlaneEndpoint, FlagControlPlaneEndpoint, "", "A stable IP address or DNS name (with optional port) for the control plane; every kubeconfig kubeboot writes uses it")
	fs.StringVar(&f.PodNetworkCIDR, FlagPodNetworkCIDR, DefaultPodSubnet, "The range of IP addresses for the pod network; node pod CIDRs are allocated from it")
	fs.StringVar(&f.ServiceCIDR, FlagServiceCIDR, "10.96.0.0/12", "The range of IP addresses for service VIPs")
	fs.StringVar(&f.ServiceDNSDomain, FlagServiceDNSDomain, "cluster.local", "The DNS domain of services")
	fs.StringVar(&f.NodeName, FlagNodeName, "", "The node's name (default: the hostname)")
	fs.StringVar(&f.CertDir, FlagCertDir, "/etc/kubernetes/pki", "Where certificates are stored (under --root)")
	fs.StringVar(&f.KubernetesVersion, FlagKubernetesVersion, "", "The Kubernetes version of the control plane; kubeboot runs the one it embeds")
	fs.StringSliceVar(&f.CertSANs, FlagCertSANs, nil, "Extra Subject Alternative Names (IPs or DNS names) for the API server certificate")
	fs.StringVar(&f.Token, FlagToken, "", "The bootstrap token, of the form [a-z0-9]{6}.[a-z0-9]{16} (default: generated)")
	fs.DurationVar(&f.TokenTTL, FlagTokenTTL, 24*time.Hour, "How long the bootstrap token is valid; 0 means it never expires")
	fs.StringVar(&f.CRISocket, FlagCRISocket, "", "The CRI socket of a container runtime you run; by default kubeboot runs containerd itself")
	fs.StringVar(&f.CertificateKey, FlagCertificateKey, "", "The key that encrypts the control-plane certificates in the kubeadm-certs Secret (64 hex characters)")
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
	"registry-mirror": true,
}

// CheckMixedFlags refuses configuration flags next to --config, as kubeadm
// does: a file is the whole configuration, and a flag that silently lost
// against it (or won over it) would surprise either way.
func CheckMixedFlags(fs *pflag.FlagSet) error {
	if !fs.Changed(FlagConfig) {
		return nil
	}
	var mixed []string
	fs.Visit(func(f *pflag.Flag) {
		if allowedWithConfig[f.Name] || strings.HasPrefix(f.Name, "skip-") {
			return
		}
		mixed = append(mixed, "--"+f.Name)
	})
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
// flags, applies defaults and validates it. fs is the command's flag set,
// used to tell flags given on the command line from defaults.
func LoadInit(f *InitFlags, fs *pflag.FlagSet, h Host) (*Config, error) {
	if err := CheckMixedFlags(fs); err != nil {
		return nil, err
	}
	var c *Config
	if f.ConfigFile != "" {
		var err error
		if c, err = ReadFile(f.ConfigFile); err != nil {
			return nil, err
		}
		if c.Init == nil && c.Cluster == nil {
			return nil, &DocError{Source: f.ConfigFile, Err: fmt.Errorf("no InitConfiguration or ClusterConfiguration document: `init` needs at least one of them")}
		}
		c.EnsureInit()
		if fs.Changed(FlagNodeName) {
			c.Init.NodeRegistration.Name = f.NodeName
		}
		if fs.Changed(FlagCertificateKey) {
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
