package pki

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pkiutil"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Backdate is subtracted from NotBefore so that nodes with slightly
// skewed clocks accept a fresh certificate (kubeadm uses the same 5 min).
const Backdate = 5 * time.Minute

// KeyPair is a certificate with its key. Key is nil for an external CA.
type KeyPair struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Generator creates and checks the certificates of one configuration.
type Generator struct {
	FS  fsys.FS
	Cfg *config.Config
	Out io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Keys, when set, supplies pre-generated keys.
	Keys *KeyPool

	cas map[string]*KeyPair
}

func (g *Generator) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Generator) newKey() (crypto.Signer, error) {
	return g.Keys.Get(g.Cfg.Cluster.EncryptionAlgorithm)
}

func (g *Generator) logf(format string, args ...any) {
	if g.Out != nil {
		fmt.Fprintf(g.Out, format+"\n", args...)
	}
}

// Dir is the certificates dir as a node path.
func (g *Generator) Dir() string { return g.Cfg.Cluster.CertificatesDir }

func (g *Generator) certPath(base string) string { return path.Join(g.Dir(), base+".crt") }
func (g *Generator) keyPath(base string) string  { return path.Join(g.Dir(), base+".key") }

// EnsureAll creates every missing certificate and the service-account key
// pair, reusing the ones on disk that fit the configuration and refusing
// the ones that do not.
func (g *Generator) EnsureAll(ctx context.Context) error {
	list := List(g.Cfg)
	if err := list.Validate(); err != nil {
		return err
	}
	g.logf("[certs] Using certificateDir folder %q", g.FS.Path(g.Dir()))
	for _, s := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := g.Ensure(s); err != nil {
			return err
		}
	}
	return g.EnsureServiceAccountKey()
}

// Ensure creates one certificate, or checks the one on disk.
func (g *Generator) Ensure(s Spec) error {
	if err := g.FS.MkdirAll(path.Dir(g.certPath(s.BaseName)), 0o700); err != nil {
		return err
	}
	if s.IsCA() {
		_, err := g.ensureCA(s)
		return err
	}
	return g.ensureLeaf(s)
}

// CA returns a CA of the list, loading it from disk on first use. Its Key
// is nil when the CA is external (certificate without key).
func (g *Generator) CA(name string) (*KeyPair, error) {
	if kp, ok := g.cas[name]; ok {
		return kp, nil
	}
	s, ok := List(g.Cfg).Get(name)
	if !ok || !s.IsCA() {
		return nil, fmt.Errorf("unknown certificate authority %q", name)
	}
	certFile, keyFile := g.certPath(s.BaseName), g.keyPath(s.BaseName)
	if !fsys.Exists(g.FS, certFile) {
		return nil, fmt.Errorf("the %s certificate %s does not exist: create it with `kubeboot init phase certs %s`", name, g.FS.Path(certFile), name)
	}
	kp := &KeyPair{}
	var err error
	if kp.Cert, err = g.loadCert(certFile); err != nil {
		return nil, err
	}
	if !kp.Cert.IsCA {
		return nil, fmt.Errorf("%s is not a CA certificate", g.FS.Path(certFile))
	}
	if err := g.checkPeriod(certFile, kp.Cert); err != nil {
		return nil, err
	}
	if fsys.Exists(g.FS, keyFile) {
		if kp.Key, err = g.loadKey(keyFile); err != nil {
			return nil, err
		}
		if err := MatchKey(kp.Cert, kp.Key); err != nil {
			return nil, fmt.Errorf("%s does not belong to %s: %w", g.FS.Path(keyFile), g.FS.Path(certFile), err)
		}
	}
	g.remember(name, kp)
	return kp, nil
}

// Forget drops the CAs loaded so far: the next use reads them from disk
// again (a CA rotation changes them under a long-running renewer).
func (g *Generator) Forget() { g.cas = nil }

// NextCA makes the CA that replaces the named one in a rotation: the same
// subject, a new key of the cluster's type, the CA validity from now. It
// is written nowhere.
func (g *Generator) NextCA(name string) (*KeyPair, error) {
	s, ok := List(g.Cfg).Get(name)
	if !ok || !s.IsCA() {
		return nil, fmt.Errorf("unknown certificate authority %q", name)
	}
	return g.newCA(s)
}

