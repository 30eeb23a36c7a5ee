package config

import (
	"fmt"

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

// JoinFlags are the values of the configuration flags of `join` and its
// phases; the CLI declares the flags and their defaults.
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

// LoadJoin builds the JoinConfiguration of `join` from --config or from
// the flags and the endpoint argument, as kubeadm does, applies defaults
// and validates it.
func LoadJoin(f *JoinFlags, given Given, args []string, h Host) (*Config, error) {
	if err := CheckMixedFlags(given); err != nil {
		return nil, err
	}
	var c *Config
	if f.ConfigFile != "" {
		var err error
		if c, err = ReadFile(f.ConfigFile); err != nil {
			return nil, err
		}
		if err := c.NeedJoin(); err != nil {
			return nil, err
		}
		if len(args) > 0 {
			return nil, fmt.Errorf("the API server endpoint %q is given both as an argument and by --config %s: give it in one place", args[0], f.ConfigFile)
		}
		if given.Has(FlagNodeName) {
			c.Join.NodeRegistration.Name = f.NodeName
		}
		if given.Has(FlagCertificateKey) && c.Join.ControlPlane != nil {
			c.Join.ControlPlane.CertificateKey = f.CertificateKey
		}
	} else {
		c = &Config{Join: f.join(args)}
		if !f.ControlPlane && (given.Has(FlagCertificateKey) || given.Has(FlagAdvertiseAddress) || given.Has(FlagBindPort)) {
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
