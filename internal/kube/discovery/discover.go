package discovery

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	tokenjws "k8s.io/cluster-bootstrap/token/jws"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmfile "k8s.io/kubernetes/cmd/kubeadm/app/discovery/file"
	kubeadmhttps "k8s.io/kubernetes/cmd/kubeadm/app/discovery/https"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	"github.com/kubeboot/kubeboot/internal/base/poll"
)

// Cluster is what discovery establishes about the cluster a node joins:
// where its API server is and which CA to trust for it.
type Cluster struct {
	// Server is the API server URL the node uses from now on: the
	// endpoint the operator gave to join (or the server of the discovery
	// file), never silently another one.
	Server string
	// CAData is the cluster CA, PEM.
	CAData []byte
	// ClusterInfoServer is the server cluster-info names, when it differs
	// from Server (kubeadm would use it; kubeboot says so and does not).
	ClusterInfoServer string
	// AuthInfo carries the credentials a discovery file holds, if any.
	AuthInfo *clientcmdapi.AuthInfo
}

// TokenDiscovery finds and validates a cluster from a bootstrap token, as
// kubeadm's token discovery does: fetch cluster-info without trusting the
// server, verify its JWS signature with the token, verify the CA against
// the public-key pins, then fetch it again trusting only that CA and
// compare. Every refusal says which check failed and what to do.
type TokenDiscovery struct {
	// Endpoint is host:port of an API server.
	Endpoint string
	Token    *bootstraptokenv1.BootstrapTokenString
	// CACertHashes are the allowed CA public-key pins ("sha256:<hex>").
	CACertHashes []string
	// UnsafeSkipCAVerification trusts whatever CA cluster-info carries.
	UnsafeSkipCAVerification bool
	// Timeout bounds the waits for a server that is not reachable yet or
	// a signature the bootstrap signer has not added yet.
	Timeout time.Duration
	// SignatureWait bounds the wait for the token's signature (zero: 60 s).
	SignatureWait time.Duration
	// Logf receives progress and warning lines.
	Logf func(format string, args ...any)
}

func (d *TokenDiscovery) url() string { return "https://" + d.Endpoint }

// errRetry marks a failure that may pass: a server still starting, a
// signature not added yet.
type errRetry struct{ err error }

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