// newCA makes a self-signed CA of the list with a new key.
func (g *Generator) newCA(s Spec) (*KeyPair, error) {
	key, err := g.newKey()
	if err != nil {
		return nil, err
	}
	now := g.now()
	cert, err := NewSelfSignedCA(s.CommonName, key, now.Add(-Backdate), now.Add(g.caValidity()))
	if err != nil {
		return nil, fmt.Errorf("creating the %s certificate: %w", s.Name, err)
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

func (g *Generator) remember(name string, kp *KeyPair) {
	if g.cas == nil {
		g.cas = map[string]*KeyPair{}
	}
	g.cas[name] = kp
}

func (g *Generator) ensureCA(s Spec) (*KeyPair, error) {
	certFile, keyFile := g.certPath(s.BaseName), g.keyPath(s.BaseName)
	certExists, keyExists := fsys.Exists(g.FS, certFile), fsys.Exists(g.FS, keyFile)
	switch {
	case certExists:
		kp, err := g.CA(s.Name)
		if err != nil {
			return nil, err
		}
		if kp.Key == nil {
			g.logf("[certs] External CA mode: using the existing %q certificate without its key; every certificate it signs must already exist", s.BaseName)
		} else {
			g.logf("[certs] Using existing %s certificate authority", s.BaseName)
		}
		return kp, nil
	case keyExists:
		return nil, fmt.Errorf("found the key %s but not its certificate %s: restore the certificate or remove the key", g.FS.Path(keyFile), g.FS.Path(certFile))
	}
	g.logf("[certs] Generating %q certificate and key", s.BaseName)
	kp, err := g.newCA(s)
	if err != nil {
		return nil, err
	}
	if err := WriteKeyPair(g.FS, g.Dir(), s.BaseName, kp); err != nil {
		return nil, err
	}
	g.remember(s.Name, kp)
	return kp, nil
}

func (g *Generator) caValidity() time.Duration {
	if p := g.Cfg.Cluster.CACertificateValidityPeriod; p != nil {
		return p.Duration
	}
	return 10 * 365 * 24 * time.Hour
}

func (g *Generator) validity() time.Duration {
	if p := g.Cfg.Cluster.CertificateValidityPeriod; p != nil {
		return p.Duration
	}
	return 365 * 24 * time.Hour
}

// Template is what a leaf certificate must carry for a configuration.
func (g *Generator) Template(s Spec) (cn string, orgs []string, alt certutil.AltNames, err error) {
	if s.AltNames != nil {
		if alt, err = s.AltNames(g.Cfg); err != nil {
			return "", nil, alt, fmt.Errorf("%s certificate: %w", s.Name, err)
		}
	}
	return s.subjectCN(g.Cfg), s.Organization, alt, nil
}

func (g *Generator) ensureLeaf(s Spec) error {
	ca, err := g.CA(s.CAName)
	if err != nil {
		return err
	}
	cn, orgs, alt, err := g.Template(s)
	if err != nil {
		return err
	}
	certFile, keyFile := g.certPath(s.BaseName), g.keyPath(s.BaseName)
	certExists, keyExists := fsys.Exists(g.FS, certFile), fsys.Exists(g.FS, keyFile)
	switch {
	case certExists && keyExists:
		if err := g.checkLeaf(s, ca, cn, alt, certFile, keyFile); err != nil {
			return err
		}
		g.logf("[certs] Using existing %s certificate and key on disk", s.BaseName)
		return nil
	case certExists && ca.Key == nil:
		// External CA: the operator manages leaves, a key may live elsewhere.
		if err := g.checkLeaf(s, ca, cn, alt, certFile, ""); err != nil {
			return err
		}
		g.logf("[certs] Using existing %s certificate signed by the external %s", s.BaseName, s.CAName)
		return nil
	case certExists || keyExists:
		have, missing := certFile, keyFile
		if keyExists {
			have, missing = keyFile, certFile
		}
		return fmt.Errorf("found %s but not %s: restore the missing file or remove both to have them generated", g.FS.Path(have), g.FS.Path(missing))
	case ca.Key == nil:
		return fmt.Errorf("external CA mode: %s has no key, so %s (signed by it) must already exist: create it with your CA",
			g.FS.Path(g.certPath(List(g.Cfg).mustGet(s.CAName).BaseName)), g.FS.Path(certFile))
	}
	g.logf("[certs] Generating %q certificate and key", s.BaseName)
	key, err := g.newKey()
	if err != nil {
		return err
	}
	now := g.now()
	kp, err := NewSignedKeyPair(ca, key, cn, orgs, alt, s.Usages, now.Add(-Backdate), now.Add(g.validity()))
	if err != nil {
		return fmt.Errorf("creating the %s certificate: %w", s.Name, err)
	}
	if slices.Contains(s.Usages, x509.ExtKeyUsageServerAuth) {
		g.logf("[certs] %s serving cert is signed for DNS names %v and IPs %v", s.BaseName, alt.DNSNames, alt.IPs)
	}
	return WriteKeyPair(g.FS, g.Dir(), s.BaseName, kp)
}

func (l Certificates) mustGet(name string) Spec {
	s, _ := l.Get(name)
	return s
}

// checkLeaf refuses an existing certificate that does not fit: another CA,
// outside its validity, a different subject, missing SANs, or a key that
// is not its own. keyFile may be empty when the key is not ours to check.
func (g *Generator) checkLeaf(s Spec, ca *KeyPair, cn string, alt certutil.AltNames, certFile, keyFile string) error {
	file := g.FS.Path(certFile)
	cert, err := g.loadCert(certFile)
	if err != nil {
		return err
	}
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
		return fmt.Errorf("%s is not signed by the %s in %s: remove it to have it regenerated, or restore the matching CA",
			file, s.CAName, g.FS.Path(g.certPath(List(g.Cfg).mustGet(s.CAName).BaseName)))
	}
	if err := g.checkPeriod(certFile, cert); err != nil {
		return err
	}
	if cert.Subject.CommonName != cn {
		return fmt.Errorf("%s is for %q, the configuration needs %q: remove it to have it regenerated", file, cert.Subject.CommonName, cn)
	}
	if missing := missingSANs(cert, alt); len(missing) > 0 {
		return fmt.Errorf("%s lacks the SANs %v that the configuration needs: remove it (and its key) to have it regenerated with them", file, missing)
	}
	for _, u := range s.Usages {
		if !slices.Contains(cert.ExtKeyUsage, u) {
			return fmt.Errorf("%s lacks the extended key usage %s: remove it to have it regenerated", file, usageName(u))
		}
	}
	if keyFile == "" {
		return nil
	}
	key, err := g.loadKey(keyFile)
	if err != nil {
		return err
	}
	if err := MatchKey(cert, key); err != nil {
		return fmt.Errorf("%s does not belong to %s: %w", g.FS.Path(keyFile), file, err)
	}
	return nil
}

func (g *Generator) checkPeriod(certFile string, cert *x509.Certificate) error {
	now := g.now()
	switch {
	case now.After(cert.NotAfter):
		return fmt.Errorf("%s expired on %s: renew it with `kubeboot certs renew`", g.FS.Path(certFile), cert.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(cert.NotBefore):
		return fmt.Errorf("%s is not valid before %s: check the clock", g.FS.Path(certFile), cert.NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

func missingSANs(cert *x509.Certificate, alt certutil.AltNames) []string {
	var missing []string
	for _, d := range alt.DNSNames {
		if !slices.Contains(cert.DNSNames, d) {
			missing = append(missing, d)
		}
	}
	for _, ip := range alt.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			missing = append(missing, ip.String())
		}
	}
	return missing
}

func usageName(u x509.ExtKeyUsage) string {
	switch u {
	case x509.ExtKeyUsageServerAuth:
		return "ServerAuth"
	case x509.ExtKeyUsageClientAuth:
		return "ClientAuth"
	}
	return fmt.Sprint(int(u))
}

// EnsureServiceAccountKey creates sa.key/sa.pub, the key pair that signs
// service-account tokens, or checks that the existing pair matches.
func (g *Generator) EnsureServiceAccountKey() error {
	keyFile, pubFile := path.Join(g.Dir(), "sa.key"), path.Join(g.Dir(), "sa.pub")
	keyExists, pubExists := fsys.Exists(g.FS, keyFile), fsys.Exists(g.FS, pubFile)
	switch {
	case keyExists && pubExists:
		key, err := g.loadKey(keyFile)
		if err != nil {
			return err
		}
		b, err := g.FS.ReadFile(pubFile)
		if err != nil {
			return fmt.Errorf("reading %s: %w", g.FS.Path(pubFile), err)
		}
		pubs, err := keyutil.ParsePublicKeysPEM(b)
		if err != nil || len(pubs) == 0 {
			return fmt.Errorf("%s is not a PEM public key: %v", g.FS.Path(pubFile), err)
		}
		if !publicKeysEqual(pubs[0], key.Public()) {
			return fmt.Errorf("%s does not match %s: remove both to have them regenerated (existing service-account tokens will stop working)", g.FS.Path(pubFile), g.FS.Path(keyFile))
		}
		g.logf("[certs] Using the existing %q key", "sa")
		return nil
	case keyExists || pubExists:
		return fmt.Errorf("only one of %s and %s exists: restore the other or remove both", g.FS.Path(keyFile), g.FS.Path(pubFile))
	}
	g.logf("[certs] Generating %q key and public key", "sa")
	key, err := g.newKey()
	if err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	pubPEM, err := EncodePublicKeyPEM(key.Public())
	if err != nil {
		return err
	}
	if err := g.FS.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return g.FS.WriteFile(pubFile, pubPEM, 0o644)
}

func (g *Generator) loadCert(nodePath string) (*x509.Certificate, error) {
	b, err := g.FS.ReadFile(nodePath)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", g.FS.Path(nodePath), err)
	}
	certs, err := certutil.ParseCertsPEM(b)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("%s is unreadable as a PEM certificate: %v", g.FS.Path(nodePath), err)
	}
	return certs[0], nil
}

func (g *Generator) loadKey(nodePath string) (crypto.Signer, error) {
	b, err := g.FS.ReadFile(nodePath)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", g.FS.Path(nodePath), err)
	}
	k, err := ParseKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.FS.Path(nodePath), err)
	}
	return k, nil
}

