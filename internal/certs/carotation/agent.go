package carotation

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
)

// DefaultInterval is how often a node's agent looks for a rotation step:
// one GET, on a kept-alive connection.
const DefaultInterval = 10 * time.Second

// Agent follows a rotation on one node.
type Agent struct {
	FS fsys.FS
	// Node is the node's name.
	Node string
	// CertDir is the certificates dir (node path).
	CertDir  string
	Interval time.Duration
	Logf     func(format string, args ...any)
	// Client, when set, replaces the client made from kubelet.conf (tests).
	Client kubernetes.Interface
	// CP applies the steps to the node's CA files and certificates when
	// the node is a control plane (it holds ca.key).
	CP *ControlPlane

	cached     kubernetes.Interface
	cachedFrom os.FileInfo // kubelet.conf when cached was made
}

// kubeletPKI is where the kubelet keeps its rotating certificates.
var kubeletPKI = path.Join(node.KubeletDir, "pki")

// Run applies each step of a rotation as it is published, until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	interval := a.Interval
	if interval == 0 {
		interval = DefaultInterval
	}
	var lastErr string
	for {
		if err := a.Once(ctx); err != nil && err.Error() != lastErr && ctx.Err() == nil {
			lastErr = err.Error()
			a.Logf("[ca-rotation] %v", err)
		} else if err == nil {
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// client talks to the API with the kubelet's identity, made again when
// kubelet.conf changes (a step changes the CA it trusts; the certificate
// files it names are read at each handshake).
func (a *Agent) client() (kubernetes.Interface, error) {
	if a.Client != nil {
		return a.Client, nil
	}
	file := a.FS.Path(path.Join(node.KubernetesDir, kubeconfig.Kubelet))
	st, err := os.Stat(file)
	if err != nil {
		return nil, nil // not bootstrapped yet
	}
	if a.cached != nil && st.ModTime().Equal(a.cachedFrom.ModTime()) && st.Size() == a.cachedFrom.Size() {
		return a.cached, nil
	}
	c, _, err := apiclient.FromKubeconfig(file, "")
	if err != nil {
		return nil, err
	}
	a.cached, a.cachedFrom = c, st
	return c, nil
}

// Once applies the published step if this node has not yet, and reports it.
func (a *Agent) Once(ctx context.Context) error {
	c, err := a.client()
	if err != nil || c == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cm, err := c.CoreV1().ConfigMaps(Namespace).Get(ctx, ConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		// No rotation (its Role exists only while one runs).
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s/%s: %w", Namespace, ConfigMapName, err)
	}
	step, err := stepOf(cm)
	if err != nil {
		return err
	}
	applied, _ := a.FS.ReadFile(node.CARotationApplied)
	if strings.TrimSpace(string(applied)) != step.ID() {
		if err := a.apply(ctx, c, step); err != nil {
			return fmt.Errorf("applying the CA rotation's %s step: %w", step.Phase, err)
		}
		// With the CA and the certificate the step gave the node.
		if c, err = a.client(); err != nil {
			return err
		}
	}
	return a.report(ctx, c, step.ID())
}

// apply brings the node to the step: trust, kubeconfigs, kubelet
// certificates, then the record that restarts the kubelet.
func (a *Agent) apply(ctx context.Context, c kubernetes.Interface, step Step) error {
	_, signer, err := step.Parse()
	if err != nil {
		return err
	}
	var did []string
	// A control plane's ca.crt goes with ca.key: the two change together
	// or the pair does not load.
	caCrt := path.Join(a.CertDir, "ca.crt")
	if fsys.Exists(a.FS, path.Join(a.CertDir, "ca.key")) {
		if a.CP != nil {
			n, err := a.controlPlane(ctx, c, step, signer)
			if err != nil {
				return err
			}
			if n > 0 {
				did = append(did, fmt.Sprintf("%d of this control plane's CA and certificate files", n))
			}
		}
	} else {
		cur, _ := a.FS.ReadFile(caCrt)
		if !sameSet(cur, step.Trust) {
			if err := a.FS.WriteFile(caCrt, step.Trust, 0o644); err != nil {
				return err
			}
			did = append(did, a.FS.Path(caCrt))
		}
	}
	files, err := a.kubeconfigs()
	if err != nil {
		return err
	}
	for _, f := range files {
		changed, err := a.retrust(f, step.Trust)
		if err != nil {
			return err
		}
		if changed {
			did = append(did, a.FS.Path(f))
		}
	}
	for _, kind := range []string{"kubelet-client", "kubelet-server"} {
		issued, err := a.reissue(ctx, c, kind, signer)
		if err != nil {
			return err
		}
		if issued != "" {
			did = append(did, issued)
		}
	}
	if err := a.FS.MkdirAll(node.CARotationDir, 0o700); err != nil {
		return err
	}
	if err := a.FS.WriteFile(node.CARotationApplied, []byte(step.ID()+"\n"), 0o600); err != nil {
		return err
	}
	if len(did) == 0 {
		did = []string{"nothing to change"}
	}
	a.Logf("[ca-rotation] Applied the %s step (%s): %s; the kubelet restarts to load them", step.Phase, step.ID(), strings.Join(did, ", "))
	return nil
}

// controlPlane applies the step to this control plane's CA files and the
// certificates its CA signs, as the driver does on its own, with the new
// CA key from the rotation's Secret.
func (a *Agent) controlPlane(ctx context.Context, c kubernetes.Interface, step Step, signer *x509.Certificate) (int, error) {
	before := a.CP.Changed()
	var err error
	switch step.Phase {
	case PhaseTrust:
		err = a.CP.Trust(ctx, step)
	case PhaseSwitch:
		err = a.CP.Switch(ctx, step, func() ([]byte, error) { return a.newKey(ctx, c, signer) })
	default:
		err = a.CP.Drop(ctx, step)
	}
	return a.CP.Changed() - before, err
}

// newKey reads the new CA key the driver sealed, and opens it with this
// control plane's current CA key.
func (a *Agent) newKey(ctx context.Context, c kubernetes.Interface, signer *x509.Certificate) ([]byte, error) {
	s, err := c.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, KeySecret, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", metav1.NamespaceSystem, KeySecret, err)
	}
	keyPEM, err := a.FS.ReadFile(path.Join(a.CertDir, "ca.key"))
	if err != nil {
		return nil, err
	}
	cur, err := pki.ParseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	b, err := OpenKey(cur, signer, s.Data[keySecretField])
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", metav1.NamespaceSystem, KeySecret, err)
	}
	a.Logf("[ca-rotation] Read the new CA key from %s/%s", metav1.NamespaceSystem, KeySecret)
	return b, nil
}

