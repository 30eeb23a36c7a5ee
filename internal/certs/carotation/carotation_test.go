package carotation

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/certs/renewal"
	"github.com/kubeboot/kubeboot/internal/host/node"
)

func newCA(t *testing.T, cn string) *pki.KeyPair {
	t.Helper()
	key, err := pki.NewPrivateKey("ECDSA-P256")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.NewSelfSignedCA(cn, key, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return &pki.KeyPair{Cert: cert, Key: key}
}

func leaf(t *testing.T, ca *pki.KeyPair, cn string, usage x509.ExtKeyUsage) []byte {
	t.Helper()
	key, _ := pki.NewPrivateKey("ECDSA-P256")
	kp, err := pki.NewSignedKeyPair(ca, key, cn, []string{"system:nodes"}, certutil.AltNames{DNSNames: []string{"w"}}, []x509.ExtKeyUsage{usage}, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := keyutil.MarshalPrivateKeyToPEM(kp.Key)
	return append(pki.EncodeCertPEM(kp.Cert), keyPEM...)
}

func TestStep(t *testing.T) {
	old, next := newCA(t, "kubernetes"), newCA(t, "kubernetes")
	trust := Step{Phase: PhaseTrust, Trust: Bundle(old.Cert, next.Cert), Signer: pki.EncodeCertPEM(old.Cert)}
	sw := Step{Phase: PhaseSwitch, Trust: Bundle(next.Cert, old.Cert), Signer: pki.EncodeCertPEM(next.Cert)}
	if trust.ID() == sw.ID() || !strings.HasPrefix(trust.ID(), "trust-") {
		t.Errorf("IDs %s and %s", trust.ID(), sw.ID())
	}
	if !sameSet(trust.Trust, sw.Trust) || sameSet(trust.Trust, pki.EncodeCertPEM(old.Cert)) {
		t.Error("sameSet does not compare as sets")
	}
	if got, err := stepOf(sw.configMap()); err != nil || got.ID() != sw.ID() {
		t.Errorf("round trip: %v %v", got, err)
	}
	bad := Step{Phase: PhaseDrop, Trust: pki.EncodeCertPEM(next.Cert), Signer: pki.EncodeCertPEM(old.Cert)}
	if _, err := stepOf(bad.configMap()); err == nil || !strings.Contains(err.Error(), "is not in its trust bundle") {
		t.Errorf("a signer outside the trust: %v", err)
	}
	if _, err := stepOf(&corev1.ConfigMap{Data: map[string]string{"phase": "later"}}); err == nil {
		t.Error("an unknown phase was accepted")
	}
}

// A worker (no ca.key) follows the trust step and then the switch step:
// ca.crt and the kubeconfigs' CA data take the bundle, the kubelet's
// certificates are asked anew of the new CA, each step is recorded and
// reported on the Node.
func TestAgentFollowsTheSteps(t *testing.T) {
	old, next := newCA(t, "kubernetes"), newCA(t, "kubernetes")
	root := fsys.NewRoot(t.TempDir())
	root.WriteFile("/etc/kubernetes/pki/ca.crt", pki.EncodeCertPEM(old.Cert), 0o644)
	pkiDir := root.Path(kubeletPKI)
	os.MkdirAll(pkiDir, 0o755)
	for kind, usage := range map[string]x509.ExtKeyUsage{"kubelet-client": x509.ExtKeyUsageClientAuth, "kubelet-server": x509.ExtKeyUsageServerAuth} {
		f := filepath.Join(pkiDir, kind+"-2026-01-01.pem")
		os.WriteFile(f, leaf(t, old, "system:node:w", usage), 0o600)
		os.Symlink(f, filepath.Join(pkiDir, kind+"-current.pem"))
	}
	current := filepath.Join(pkiDir, "kubelet-client-current.pem")
	kc := kubeconfig.WithCertFiles("https://10.0.0.1:6443", "kubernetes", pki.EncodeCertPEM(old.Cert), "system:node:w", current, current)
	b, _ := clientcmd.Write(*kc)
	root.WriteFile(path.Join(node.KubernetesDir, kubeconfig.Kubelet), b, 0o600)

	client := fake.NewSimpleClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w"}})
	n := 0
	client.PrependReactor("create", "certificatesigningrequests", func(action k8stesting.Action) (bool, runtime.Object, error) {
		obj := action.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		if obj.Name == "" {
			n++
			obj.Name = fmt.Sprintf("%s%d", obj.GenerateName, n)
		}
		return false, nil, nil
	})
	signer := old
	waitSigned = func(ctx context.Context, c kubernetes.Interface, name string, _ types.UID) ([]byte, error) {
		req, err := c.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		csr, err := x509.ParseCertificateRequest(pemBlock(t, req.Spec.Request))
		if err != nil {
			return nil, err
		}
		usage := x509.ExtKeyUsageClientAuth
		if len(csr.DNSNames) > 0 {
			usage = x509.ExtKeyUsageServerAuth
		}
		kp, err := pki.NewSignedKeyPair(signer, publicOnly{csr.PublicKey}, csr.Subject.CommonName, csr.Subject.Organization, certutil.AltNames{DNSNames: csr.DNSNames}, []x509.ExtKeyUsage{usage}, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
		if err != nil {
			return nil, err
		}
		return pki.EncodeCertPEM(kp.Cert), nil
	}
	a := &Agent{FS: root, Node: "w", CertDir: "/etc/kubernetes/pki", Logf: t.Logf, Client: client}
	publish := func(s Step) {
		cms := client.CoreV1().ConfigMaps(Namespace)
		cms.Delete(context.Background(), ConfigMapName, metav1.DeleteOptions{})
		if _, err := cms.Create(context.Background(), s.configMap(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s Step) {
		t.Helper()
		if err := a.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ca, _ := root.ReadFile("/etc/kubernetes/pki/ca.crt"); !sameSet(ca, s.Trust) {
			t.Errorf("%s: ca.crt holds %s", s.Phase, ca)
		}
		kc, err := clientcmd.LoadFromFile(root.Path(path.Join(node.KubernetesDir, kubeconfig.Kubelet)))
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range kc.Clusters {
			if !sameSet(cl.CertificateAuthorityData, s.Trust) {
				t.Errorf("%s: kubelet.conf trusts %s", s.Phase, cl.CertificateAuthorityData)
			}
		}
		if got, _ := root.ReadFile(node.CARotationApplied); strings.TrimSpace(string(got)) != s.ID() {
			t.Errorf("%s: applied %q", s.Phase, got)
		}
		n, _ := client.CoreV1().Nodes().Get(context.Background(), "w", metav1.GetOptions{})
		if n.Annotations[Annotation] != s.ID() {
			t.Errorf("%s: the node reports %q", s.Phase, n.Annotations[Annotation])
		}
		for _, kind := range []string{"kubelet-client", "kubelet-server"} {
			c, err := tls509(filepath.Join(pkiDir, kind+"-current.pem"))
			if err != nil {
				t.Fatal(err)
			}
			_, sig, _ := s.Parse()
			if !signedBy(c, sig) {
				t.Errorf("%s: %s is not signed by the step's signer", s.Phase, kind)
			}
		}
	}
	trust := Step{Phase: PhaseTrust, Trust: Bundle(old.Cert, next.Cert), Signer: pki.EncodeCertPEM(old.Cert)}
	publish(trust)
	check(trust)
	if n := len(csrs(t, client)); n != 0 {
		t.Errorf("the trust step asked for %d certificates", n)
	}
	signer = next
	sw := Step{Phase: PhaseSwitch, Trust: Bundle(next.Cert, old.Cert), Signer: pki.EncodeCertPEM(next.Cert)}
	publish(sw)
	check(sw)
	if n := len(csrs(t, client)); n != 2 {
		t.Errorf("the switch step asked for %d certificates, want 2 (client and serving)", n)
	}
	// Applied already: nothing is asked again.
	check(sw)
	if n := len(csrs(t, client)); n != 2 {
		t.Errorf("applying the switch step again asked for %d certificates", n-2)
	}
	drop := Step{Phase: PhaseDrop, Trust: Bundle(next.Cert), Signer: pki.EncodeCertPEM(next.Cert)}
	publish(drop)
	check(drop)
	if ca, _ := root.ReadFile("/etc/kubernetes/pki/ca.crt"); !bytes.Equal(ca, pki.EncodeCertPEM(next.Cert)) {
		t.Errorf("after the drop ca.crt holds %s", ca)
	}
}

// publicOnly is the public key of a request, as a signer that cannot sign:
// the certificate is made for it, not with it.
type publicOnly struct{ crypto.PublicKey }

func (p publicOnly) Public() crypto.PublicKey { return p.PublicKey }
func (publicOnly) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("no private key")
}

func pemBlock(t *testing.T, b []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("no PEM block in %q", b)
	}
	return block.Bytes
}

func csrs(t *testing.T, c kubernetes.Interface) []string {
	t.Helper()
	l, err := c.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range l.Items {
		out = append(out, r.Name)
	}
	return out
}

// A second control plane follows the steps with its own CA files: it
// trusts both CAs while the controller-manager signs with the old one
// alone, takes the new CA key from the sealed Secret at the switch and
// re-issues its certificates and kubeconfigs, then trusts the new CA
// alone. A Secret sealed under another CA key is refused.
func TestControlPlaneAgentFollowsTheSteps(t *testing.T) {
	old, next := newCA(t, "kubernetes"), newCA(t, "kubernetes")
	root := fsys.NewRoot(t.TempDir())
	const dir = "/etc/kubernetes/pki"
	if err := pki.WriteKeyPair(root, dir, "ca", old); err != nil {
		t.Fatal(err)
	}
	gen, kw := renewal.Writers(root, dir, "ECDSA-P256", time.Hour)
	key, _ := pki.NewPrivateKey("ECDSA-P256")
	apiserver, err := pki.NewSignedKeyPair(old, key, "kube-apiserver", nil, certutil.AltNames{DNSNames: []string{"cp2"}}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteKeyPair(root, dir, "apiserver", apiserver); err != nil {
		t.Fatal(err)
	}
	key, _ = pki.NewPrivateKey("ECDSA-P256")
	admin, _ := pki.NewSignedKeyPair(old, key, "kubernetes-admin", []string{"kubeadm:cluster-admins"}, certutil.AltNames{}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	kc, err := kubeconfig.Build("https://10.0.0.2:6443", "kubernetes", old.Cert, "kubernetes-admin", admin)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := clientcmd.Write(*kc)
	root.WriteFile(node.AdminKubeconfig, b, 0o600)

	nextKeyPEM, _ := keyutil.MarshalPrivateKeyToPEM(next.Key)
	sealed, err := SealKey(old.Key, next.Cert, nextKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewSimpleClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp2"}}, keySecret(sealed))
	var signing []string
	a := &Agent{FS: root, Node: "cp2", CertDir: dir, Logf: t.Logf, Client: client, CP: &ControlPlane{Gen: gen, KW: kw, Logf: t.Logf,
		SigningCert: func(_ context.Context, f string) error { signing = append(signing, path.Base(f)); return nil }}}
	apply := func(s Step) {
		t.Helper()
		cms := client.CoreV1().ConfigMaps(Namespace)
		cms.Delete(context.Background(), ConfigMapName, metav1.DeleteOptions{})
		if _, err := cms.Create(context.Background(), s.configMap(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := a.Once(context.Background()); err != nil {
			t.Fatalf("%s: %v", s.Phase, err)
		}
		if ca, _ := root.ReadFile(dir + "/ca.crt"); !bytes.Equal(ca, s.Trust) {
			t.Errorf("%s: ca.crt is not the step's bundle, in its order", s.Phase)
		}
		if got, _ := root.ReadFile(node.CARotationApplied); strings.TrimSpace(string(got)) != s.ID() {
			t.Errorf("%s: applied %q", s.Phase, got)
		}
	}
	caKey := func() crypto.Signer {
		b, _ := root.ReadFile(dir + "/ca.key")
		k, err := pki.ParseKey(b)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	cert := func(base string) *x509.Certificate {
		c, err := tls509(root.Path(path.Join(dir, base)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	trust := Step{Phase: PhaseTrust, Trust: Bundle(old.Cert, next.Cert), Signer: pki.EncodeCertPEM(old.Cert)}
	apply(trust)
	if !cert(SignerFile).Equal(old.Cert) || pki.MatchKey(old.Cert, caKey()) != nil || !signedBy(cert("apiserver.crt"), old.Cert) {
		t.Error("trust: the old CA must still sign, alone in ca-signer.crt")
	}
	if fmt.Sprint(signing) != "[ca-signer.crt]" {
		t.Errorf("trust: the controller-manager was pointed at %v", signing)
	}

	// A Secret sealed under another CA key: refused, nothing switched.
	other, _ := SealKey(newCA(t, "other").Key, next.Cert, nextKeyPEM)
	client.CoreV1().Secrets(metav1.NamespaceSystem).Update(context.Background(), keySecret(other), metav1.UpdateOptions{})
	sw := Step{Phase: PhaseSwitch, Trust: Bundle(next.Cert, old.Cert), Signer: pki.EncodeCertPEM(next.Cert)}
	client.CoreV1().ConfigMaps(Namespace).Update(context.Background(), sw.configMap(), metav1.UpdateOptions{})
	if err := a.Once(context.Background()); err == nil || !strings.Contains(err.Error(), "not sealed with this control plane's CA key") {
		t.Errorf("a key sealed under another CA key: %v", err)
	}
	if pki.MatchKey(old.Cert, caKey()) != nil {
		t.Error("ca.key changed after a refused key")
	}
	client.CoreV1().Secrets(metav1.NamespaceSystem).Update(context.Background(), keySecret(sealed), metav1.UpdateOptions{})

	apply(sw)
	if pki.MatchKey(next.Cert, caKey()) != nil || !cert(SignerFile).Equal(next.Cert) {
		t.Error("switch: the new CA does not sign")
	}
	if !signedBy(cert("apiserver.crt"), next.Cert) {
		t.Error("switch: apiserver.crt was not re-issued by the new CA")
	}
	if c := cert("apiserver.crt"); c.Subject.CommonName != "kube-apiserver" || fmt.Sprint(c.DNSNames) != "[cp2]" {
		t.Errorf("switch: apiserver.crt lost its identity: %s %v", c.Subject.CommonName, c.DNSNames)
	}
	if c, err := kw.ClientCert(node.AdminKubeconfig); err != nil || !signedBy(c, next.Cert) {
		t.Errorf("switch: admin.conf's certificate was not re-issued by the new CA (%v)", err)
	}

	drop := Step{Phase: PhaseDrop, Trust: Bundle(next.Cert), Signer: pki.EncodeCertPEM(next.Cert)}
	apply(drop)
	if fsys.Exists(root, path.Join(dir, SignerFile)) {
		t.Error("drop: ca-signer.crt is left")
	}
	if fmt.Sprint(signing) != "[ca-signer.crt ca.crt]" {
		t.Errorf("the controller-manager was pointed at %v", signing)
	}
}