// Discover runs the discovery.
func (d *TokenDiscovery) Discover(ctx context.Context) (*Cluster, error) {
	pins := pubkeypin.NewSet()
	if err := pins.Allow(d.CACertHashes...); err != nil {
		return nil, fmt.Errorf("--discovery-token-ca-cert-hash: %w (the form is sha256:<64 hex digits>)", err)
	}
	if pins.Empty() && !d.UnsafeSkipCAVerification {
		return nil, fmt.Errorf("token discovery needs the CA's public-key pin (--discovery-token-ca-cert-hash, printed by `kubeboot token create --print-join-command` on a control-plane node), or --discovery-token-unsafe-skip-ca-verification to trust whatever CA %s presents", d.url())
	}
	var insecureKubeconfig []byte
	var cluster *clientcmdapi.Cluster
	start := time.Now()
	err := d.retry(ctx, func(ctx context.Context) error {
		cm, err := d.fetch(ctx, nil)
		if err != nil {
			return err
		}
		insecureKubeconfig, cluster, err = d.validateSignature(cm, time.Since(start))
		return err
	})
	if err != nil {
		return nil, err
	}
	cas, err := certutil.ParseCertsPEM(cluster.CertificateAuthorityData)
	if err != nil || len(cas) == 0 {
		return nil, fmt.Errorf("cluster-info from %s carries no readable CA certificate: %v", d.url(), err)
	}
	if pins.Empty() {
		d.Logf("[discovery] WARNING: --discovery-token-unsafe-skip-ca-verification: trusting the CA that %s presented (%s) without checking it; anyone between this node and %s could have presented their own", d.url(), pubkeypin.Hash(cas[0]), d.Endpoint)
	} else if err := pins.CheckAny(cas); err != nil {
		return nil, fmt.Errorf("the cluster CA that %s presents (public-key pin %s) matches no --discovery-token-ca-cert-hash %v: refusing to trust it. "+
			"`kubeboot token create --print-join-command` on a control-plane node prints the right pin; or compute it there from the CA: "+
			"openssl x509 -pubkey -noout -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | openssl dgst -sha256",
			d.url(), pubkeypin.Hash(cas[0]), d.CACertHashes)
	}
	// Fetch again, trusting only that CA: a server that merely replays a
	// signed cluster-info cannot present a certificate the CA signed.
	var secure *corev1.ConfigMap
	err = d.retry(ctx, func(ctx context.Context) error {
		var err error
		secure, err = d.fetch(ctx, cluster.CertificateAuthorityData)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !bytes.Equal([]byte(secure.Data[bootstrapapi.KubeConfigKey]), insecureKubeconfig) {
		return nil, fmt.Errorf("cluster-info read from %s over TLS verified with the cluster CA differs from the one read before verification: refusing to trust %s", d.url(), d.Endpoint)
	}
	c := &Cluster{Server: d.url(), CAData: cluster.CertificateAuthorityData}
	if cluster.Server != c.Server {
		c.ClusterInfoServer = cluster.Server
	}
	return c, nil
}

// retry runs f until it succeeds, fails for good, or the timeout passes,
// with a progress line every 5 s.
func (d *TokenDiscovery) retry(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	progress := poll.Progress(d.Logf, "discovery", "cluster-info from "+d.url(), true)
	err := poll.Until(ctx, 200*time.Millisecond, 5*time.Second, progress, func(ctx context.Context) error {
		err := f(ctx)
		var r errRetry
		if err != nil && !errors.As(err, &r) {
			return poll.Stop(err)
		}
		return err
	})
	var exp *poll.Expired
	if !errors.As(err, &exp) {
		return err
	}
	last := exp.Last
	var r errRetry
	if errors.As(last, &r) {
		last = r.err
	}
	return fmt.Errorf("%w (gave up after %s; the discovery timeout is timeouts.discovery of the JoinConfiguration)", last, exp.Waited.Round(time.Second))
}

// restConfig is a client configuration for the endpoint: anonymous, or
// with a bearer token; trusting caData, or nothing (skip verification).
func (d *TokenDiscovery) restConfig(caData []byte, token string) *rest.Config {
	rc := &rest.Config{Host: d.url(), Timeout: 10 * time.Second, BearerToken: token}
	if caData == nil {
		rc.TLSClientConfig.Insecure = true
	} else {
		rc.TLSClientConfig.CAData = caData
	}
	return rc
}

// fetch reads cluster-info anonymously.
func (d *TokenDiscovery) fetch(ctx context.Context, caData []byte) (*corev1.ConfigMap, error) {
	c, err := kubernetes.NewForConfig(d.restConfig(caData, ""))
	if err != nil {
		return nil, err
	}
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	switch {
	case err == nil:
		return cm, nil
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return nil, fmt.Errorf("%s does not let anonymous clients read kube-public/cluster-info (%v): it is not set up for joining with a bootstrap token; `kubeboot init phase bootstrap-token` on a control-plane node sets it up", d.url(), err)
	case apierrors.IsNotFound(err):
		return nil, errRetry{fmt.Errorf("%s has no kube-public/cluster-info ConfigMap yet: is `kubeboot init` still running there?", d.url())}
	}
	if caData != nil && isCertificateError(err) {
		return nil, fmt.Errorf("%s presents a serving certificate that the cluster CA does not verify (%v): another server answers at %s than the cluster's API server, or the certificate lacks this address (add it with --apiserver-cert-extra-sans on the control plane); refusing to join", d.url(), rootCause(err), d.Endpoint)
	}
	return nil, errRetry{fmt.Errorf("cannot read cluster-info from %s (the endpoint given to join): %v", d.url(), rootCause(err))}
}

// signatureWait bounds the wait for a token's signature: the bootstrap
// signer adds it within a second or two of the token's creation on an
// idle control plane, but a join right after `token create` on a busy or
// slow one (a Debian VM under emulation: more than 16 s) waits longer; a
// signature still missing after that means the token is unknown. kubeadm
// waits for its whole discovery timeout (5 min) instead, which makes a
// mistyped token slow to report.
const signatureWait = 60 * time.Second

// validateSignature checks cluster-info's JWS signature for the token.
// The server is not trusted yet: nothing secret is sent to it, so a
// missing or wrong signature is reported with the causes it can have.
func (d *TokenDiscovery) validateSignature(cm *corev1.ConfigMap, waited time.Duration) ([]byte, *clientcmdapi.Cluster, error) {
	content := cm.Data[bootstrapapi.KubeConfigKey]
	if content == "" {
		return nil, nil, fmt.Errorf("cluster-info from %s holds no %q key: this API server is not set up for joining with a bootstrap token", d.url(), bootstrapapi.KubeConfigKey)
	}
	sig, signed := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+d.Token.ID]
	limit := d.SignatureWait
	if limit == 0 {
		limit = signatureWait
	}
	switch {
	case !signed && waited < limit:
		return nil, nil, errRetry{fmt.Errorf("cluster-info from %s carries no signature for token %q yet", d.url(), d.Token.ID)}
	case !signed:
		return nil, nil, fmt.Errorf("cluster-info from %s carries no signature for bootstrap token %q after %s: the token is unknown or has expired. "+
			"Create a new one with `kubeboot token create --print-join-command` on a control-plane node", d.url(), d.Token.ID, waited.Round(time.Second))
	case !tokenjws.DetachedTokenIsValid(sig, content, d.Token.ID, d.Token.Secret):
		return nil, nil, fmt.Errorf("cluster-info from %s does not match its signature for token %q: either the token's secret is wrong "+
			"(`kubeboot token list` on a control-plane node shows the tokens) or cluster-info was altered between the cluster and this node; refusing to trust %s",
			d.url(), d.Token.ID, d.Endpoint)
	}
	kc, err := clientcmd.Load([]byte(content))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster-info from %s holds no valid kubeconfig: %w", d.url(), err)
	}
	_, cluster, err := kubeconfigutil.GetClusterFromKubeConfig(kc)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster-info from %s: %w", d.url(), err)
	}
	return []byte(content), cluster, nil
}

