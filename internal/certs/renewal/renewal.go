// Package renewal renews a control plane's certificates by itself before
// they expire: every leaf certificate of the PKI and every kubeconfig that
// embeds one, as `kubeboot certs renew` would, when it enters the renewal
// window. The node daemon runs it as a component (cert-renewer); the
// components that read a renewed file only at their start are restarted
// by the daemon (component.Spec.RestartOn), the others reload it.
package renewal

import (
	"context"
	"crypto/x509"
	"fmt"
	"path"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// DefaultRenewBefore is how long before its expiry a certificate is
// renewed: 90 days, as k3s's and k0s's renewals do.
const DefaultRenewBefore = config.DefaultCertificateRenewBefore

// Bounds of the wait between two checks: the first certificate due for
// renewal sets it.
const (
	minCheck = time.Second
	maxCheck = time.Hour
)

// Window is how long before expiry a certificate of the given validity is
// renewed: renewBefore, or a third of the validity when that is shorter,
// so that a certificate valid for a day is renewed after 16 hours rather
// than at once and forever.
func Window(renewBefore, validity time.Duration) time.Duration {
	if validity > 0 && validity/3 < renewBefore {
		return validity / 3
	}
	return renewBefore
}

// Renewer renews the certificates of one node.
type Renewer struct {
	Gen *pki.Generator
	KW  *kubeconfig.Writer
	// RenewBefore is the renewal window (DefaultRenewBefore when zero).
	RenewBefore time.Duration
	// Validity is the validity of the renewed certificates, the cluster's
	// certificateValidityPeriod.
	Validity time.Duration
	Logf     func(format string, args ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// capped records the certificates already reported as capped by their
	// CA's expiry, so the log says it once.
	capped map[string]bool
}

// New is a renewer for the certificates in certDir (a node path) of fs,
// renewed with keys of alg and the given validity.
func New(fs fsys.FS, certDir, alg string, validity, renewBefore time.Duration, logf func(string, ...any)) *Renewer {
	gen, kw := Writers(fs, certDir, alg, validity)
	return &Renewer{Gen: gen, KW: kw, RenewBefore: renewBefore, Validity: validity, Logf: logf}
}

// Writers re-issue the certificates in certDir (a node path) of fs and
// the kubeconfigs, with keys of alg and the given validity, each with the
// identity of the one it replaces: what a node's daemon needs of the
// cluster's configuration to renew them.
func Writers(fs fsys.FS, certDir, alg string, validity time.Duration) (*pki.Generator, *kubeconfig.Writer) {
	c := &config.Config{}
	c.EnsureInit()
	c.Cluster.CertificatesDir = certDir
	c.Cluster.EncryptionAlgorithm = kubeadmv1.EncryptionAlgorithmType(alg)
	c.Cluster.CertificateValidityPeriod = &metav1.Duration{Duration: validity}
	gen := &pki.Generator{FS: fs, Cfg: c}
	return gen, &kubeconfig.Writer{FS: fs, Cfg: c, PKI: gen}
}

func (r *Renewer) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// item is one renewable certificate found on the node.
type item struct {
	name  string // as `certs renew` names it
	cert  *x509.Certificate
	ca    *pki.KeyPair
	renew func() error
}

// items lists the certificates present on this node that kubeboot can
// renew: those whose CA key is here. Missing files (a worker, external
// etcd) and kubeconfigs that name certificate files instead of embedding
// one (rotated by the kubelet) are not kubeboot's to renew.
func (r *Renewer) items() []item {
	var out []item
	for _, s := range pki.List(r.Gen.Cfg) {
		if s.IsCA() {
			continue
		}
		file := path.Join(r.Gen.Dir(), s.BaseName+".crt")
		if !fsys.Exists(r.Gen.FS, file) {
			continue
		}
		ca, err := r.Gen.CA(s.CAName)
		if err != nil || ca.Key == nil {
			continue
		}
		cert, err := loadCert(r.Gen.FS, file)
		if err != nil {
			r.Logf("[certs] reading %s: %v", r.Gen.FS.Path(file), err)
			continue
		}
		name := s.Name
		out = append(out, item{name: name, cert: cert, ca: ca, renew: func() error { return r.Gen.Renew(name) }})
	}
	for _, k := range kubeconfig.Renewable(r.Gen.Cfg) {
		file := path.Join(node.KubernetesDir, k.FileName)
		if !fsys.Exists(r.KW.FS, file) {
			continue
		}
		cert, err := r.KW.ClientCert(file)
		if err != nil {
			continue
		}
		ca, err := r.Gen.CA("ca")
		if err != nil || ca.Key == nil {
			continue
		}
		out = append(out, item{name: k.FileName, cert: cert, ca: ca, renew: func() error { return r.KW.Renew(k) }})
	}
	return out
}

// Once renews every certificate within its window and returns how long
// to wait until the next one is due (bounded to [1 s, 1 h]).
func (r *Renewer) Once() time.Duration {
	window := Window(r.RenewBefore, r.Validity)
	next := maxCheck
	// The CA is read anew at each pass: a rotation replaces it.
	r.Gen.Forget()
	for _, it := range r.items() {
		due := it.cert.NotAfter.Add(-window)
		now := r.now()
		if due.After(now) {
			next = min(next, due.Sub(now))
			continue
		}
		// A certificate clamped to its CA's expiry cannot be renewed any
		// further: renewing it again would loop. Its CA is the one to act on.
		if !it.cert.NotAfter.Before(it.ca.Cert.NotAfter) {
			if r.capped == nil {
				r.capped = map[string]bool{}
			}
			if !r.capped[it.name] {
				r.capped[it.name] = true
				r.Logf("[certs] %s expires with its CA %q at %s: it cannot be renewed further; rotate the CA", it.name, it.ca.Cert.Subject.CommonName, it.cert.NotAfter.UTC().Format(time.RFC3339))
			}
			continue
		}
		if err := it.renew(); err != nil {
			r.Logf("[certs] renewing %s (expires %s): %v", it.name, it.cert.NotAfter.UTC().Format(time.RFC3339), err)
			next = min(next, 10*time.Second)
			continue
		}
		r.Logf("[certs] Renewed %s, which was to expire at %s (renewal window %s)", it.name, it.cert.NotAfter.UTC().Format(time.RFC3339), window)
		// The next pass finds when the new certificate is due.
		next = minCheck
	}
	return max(next, minCheck)
}

// Run renews certificates as they become due until ctx ends.
func (r *Renewer) Run(ctx context.Context) error {
	r.Logf("[certs] Renewing the certificates in %s and the kubeconfigs in %s %s before they expire",
		r.Gen.FS.Path(r.Gen.Dir()), r.Gen.FS.Path(node.KubernetesDir), Window(r.RenewBefore, r.Validity))
	for {
		wait := r.Once()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func loadCert(fs fsys.FS, file string) (*x509.Certificate, error) {
	b, err := fs.ReadFile(file)
	if err != nil {
		return nil, err
	}
	certs, err := certutil.ParseCertsPEM(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fs.Path(file), err)
	}
	return certs[0], nil
}
