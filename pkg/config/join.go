package config

import (
	"fmt"

	"github.com/spf13/pflag"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
)

// Flag names of `join`, spelled as kubeadm spells them.
const (
	FlagDiscoveryToken      = "discovery-token"
	FlagDiscoveryCAHash     = "discovery-token-ca-cert-hash"
	FlagDiscoverySkipCAHash = "discovery-token-unsafe-skip-ca-verification"
	FlagDiscoveryFile       = "discovery-file"
	FlagTLSBootstrapToken   = "tls-bootstrap-token"
	FlagControlPlane        = "control-plane"
)

// JoinFlags are the configuration flags of `join` and its phases.
type JoinFlags struct {
	ConfigFile        string
	NodeName          string
	CRISocket         string
	Token             string
	DiscoveryToken    string
	CACertHashes      []string
	UnsafeSkipCA      bool
	DiscoveryFile     string
	TLSBootstrapToken string
	ControlPlane      bool
	AdvertiseAddress  string
	BindPort          int32
	CertificateKey    string
}

// AddFlags registers the flags on fs.
func (f *JoinFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.ConfigFile, FlagConfig, "", "Path to a kubeadm v1beta4 JoinConfiguration file")
	fs.StringVar(&f.NodeName, FlagNodeName, "", "The node's name (default: the hostname)")
	fs.StringVar(&f.CRISocket, FlagCRISocket, "", "The CRI socket of a container runtime you run; by default kubeboot runs containerd itself")
	fs.StringVar(&f.Token, FlagToken, "", "Use this token for both discovery-token and tls-bootstrap-token when those values are not provided")
	fs.StringVar(&f.DiscoveryToken, FlagDiscoveryToken, "", "The token to validate cluster information fetched from the API server")
	fs.StringSliceVar(&f.CACertHashes, FlagDiscoveryCAHash, nil, "For token-based discovery, validate that the root CA public key matches this hash (format: \"sha256:<hex>\"); may be repeated")
	fs.BoolVar(&f.UnsafeSkipCA, FlagDiscoverySkipCAHash, false, "For token-based discovery, allow joining without --discovery-token-ca-cert-hash pinning (unsafe: trusts whatever CA the endpoint presents)")
	fs.StringVar(&f.DiscoveryFile, FlagDiscoveryFile, "", "For file-based discovery, a file or an HTTPS URL from which to load cluster information")
	fs.StringVar(&f.TLSBootstrapToken, FlagTLSBootstrapToken, "", "The token used to temporarily authenticate with the control plane while joining the node")
	fs.BoolVar(&f.ControlPlane, FlagControlPlane, false, "Create a new control plane instance on this node")
	fs.StringVar(&f.AdvertiseAddress, FlagAdvertiseAddress, "", "With --control-plane, the IP address this node's API server advertises (default: the address of the default-route interface)")
	fs.Int32Var(&f.BindPort, FlagBindPort, 6443, "With --control-plane, the port this node's API server binds to")
	fs.StringVar(&f.CertificateKey, FlagCertificateKey, "", "With --control-plane, the key that decrypts the certificates in the kubeadm-certs Secret (printed by kubeboot init --upload-certs)")
}

// LoadJoin builds the JoinConfiguration of `join` from --config or from
// the flags and the endpoint argument, as kubeadm does, applies defaults
// and validates it.
func LoadJoin(f *JoinFlags, fs *pflag.FlagSet, args []string, h Host) (*Config, error) {
	if err := CheckMixedFlags(fs); err != nil {
		return nil, err
	}
	var c *Config
	if f.ConfigFile != "" {
		var err error
		if c, err = ReadFile(f.ConfigFile); err != nil {
			return nil, err
		}
		if c.Join == nil {
			return nil, &DocError{Source: f.ConfigFile, Err: fmt.Errorf("no JoinConfiguration document: `join` needs one")}
		}
		if len(args) > 0 {
			return nil, fmt.Errorf("the API server endpoint %q is given both as an argument and by --config %s: give it in one place", args[0], f.ConfigFile)
		}
		if fs.Changed(FlagNodeName) {
			c.Join.NodeRegistration.Name = f.NodeName
		}
		if fs.Changed(FlagCertificateKey) && c.Join.ControlPlane != nil {
			c.Join.ControlPlane.CertificateKey = f.CertificateKey
		}
	} else {
		c = &Config{Join: f.join(args)}
		if !f.ControlPlane && (fs.Changed(FlagCertificateKey) || fs.Changed(FlagAdvertiseAddress) || fs.Changed(FlagBindPort)) {
			return nil, fmt.Errorf("--%s, --%s and --%s are for joining a control plane: add --%s", FlagCertificateKey, FlagAdvertiseAddress, FlagBindPort, FlagControlPlane)
		}
	}
	c.DefaultJoin(h)
	if err := c.ValidateKinds(KindJoin); err != nil {
		return nil, err
	}
	return c, nil
}

// join turns the flags into a JoinConfiguration, as kubeadm's newJoinData.
func (f *JoinFlags) join(args []string) *kubeadmv1.JoinConfiguration {
	j := &kubeadmv1.JoinConfiguration{}
	j.NodeRegistration.Name = f.NodeName
	j.NodeRegistration.CRISocket = f.CRISocket
	j.Discovery.TLSBootstrapToken = f.TLSBootstrapToken
	if j.Discovery.TLSBootstrapToken == "" {
		j.Discovery.TLSBootstrapToken = f.Token
	}
	if f.DiscoveryFile != "" {
		j.Discovery.File = &kubeadmv1.FileDiscovery{KubeConfigPath: f.DiscoveryFile}
	}
	if len(args) > 0 {
		token := f.DiscoveryToken
		if token == "" {
			token = f.Token
		}
		j.Discovery.BootstrapToken = &kubeadmv1.BootstrapTokenDiscovery{
			Token:                    token,
			APIServerEndpoint:        args[0],
			CACertHashes:             f.CACertHashes,
			UnsafeSkipCAVerification: f.UnsafeSkipCA,
		}
	}
	if f.ControlPlane {
		j.ControlPlane = &kubeadmv1.JoinControlPlane{
			LocalAPIEndpoint: kubeadmv1.APIEndpoint{AdvertiseAddress: f.AdvertiseAddress, BindPort: f.BindPort},
			CertificateKey:   f.CertificateKey,
		}
	}
	return j
}
