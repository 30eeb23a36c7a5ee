package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	nodebootstraptoken "k8s.io/kubernetes/cmd/kubeadm/app/phases/bootstraptoken/node"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/kube/discovery"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// JoinCommand is what a node needs to join a cluster with a bootstrap
// token: what `kubeboot join` takes, as data.
type JoinCommand struct {
	// Endpoint is the API server endpoint, host:port.
	Endpoint string
	// Token is the bootstrap token, [a-z0-9]{6}.[a-z0-9]{16}.
	Token string
	// CACertHash pins the cluster CA's public key, "sha256:<hex>".
	CACertHash string
	// ControlPlane joins a control plane; CertificateKey decrypts the
	// certificates init or `init phase upload-certs` uploaded.
	ControlPlane   bool
	CertificateKey string
}

// String is the command on one line, as `kubeboot token create
// --print-join-command` prints it: a shell's word splitting runs it.
func (j JoinCommand) String() string {
	return discovery.JoinCommandLine(j.Endpoint, j.Token, j.CACertHash, j.ControlPlane, j.CertificateKey)
}

// Args are the command's arguments after the binary's name.
func (j JoinCommand) Args() []string {
	return strings.Fields(j.String())[1:]
}

// Config is the JoinConfiguration the command stands for, as Join takes
// it; the node's own settings (name, address) are the caller's to add.
func (j JoinCommand) Config() *config.Config {
	jc := &kubeadmv1.JoinConfiguration{}
	jc.Discovery.BootstrapToken = &kubeadmv1.BootstrapTokenDiscovery{
		Token: j.Token, APIServerEndpoint: j.Endpoint, CACertHashes: []string{j.CACertHash},
	}
	jc.Discovery.TLSBootstrapToken = j.Token
	if j.ControlPlane {
		jc.ControlPlane = &kubeadmv1.JoinControlPlane{CertificateKey: j.CertificateKey}
	}
	return &config.Config{Join: jc}
}

// TokenOptions are what `kubeboot token create` takes.
type TokenOptions struct {
	// Kubeconfig is the file to reach the cluster with (an admin's):
	// the join command names its server and pins its CA.
	Kubeconfig string
	// Token is the token to create; "" generates one.
	Token string
	// TTL is how long the token is valid; 0 means forever. Negative is
	// refused.
	TTL time.Duration
	// Description says what the token is for.
	Description string
	// Usages and Groups default to kubeadm's (signing and authentication,
	// system:bootstrappers:kubeadm:default-node-token).
	Usages, Groups []string
	// CertificateKey, when set, makes the command a control plane's.
	CertificateKey string
}

// CreateToken creates a bootstrap token in the cluster, as `kubeboot token
// create` does, and returns the join command that uses it.
func CreateToken(ctx context.Context, o TokenOptions) (*JoinCommand, error) {
	if o.Usages == nil {
		o.Usages = bootstrapapi.KnownTokenUsages
	}
	if o.Groups == nil {
		o.Groups = []string{discovery.DefaultTokenGroup}
	}
	tokStr := o.Token
	if tokStr == "" {
		var err error
		if tokStr, err = bootstraputil.GenerateBootstrapToken(); err != nil {
			return nil, err
		}
	}
	tok, err := bootstraptokenv1.NewBootstrapTokenString(tokStr)
	if err != nil {
		return nil, fmt.Errorf("token %q: must be of the form [a-z0-9]{6}.[a-z0-9]{16}", tokStr)
	}
	if o.TTL < 0 {
		return nil, fmt.Errorf("--ttl must not be negative (0 means never expires)")
	}
	for _, u := range o.Usages {
		if !slices.Contains(bootstrapapi.KnownTokenUsages, u) {
			return nil, fmt.Errorf("--usages: unknown usage %q (known: %s)", u, strings.Join(bootstrapapi.KnownTokenUsages, ", "))
		}
	}
	for _, gr := range o.Groups {
		if err := bootstraputil.ValidateBootstrapGroupName(gr); err != nil {
			return nil, fmt.Errorf("--groups: %w", err)
		}
	}
	// What the join command needs is read before the token exists: a
	// kubeconfig that cannot give it leaves no token behind.
	kc, err := clientcmd.LoadFromFile(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	_, cl, err := kubeconfigutil.GetClusterFromKubeConfig(kc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Kubeconfig, err)
	}
	cas, err := certutil.ParseCertsPEM(cl.CertificateAuthorityData)
	if err != nil || len(cas) == 0 {
		return nil, fmt.Errorf("%s has no CA certificate to pin: %v", o.Kubeconfig, err)
	}
	c, _, err := apiclient.FromKubeconfig(o.Kubeconfig, "")
	if err != nil {
		return nil, err
	}
	bt := bootstraptokenv1.BootstrapToken{Token: tok, Description: o.Description, TTL: &metav1.Duration{Duration: o.TTL}, Usages: o.Usages, Groups: o.Groups}
	// kubeadm's own: refuses a token ID that exists already.
	if err := nodebootstraptoken.CreateNewTokens(c, []bootstraptokenv1.BootstrapToken{bt}); err != nil {
		return nil, err
	}
	return &JoinCommand{
		Endpoint: strings.TrimPrefix(cl.Server, "https://"), Token: tok.String(), CACertHash: pubkeypin.Hash(cas[0]),
		ControlPlane: o.CertificateKey != "", CertificateKey: o.CertificateKey,
	}, nil
}