// kubeconfigs lists the node's kubeconfig files (node paths).
func (a *Agent) kubeconfigs() ([]string, error) {
	matches, err := filepath.Glob(a.FS.Path(path.Join(node.KubernetesDir, "*.conf")))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		out = append(out, path.Join(node.KubernetesDir, filepath.Base(m)))
	}
	sort.Strings(out)
	return out, nil
}

// retrust sets the CA data of every cluster of a kubeconfig that embeds
// one; those that name a file (ca.crt) follow that file.
func (a *Agent) retrust(file string, trust []byte) (bool, error) {
	b, err := a.FS.ReadFile(file)
	if err != nil {
		return false, err
	}
	kc, err := clientcmd.Load(b)
	if err != nil {
		return false, fmt.Errorf("%s: %w", a.FS.Path(file), err)
	}
	changed := false
	for _, cl := range kc.Clusters {
		if len(cl.CertificateAuthorityData) > 0 && !sameSet(cl.CertificateAuthorityData, trust) {
			cl.CertificateAuthorityData = trust
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	out, err := clientcmd.Write(*kc)
	if err != nil {
		return false, err
	}
	return true, a.FS.WriteFile(file, out, 0o600)
}

// reissue asks the cluster for a new kubelet certificate of kind
// (kubelet-client or kubelet-server) when the current one was not signed
// by signer, as the kubelet's own rotation would, and stores it where the
// kubelet keeps it. It returns the file it wrote, or "".
func (a *Agent) reissue(ctx context.Context, c kubernetes.Interface, kind string, signer *x509.Certificate) (string, error) {
	dir := a.FS.Path(kubeletPKI)
	current := filepath.Join(dir, kind+"-current.pem")
	pair, err := tls509(current)
	if errors.Is(err, os.ErrNotExist) {
		if kind == "kubelet-client" {
			return a.reissueEmbedded(ctx, c, signer)
		}
		return "", nil // the kubelet signs its own serving certificate
	}
	if err != nil {
		return "", err
	}
	if signedBy(pair, signer) {
		return "", nil
	}
	certPEM, keyPEM, err := a.request(ctx, c, kind, pair, signer)
	if err != nil {
		return "", err
	}
	store, err := certificate.NewFileStore(kind, dir, dir, "", "")
	if err != nil {
		return "", err
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return "", err
	}
	return current, nil
}

// reissueEmbedded handles a kubelet.conf that still embeds the client
// certificate init made (the kubelet had not rotated it yet): the new one
// goes to the kubelet's rotating files, and kubelet.conf names them, as
// init's kubelet-finalize phase does.
func (a *Agent) reissueEmbedded(ctx context.Context, c kubernetes.Interface, signer *x509.Certificate) (string, error) {
	file := path.Join(node.KubernetesDir, kubeconfig.Kubelet)
	b, err := a.FS.ReadFile(file)
	if err != nil {
		return "", nil
	}
	kc, err := clientcmd.Load(b)
	if err != nil {
		return "", err
	}
	ctxt, ok := kc.Contexts[kc.CurrentContext]
	if !ok || kc.AuthInfos[ctxt.AuthInfo] == nil || len(kc.AuthInfos[ctxt.AuthInfo].ClientCertificateData) == 0 {
		return "", nil
	}
	user := kc.AuthInfos[ctxt.AuthInfo]
	certs, err := certutil.ParseCertsPEM(user.ClientCertificateData)
	if err != nil {
		return "", err
	}
	if signedBy(certs[0], signer) {
		return "", nil
	}
	certPEM, keyPEM, err := a.request(ctx, c, "kubelet-client", certs[0], signer)
	if err != nil {
		return "", err
	}
	dir := a.FS.Path(kubeletPKI)
	store, err := certificate.NewFileStore("kubelet-client", dir, dir, "", "")
	if err != nil {
		return "", err
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return "", err
	}
	current := store.CurrentPath()
	user.ClientCertificateData, user.ClientKeyData = nil, nil
	user.ClientCertificate, user.ClientKey = current, current
	out, err := clientcmd.Write(*kc)
	if err != nil {
		return "", err
	}
	return current, a.FS.WriteFile(file, out, 0o600)
}

// request creates a certificate signing request for the identity of old
// with a new key, and waits for the certificate: the kubelet's signers,
// approved as the kubelet's own requests are (the controller-manager's
// self-node-client approval, kubeboot's csr-approver for serving).
//
// A certificate signed by another CA than signer is refused: with several
// control planes, the controller-manager leading may run on one that has
// not switched yet; the agent asks again at its next pass.
func (a *Agent) request(ctx context.Context, c kubernetes.Interface, kind string, old, signer *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: old.Subject.CommonName, Organization: old.Subject.Organization}}
	signerName := certificatesv1.KubeAPIServerClientKubeletSignerName
	usages := certificate.DefaultKubeletClientGetUsages(key)
	if kind == "kubelet-server" {
		signerName = certificatesv1.KubeletServingSignerName
		usages = certificate.DefaultKubeletServingGetUsages(key)
		tmpl.DNSNames, tmpl.IPAddresses = old.DNSNames, old.IPAddresses
	}
	csrPEM, err := certutil.MakeCSRFromTemplate(key, tmpl)
	if err != nil {
		return nil, nil, err
	}
	name, uid, err := csr.RequestCertificateWithContext(ctx, c, csrPEM, "", signerName, nil, usages, key)
	if err != nil {
		return nil, nil, fmt.Errorf("requesting a new %s certificate: %w", kind, err)
	}
	a.Logf("[ca-rotation] Requested a new %s certificate signed by the new CA (%s)", kind, name)
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	certPEM, err = waitSigned(wait, c, name, uid)
	if err != nil {
		return nil, nil, fmt.Errorf("the %s certificate request %s: %w", kind, name, err)
	}
	issued, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("the %s certificate request %s: %w", kind, name, err)
	}
	if !signedBy(issued[0], signer) {
		return nil, nil, fmt.Errorf("the %s certificate of request %s is signed by %q, not by the new CA (serial %s): the controller-manager that signed it has not switched yet", kind, name, issued[0].Issuer.CommonName, signer.SerialNumber.Text(16))
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	return certPEM, keyPEM, err
}

// waitSigned waits for the certificate of a request; its own function so
// that a test can replace it.
var waitSigned = func(ctx context.Context, c kubernetes.Interface, name string, uid types.UID) ([]byte, error) {
	return csr.WaitForCertificate(ctx, c, name, uid)
}

// report annotates the node with the step it applied.
func (a *Agent) report(ctx context.Context, c kubernetes.Interface, id string) error {
	n, err := c.CoreV1().Nodes().Get(ctx, a.Node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", a.Node, err)
	}
	if n.Annotations[Annotation] == id {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{Annotation: id}}})
	if _, err := c.CoreV1().Nodes().Patch(ctx, a.Node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("reporting the CA rotation step on node %s: %w", a.Node, err)
	}
	return nil
}

// tls509 reads the leaf of a PEM file holding a certificate and its key.
func tls509(file string) (*x509.Certificate, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	certs, err := certutil.ParseCertsPEM(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return certs[0], nil
}