// ParseKey reads a PEM private key (RSA or ECDSA).
func ParseKey(b []byte) (crypto.Signer, error) {
	k, err := keyutil.ParsePrivateKeyPEM(b)
	if err != nil {
		return nil, fmt.Errorf("unreadable as a PEM private key: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key of type %T cannot sign", k)
	}
	return s, nil
}

// MatchKey checks that key is the private key of cert.
func MatchKey(cert *x509.Certificate, key crypto.Signer) error {
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return errors.New("the private key does not match the certificate's public key")
	}
	return nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

// NewPrivateKey generates a key of the configured algorithm.
func NewPrivateKey(alg kubeadmv1.EncryptionAlgorithmType) (crypto.Signer, error) {
	if alg == "" {
		alg = kubeadmv1.EncryptionAlgorithmRSA2048
	}
	if !slices.Contains(config.EncryptionAlgorithms, string(alg)) {
		return nil, fmt.Errorf("unknown encryption algorithm %q (supported: %v)", alg, config.EncryptionAlgorithms)
	}
	return pkiutil.GeneratePrivateKey(kubeadmapi.EncryptionAlgorithmType(alg))
}

// NewSelfSignedCA creates a CA certificate with kubeadm's own function.
func NewSelfSignedCA(cn string, key crypto.Signer, notBefore, notAfter time.Time) (*x509.Certificate, error) {
	return pkiutil.NewSelfSignedCACert(&pkiutil.CertConfig{
		Config:   certutil.Config{CommonName: cn, NotBefore: notBefore.UTC()},
		NotAfter: notAfter.UTC(),
	}, key)
}

