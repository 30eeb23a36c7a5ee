package pki

import (
	"crypto/x509"
	"fmt"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

// Status is what `certs check-expiration` shows for one certificate.
type Status struct {
	Name     string
	CAName   string
	NotAfter time.Time
	// External is set when the signing CA's key is absent, so kubeboot
	// cannot renew the certificate.
	External bool
	// Missing is set when the file does not exist.
	Missing bool
	Err     error
}

// Inspect reports the expiry of every CA and every leaf of the list.
func (g *Generator) Inspect() (cas, leaves []Status) {
	for _, s := range List(g.Cfg) {
		st := Status{Name: s.Name, CAName: s.CAName}
		certFile := g.certPath(s.BaseName)
		if !fsys.Exists(g.FS, certFile) {
			st.Missing = true
		} else if cert, err := g.loadCert(certFile); err != nil {
			st.Err = err
		} else {
			st.NotAfter = cert.NotAfter
		}
		if s.IsCA() {
			st.External = !fsys.Exists(g.FS, g.keyPath(s.BaseName))
			cas = append(cas, st)
			continue
		}
		if ca, err := g.CA(s.CAName); err == nil {
			st.External = ca.Key == nil
		}
		leaves = append(leaves, st)
	}
	return cas, leaves
}

// Renew re-issues a leaf certificate with a new key and a fresh validity,
// signed by its CA, keeping the subject, SANs and usages of the existing
// certificate (as kubeadm does, so a renewal never changes who a component
// is). CAs are not renewed: that is a CA rotation.
func (g *Generator) Renew(name string) error {
	s, ok := List(g.Cfg).Get(name)
	if !ok {
		return fmt.Errorf("unknown certificate %q (known: %v)", name, List(g.Cfg).Names())
	}
	if s.IsCA() {
		return fmt.Errorf("%s is a certificate authority: kubeboot renews the certificates it signs, not the CA itself", name)
	}
	ca, err := g.CA(s.CAName)
	if err != nil {
		return err
	}
	if ca.Key == nil {
		return fmt.Errorf("%s is signed by the external CA %s (its key is absent): renew it with that CA", name, s.CAName)
	}
	certFile := g.certPath(s.BaseName)
	old, err := g.loadCert(certFile)
	if err != nil {
		return err
	}
	kp, err := g.RenewFrom(ca, old)
	if err != nil {
		return fmt.Errorf("renewing %s: %w", name, err)
	}
	return WriteKeyPair(g.FS, g.Dir(), s.BaseName, kp)
}

// RenewFrom issues a new key pair that carries the identity of old.
func (g *Generator) RenewFrom(ca *KeyPair, old *x509.Certificate) (*KeyPair, error) {
	key, err := g.newKey()
	if err != nil {
		return nil, err
	}
	now := g.now()
	return NewSignedKeyPair(ca, key, old.Subject.CommonName, old.Subject.Organization,
		certutil.AltNames{DNSNames: old.DNSNames, IPs: old.IPAddresses}, old.ExtKeyUsage, now.Add(-Backdate), now.Add(g.validity()))
}

// NewClientKeyPair issues a client certificate signed by the named CA,
// valid for the configured certificate validity.
func (g *Generator) NewClientKeyPair(caName, cn string, orgs []string) (*KeyPair, error) {
	ca, err := g.CA(caName)
	if err != nil {
		return nil, err
	}
	if ca.Key == nil {
		return nil, fmt.Errorf("the %s key is absent (external CA): kubeboot cannot sign a certificate for %q", caName, cn)
	}
	key, err := g.newKey()
	if err != nil {
		return nil, err
	}
	now := g.now()
	return NewSignedKeyPair(ca, key, cn, orgs, certutil.AltNames{},
		[]x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, now.Add(-Backdate), now.Add(g.validity()))
}
