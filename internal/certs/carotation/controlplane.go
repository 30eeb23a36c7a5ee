package carotation

import (
	"bytes"
	"context"
	"crypto"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	cryptoutil "k8s.io/kubernetes/cmd/kubeadm/app/util/crypto"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/host/node"
)

// KeySecret is the Secret (in kube-system) that hands the new CA key to
// the other control planes while a rotation runs, encrypted, as kubeadm's
// upload-certs does, with kubeadm's AES-GCM, under a key derived from the
// current CA key: only a control plane, which holds that key, can read it.
// It lives as long as the rotation, readable only by the control-plane
// nodes' identities.
const KeySecret = "kubeboot-ca-rotation"

// keySecretField is the Secret's one field: the new ca.key, encrypted.
const keySecretField = "ca.key.encrypted"

// ControlPlane applies the steps of a rotation to one control plane's own
// files: ca.crt and ca.key, the signing CA kube-controller-manager signs
// with, and the certificates and kubeconfigs the CA signs. The driver
// applies each step to the control plane it runs on; every other control
// plane's ca-agent applies it to its own. Each method is idempotent.
type ControlPlane struct {
	Gen *pki.Generator
	KW  *kubeconfig.Writer
	// SigningCert points kube-controller-manager's
	// --cluster-signing-cert-file at a file (node path) and waits until it
	// runs with it again.
	SigningCert func(ctx context.Context, certFile string) error
	Logf        func(format string, args ...any)

	changed int
}

func (p *ControlPlane) fs() fsys.FS { return p.Gen.FS }

func (p *ControlPlane) file(base string) string { return path.Join(p.Gen.Dir(), base) }

// writeIfOther writes data to a file of the certificates dir unless it
// holds the same certificates already, and tells whether it wrote.
func (p *ControlPlane) writeIfOther(base string, data []byte) (bool, error) {
	cur, _ := p.fs().ReadFile(p.file(base))
	if sameSet(cur, data) {
		return false, nil
	}
	p.changed++
	return true, p.fs().WriteFile(p.file(base), data, 0o644)
}

// Changed counts the files the steps applied so far changed.
func (p *ControlPlane) Changed() int { return p.changed }

// Trust makes the control plane trust the step's CAs while the current CA
// (the step's signer) still signs. The controller-manager signs from the
// signing CA alone before ca.crt holds two.
func (p *ControlPlane) Trust(ctx context.Context, step Step) error {
	if _, err := p.writeIfOther(SignerFile, step.Signer); err != nil {
		return err
	}
	if err := p.SigningCert(ctx, p.file(SignerFile)); err != nil {
		return fmt.Errorf("pointing kube-controller-manager at %s: %w", p.fs().Path(p.file(SignerFile)), err)
	}
	// ca.crt's first certificate stays the one ca.key belongs to.
	wrote, err := p.writeIfOther("ca.crt", step.Trust)
	if err != nil {
		return err
	}
	if wrote {
		p.Logf("[certs/rotate-ca] kube-controller-manager signs with %s; %s trusts the current and the new CA", p.fs().Path(p.file(SignerFile)), p.fs().Path(p.file("ca.crt")))
	}
	return nil
}