// NewSignedKeyPair creates a certificate for key signed by ca, with
// kubeadm's own function. Unlike kubeadm, it never outlives its CA: a
// client would reject the chain.
func NewSignedKeyPair(ca *KeyPair, key crypto.Signer, cn string, orgs []string, alt certutil.AltNames, usages []x509.ExtKeyUsage, notBefore, notAfter time.Time) (*KeyPair, error) {
	if ca.Key == nil {
		return nil, errors.New("the CA's key is not available")
	}
	if len(usages) == 0 {
		return nil, errors.New("a certificate needs at least one extended key usage")
	}
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	cert, err := pkiutil.NewSignedCert(&pkiutil.CertConfig{
		Config:   certutil.Config{CommonName: cn, Organization: orgs, AltNames: alt, Usages: usages, NotBefore: notBefore.UTC()},
		NotAfter: notAfter.UTC(),
	}, key, ca.Cert, ca.Key, false)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

// WriteKeyPair writes base.key (0600) then base.crt (0644) under dir.
func WriteKeyPair(f fsys.FS, dir, base string, kp *KeyPair) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(kp.Key)
	if err != nil {
		return err
	}
	if err := f.WriteFile(path.Join(dir, base+".key"), keyPEM, 0o600); err != nil {
		return err
	}
	return f.WriteFile(path.Join(dir, base+".crt"), EncodeCertPEM(kp.Cert), 0o644)
}

// EncodePublicKeyPEM encodes a public key as a PKIX "PUBLIC KEY" block.
func EncodePublicKeyPEM(pub crypto.PublicKey) ([]byte, error) { return pkiutil.EncodePublicKeyPEM(pub) }

// EncodeCertPEM encodes a certificate as a "CERTIFICATE" block.
func EncodeCertPEM(cert *x509.Certificate) []byte { return pkiutil.EncodeCertPEM(cert) }
