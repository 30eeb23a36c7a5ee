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

	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/kubeconfig"
	"github.com/kubeboot/kubeboot/pkg/pki"
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
	root.WriteFile(path.Join(kubeconfig.Dir, kubeconfig.Kubelet), b, 0o600)

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
		kc, err := clientcmd.LoadFromFile(root.Path(path.Join(kubeconfig.Dir, kubeconfig.Kubelet)))
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range kc.Clusters {
			if !sameSet(cl.CertificateAuthorityData, s.Trust) {
				t.Errorf("%s: kubelet.conf trusts %s", s.Phase, cl.CertificateAuthorityData)
			}
		}
		if got, _ := root.ReadFile(AppliedFile); strings.TrimSpace(string(got)) != s.ID() {
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