// Switch makes the step's signer the CA that signs here, and re-issues
// every certificate and kubeconfig of this control plane the CA signs.
// newKey returns the signer's key (PEM) when ca.key is not it yet.
func (p *ControlPlane) Switch(ctx context.Context, step Step, newKey func() ([]byte, error)) error {
	_, signer, err := step.Parse()
	if err != nil {
		return err
	}
	// ca.key alone: after a stop half-way, it no longer matches ca.crt.
	curPEM, err := p.fs().ReadFile(p.file("ca.key"))
	if err != nil {
		return err
	}
	cur, err := pki.ParseKey(curPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", p.fs().Path(p.file("ca.key")), err)
	}
	if pki.MatchKey(signer, cur) != nil {
		keyPEM, err := newKey()
		if err != nil {
			return fmt.Errorf("the new CA key: %w", err)
		}
		key, err := pki.ParseKey(keyPEM)
		if err != nil {
			return fmt.Errorf("the new CA key: %w", err)
		}
		if pki.MatchKey(signer, key) != nil {
			return fmt.Errorf("the new CA key does not belong to the new CA %q", signer.Subject.CommonName)
		}
		// The key first, then the certificates with the new CA first: a
		// reader in between sees a mismatched pair and retries (the
		// controller-manager reloads the pair when a file changes).
		if err := p.fs().WriteFile(p.file("ca.key"), keyPEM, 0o600); err != nil {
			return err
		}
		p.changed++
	}
	if _, err := p.writeIfOther(SignerFile, step.Signer); err != nil {
		return err
	}
	if cur, _ := p.fs().ReadFile(p.file("ca.crt")); !bytes.Equal(cur, step.Trust) {
		if err := p.fs().WriteFile(p.file("ca.crt"), step.Trust, 0o644); err != nil {
			return err
		}
		p.changed++
		p.Logf("[certs/rotate-ca] The new CA signs from now on: %s and %s", p.fs().Path(p.file("ca.crt")), p.fs().Path(p.file("ca.key")))
	}
	p.Gen.Forget()
	ca, err := p.Gen.CA("ca")
	if err != nil {
		return err
	}
	if !ca.Cert.Equal(signer) {
		return fmt.Errorf("%s does not start with the new CA", p.fs().Path(p.file("ca.crt")))
	}
	for _, s := range pki.List(p.Gen.Cfg) {
		if s.CAName != "ca" || !fsys.Exists(p.fs(), p.file(s.BaseName+".crt")) {
			continue
		}
		b, err := p.fs().ReadFile(p.file(s.BaseName + ".crt"))
		if err != nil {
			return err
		}
		cert, err := certutil.ParseCertsPEM(b)
		if err != nil {
			return err
		}
		if signedBy(cert[0], ca.Cert) {
			continue
		}
		if err := p.Gen.Renew(s.Name); err != nil {
			return err
		}
		p.changed++
		p.Logf("[certs/rotate-ca] Re-issued %s with the new CA", p.fs().Path(p.file(s.BaseName+".crt")))
	}
	for _, k := range kubeconfig.Renewable(p.Gen.Cfg) {
		file := path.Join(node.KubernetesDir, k.FileName)
		if !fsys.Exists(p.fs(), file) {
			continue
		}
		cert, err := p.KW.ClientCert(file)
		if err != nil {
			continue // not one with an embedded certificate
		}
		if signedBy(cert, ca.Cert) {
			continue
		}
		if err := p.KW.Renew(k); err != nil {
			return err
		}
		p.changed++
		p.Logf("[certs/rotate-ca] Re-issued the client certificate of %s with the new CA", p.fs().Path(file))
	}
	return nil
}

// Drop makes the control plane trust the new CA alone, and the
// controller-manager sign from ca.crt again.
func (p *ControlPlane) Drop(ctx context.Context, step Step) error {
	wrote, err := p.writeIfOther("ca.crt", step.Trust)
	if err != nil {
		return err
	}
	if wrote {
		p.Logf("[certs/rotate-ca] %s trusts the new CA only", p.fs().Path(p.file("ca.crt")))
	}
	if err := p.SigningCert(ctx, p.file("ca.crt")); err != nil {
		return fmt.Errorf("pointing kube-controller-manager back at ca.crt: %w", err)
	}
	if err := os.Remove(p.fs().Path(p.file(SignerFile))); err == nil {
		p.changed++
		p.Logf("[certs/rotate-ca] kube-controller-manager signs with %s again", p.fs().Path(p.file("ca.crt")))
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// SealKey encrypts the new CA key (PEM) for the other control planes,
// under a key derived from the current CA key.
func SealKey(current crypto.Signer, next *x509.Certificate, nextKeyPEM []byte) ([]byte, error) {
	k, err := sealingKey(current, next)
	if err != nil {
		return nil, err
	}
	return cryptoutil.EncryptBytes(nextKeyPEM, k)
}

// OpenKey decrypts what SealKey made, with the current CA key.
func OpenKey(current crypto.Signer, next *x509.Certificate, sealed []byte) ([]byte, error) {
	k, err := sealingKey(current, next)
	if err != nil {
		return nil, err
	}
	b, err := cryptoutil.DecryptBytes(sealed, k)
	if err != nil {
		return nil, fmt.Errorf("it was not sealed with this control plane's CA key: %w", err)
	}
	return b, nil
}

// sealingKey is HKDF-SHA256 of the current CA key, salted with the new
// CA certificate: a new key for each rotation.
func sealingKey(current crypto.Signer, next *x509.Certificate) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(current)
	if err != nil {
		return nil, err
	}
	return hkdf.Key(sha256.New, der, next.Raw, "kubeboot ca-rotation: the new ca.key", 32)
}

// keySecret holds the sealed key.
func keySecret(sealed []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: KeySecret, Namespace: metav1.NamespaceSystem},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{keySecretField: sealed},
	}
}

// keyReader lets the control-plane nodes, by their kubelet identities,
// read the key Secret.
func keyReader(controlPlanes []string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	meta := metav1.ObjectMeta{Name: rbacName, Namespace: metav1.NamespaceSystem}
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{KeySecret}, Verbs: []string{"get"},
	}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: rbacName}}
	for _, n := range controlPlanes {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:node:" + n})
	}
	return role, binding
}