func isCertificateError(err error) bool {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		strings.Contains(err.Error(), "x509:")
}

// rootCause strips client-go's wrapping down to what an operator can act
// on ("dial tcp 10.0.0.1:6443: connect: connection refused").
func rootCause(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op
	}
	return err
}

// FileDiscovery validates a discovery kubeconfig, from a file or an HTTPS
// URL, with kubeadm's own file discovery: it connects with the file's CA
// (and credentials, if any) and reads cluster-info once more.
func FileDiscovery(pathOrURL string, timeout time.Duration) (*Cluster, error) {
	var kc *clientcmdapi.Config
	var err error
	if strings.HasPrefix(pathOrURL, "https://") {
		kc, err = kubeadmhttps.RetrieveValidatedConfigInfo(pathOrURL, timeout)
	} else {
		kc, err = kubeadmfile.RetrieveValidatedConfigInfo(pathOrURL, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("discovery file %s: %w", pathOrURL, err)
	}
	_, cluster, err := kubeconfigutil.GetClusterFromKubeConfig(kc)
	if err != nil {
		return nil, fmt.Errorf("discovery file %s: %w", pathOrURL, err)
	}
	if len(cluster.CertificateAuthorityData) == 0 {
		return nil, fmt.Errorf("discovery file %s names no CA for %s", pathOrURL, cluster.Server)
	}
	c := &Cluster{Server: cluster.Server, CAData: cluster.CertificateAuthorityData}
	if ctx, ok := kc.Contexts[kc.CurrentContext]; ok && kubeconfigutil.HasAuthenticationCredentials(kc) {
		c.AuthInfo = kc.AuthInfos[ctx.AuthInfo]
	}
	return c, nil
}
