package pki

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/pkg/config"
)

func testConfig(t testing.TB, mutate ...func(*config.Config)) *config.Config {
	t.Helper()
	c := &config.Config{}
	c.EnsureInit()
	c.Init.LocalAPIEndpoint.AdvertiseAddress = "10.10.0.2"
	c.Cluster.ControlPlaneEndpoint = "cp.example.com:6443"
	c.Cluster.APIServer.CertSANs = []string{"extra.example.com", "10.20.0.1"}
	c.Cluster.EncryptionAlgorithm = kubeadmv1.EncryptionAlgorithmECDSAP256
	for _, m := range mutate {
		m(c)
	}
	if err := c.DefaultInit(config.Host{Hostname: "node-a"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func generate(t *testing.T, root string, c *config.Config) *Generator {
	t.Helper()
	g := &Generator{FS: fsys.NewRoot(root), Cfg: c}
	if err := g.EnsureAll(context.Background()); err != nil {
		t.Fatalf("EnsureAll: %v", err)
	}
	return g
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	g := &Generator{FS: fsys.NewRoot("/")}
	c, err := g.loadCert(file)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestListOrderCAsFirst(t *testing.T) {
	for _, external := range []bool{false, true} {
		c := testConfig(t, func(c *config.Config) {
			if external {
				c.Cluster.Etcd.External = &kubeadmv1.ExternalEtcd{Endpoints: []string{"http://10.0.0.9:2379"}}
			}
		})
		l := List(c)
		if err := l.Validate(); err != nil {
			t.Fatal(err)
		}
		want := []string{"ca", "apiserver", "apiserver-kubelet-client", "front-proxy-ca", "front-proxy-client", "etcd-ca", "etcd-server", "etcd-peer", "etcd-healthcheck-client", "apiserver-etcd-client"}
		if external {
			want = want[:5]
		}
		if got := l.Names(); !slices.Equal(got, want) {
			t.Errorf("external=%v: list %v, want %v", external, got, want)
		}
	}
	bad := Certificates{{Name: "leaf", CAName: "ca"}, {Name: "ca"}}
	if err := bad.Validate(); err == nil {
		t.Error("a leaf before its CA was accepted")
	}
}

func TestGenerateLayoutSubjectsAndChains(t *testing.T) {
	root := t.TempDir()
	c := testConfig(t)
	generate(t, root, c)
	pkiDir := filepath.Join(root, "etc/kubernetes/pki")

	type want struct {
		cn     string
		ca     string
		usages []x509.ExtKeyUsage
		dns    []string
		ips    []string
	}
	cases := map[string]want{
		"ca":                       {cn: "kubernetes"},
		"apiserver":                {cn: "kube-apiserver", ca: "ca", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, dns: []string{"node-a", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost", "cp.example.com", "extra.example.com"}, ips: []string{"10.96.0.1", "10.10.0.2", "127.0.0.1", "::1", "10.20.0.1"}},
		"apiserver-kubelet-client": {cn: "kube-apiserver-kubelet-client", ca: "ca", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		"front-proxy-ca":           {cn: "front-proxy-ca"},
		"front-proxy-client":       {cn: "front-proxy-client", ca: "front-proxy-ca", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		"etcd/ca":                  {cn: "etcd-ca"},
		"etcd/server":              {cn: "node-a", ca: "etcd/ca", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, dns: []string{"node-a", "localhost"}, ips: []string{"10.10.0.2", "127.0.0.1", "::1"}},
		"etcd/peer":                {cn: "node-a", ca: "etcd/ca", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, dns: []string{"node-a", "localhost"}, ips: []string{"10.10.0.2", "127.0.0.1", "::1"}},
		"etcd/healthcheck-client":  {cn: "kube-etcd-healthcheck-client", ca: "etcd/ca", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		"apiserver-etcd-client":    {cn: "kube-apiserver-etcd-client", ca: "etcd/ca", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	}
	now := time.Now()
	for base, w := range cases {
		t.Run(base, func(t *testing.T) {
			crt := filepath.Join(pkiDir, base+".crt")
			key := filepath.Join(pkiDir, base+".key")
			cert := readCert(t, crt)
			if cert.Subject.CommonName != w.cn {
				t.Errorf("CN %q, want %q", cert.Subject.CommonName, w.cn)
			}
			if _, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok {
				t.Errorf("public key %T, want ECDSA", cert.PublicKey)
			}
			assertMode(t, crt, 0o644)
			assertMode(t, key, 0o600)
			if w.ca == "" {
				if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
					t.Errorf("CA lacks IsCA/CertSign")
				}
				if d := cert.NotAfter.Sub(now); d < 10*365*24*time.Hour-time.Hour {
					t.Errorf("CA valid for %v, want 10 years", d)
				}
				return
			}
			ca := readCert(t, filepath.Join(pkiDir, w.ca+".crt"))
			pool := x509.NewCertPool()
			pool.AddCert(ca)
			if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: w.usages, CurrentTime: now}); err != nil {
				t.Errorf("chain does not verify: %v", err)
			}
			if !slices.Equal(cert.ExtKeyUsage, w.usages) {
				t.Errorf("usages %v, want %v", cert.ExtKeyUsage, w.usages)
			}
			// Sorted, as kubeadm's pkiutil writes them.
			if want := slices.Sorted(slices.Values(w.dns)); !slices.Equal(cert.DNSNames, want) {
				t.Errorf("DNS SANs %v, want %v", cert.DNSNames, want)
			}
			var ips []string
			for _, ip := range cert.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !slices.Equal(ips, w.ips) {
				t.Errorf("IP SANs %v, want %v", ips, w.ips)
			}
			if d := cert.NotAfter.Sub(now); d < 365*24*time.Hour-time.Hour || d > 365*24*time.Hour+time.Hour {
				t.Errorf("valid for %v, want one year", d)
			}
			if now.Sub(cert.NotBefore) < 4*time.Minute {
				t.Errorf("NotBefore %v is not backdated", cert.NotBefore)
			}
			if path, err := exec.LookPath("openssl"); err == nil {
				out, err := exec.Command(path, "verify", "-CAfile", filepath.Join(pkiDir, w.ca+".crt"), crt).CombinedOutput()
				if err != nil || !strings.Contains(string(out), ": OK") {
					t.Errorf("openssl verify: %v: %s", err, out)
				}
			} else if !testing.Short() {
				t.Errorf("openssl not installed; .ci/run installs it")
			}
		})
	}
	assertMode(t, filepath.Join(pkiDir, "sa.key"), 0o600)
	assertMode(t, filepath.Join(pkiDir, "sa.pub"), 0o644)
	assertMode(t, pkiDir, 0o700|os.ModeDir)
	assertMode(t, filepath.Join(pkiDir, "etcd"), 0o700|os.ModeDir)
}

func assertMode(t *testing.T, p string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != want {
		t.Errorf("%s: mode %v, want %v", p, st.Mode(), want)
	}
}

func TestAlgorithmsAndValidity(t *testing.T) {
	cases := []struct {
		alg   kubeadmv1.EncryptionAlgorithmType
		check func(any) bool
	}{
		{kubeadmv1.EncryptionAlgorithmRSA2048, func(k any) bool { r, ok := k.(*rsa.PublicKey); return ok && r.N.BitLen() == 2048 }},
		{kubeadmv1.EncryptionAlgorithmRSA3072, func(k any) bool { r, ok := k.(*rsa.PublicKey); return ok && r.N.BitLen() == 3072 }},
		{kubeadmv1.EncryptionAlgorithmRSA4096, func(k any) bool { r, ok := k.(*rsa.PublicKey); return ok && r.N.BitLen() == 4096 }},
		{kubeadmv1.EncryptionAlgorithmECDSAP256, func(k any) bool { e, ok := k.(*ecdsa.PublicKey); return ok && e.Curve == elliptic.P256() }},
		{kubeadmv1.EncryptionAlgorithmECDSAP384, func(k any) bool { e, ok := k.(*ecdsa.PublicKey); return ok && e.Curve == elliptic.P384() }},
	}
	for _, tc := range cases {
		t.Run(string(tc.alg), func(t *testing.T) {
			if testing.Short() && tc.alg == kubeadmv1.EncryptionAlgorithmRSA4096 {
				t.Skip("RSA-4096 generation is slow; runs without -short")
			}
			c := testConfig(t, func(c *config.Config) {
				c.Cluster.EncryptionAlgorithm = tc.alg
				c.Cluster.CertificateValidityPeriod = &metav1.Duration{Duration: 48 * time.Hour}
				c.Cluster.CACertificateValidityPeriod = &metav1.Duration{Duration: 72 * time.Hour}
				c.Cluster.Etcd.External = &kubeadmv1.ExternalEtcd{Endpoints: []string{"http://10.0.0.9:2379"}}
			})
			root := t.TempDir()
			generate(t, root, c)
			ca := readCert(t, filepath.Join(root, "etc/kubernetes/pki/ca.crt"))
			leaf := readCert(t, filepath.Join(root, "etc/kubernetes/pki/apiserver.crt"))
			if !tc.check(ca.PublicKey) || !tc.check(leaf.PublicKey) {
				t.Errorf("keys %T/%T do not match %s", ca.PublicKey, leaf.PublicKey, tc.alg)
			}
			if d := ca.NotAfter.Sub(ca.NotBefore) - Backdate; d != 72*time.Hour {
				t.Errorf("CA validity %v, want 72h", d)
			}
			if d := leaf.NotAfter.Sub(leaf.NotBefore) - Backdate; d != 48*time.Hour {
				t.Errorf("leaf validity %v, want 48h", d)
			}
		})
	}
}

func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			m[p] = string(b)
		}
		return nil
	})
	return m
}

func TestIdempotentRerun(t *testing.T) {
	root := t.TempDir()
	c := testConfig(t)
	generate(t, root, c)
	before := snapshot(t, root)
	generate(t, root, testConfig(t))
	after := snapshot(t, root)
	if len(before) != len(after) {
		t.Fatalf("re-run changed the file set: %d -> %d", len(before), len(after))
	}
	for p, b := range before {
		if after[p] != b {
			t.Errorf("re-run rewrote %s", p)
		}
	}
}

func TestMismatchDetection(t *testing.T) {
	cases := []struct {
		name    string
		break_  func(t *testing.T, pkiDir string)
		mutate  func(*config.Config)
		wantErr string
	}{
		{name: "new SAN needed", mutate: func(c *config.Config) {
			c.Cluster.APIServer.CertSANs = append(c.Cluster.APIServer.CertSANs, "new.example.com")
		}, wantErr: "apiserver.crt lacks the SANs [new.example.com]"},
		{name: "other node name", mutate: func(c *config.Config) { c.Init.NodeRegistration.Name = "node-b" }, wantErr: "apiserver.crt lacks the SANs [node-b]"},
		{name: "unreadable cert", break_: func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "apiserver.crt"), []byte("garbage"), 0o644)
		}, wantErr: "apiserver.crt is unreadable"},
		{name: "unreadable key", break_: func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "front-proxy-client.key"), []byte("garbage"), 0o600)
		}, wantErr: "front-proxy-client.key: unreadable"},
		{name: "key of another cert", break_: func(t *testing.T, d string) {
			b, _ := os.ReadFile(filepath.Join(d, "apiserver-etcd-client.key"))
			os.WriteFile(filepath.Join(d, "etcd/healthcheck-client.key"), b, 0o600)
		}, wantErr: "healthcheck-client.key does not belong to"},
		{name: "wrong CA", break_: func(t *testing.T, d string) {
			// A front-proxy certificate where the apiserver's should be.
			for _, ext := range []string{".crt", ".key"} {
				b, _ := os.ReadFile(filepath.Join(d, "front-proxy-client"+ext))
				os.WriteFile(filepath.Join(d, "apiserver-kubelet-client"+ext), b, 0o600)
			}
		}, wantErr: "apiserver-kubelet-client.crt is not signed by the ca"},
		{name: "missing key", break_: func(t *testing.T, d string) { os.Remove(filepath.Join(d, "apiserver.key")) }, wantErr: "but not"},
		{name: "sa mismatch", break_: func(t *testing.T, d string) {
			k, _ := NewPrivateKey(kubeadmv1.EncryptionAlgorithmECDSAP256)
			pub, _ := EncodePublicKeyPEM(k.Public())
			os.WriteFile(filepath.Join(d, "sa.pub"), pub, 0o644)
		}, wantErr: "sa.pub does not match"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			generate(t, root, testConfig(t))
			pkiDir := filepath.Join(root, "etc/kubernetes/pki")
			if tc.break_ != nil {
				tc.break_(t, pkiDir)
			}
			var mut []func(*config.Config)
			if tc.mutate != nil {
				mut = append(mut, tc.mutate)
			}
			before := snapshot(t, root)
			g := &Generator{FS: fsys.NewRoot(root), Cfg: testConfig(t, mut...)}
			err := g.EnsureAll(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
			if after := snapshot(t, root); len(after) != len(before) {
				t.Errorf("a failed run changed the file set")
			} else {
				for p, b := range before {
					if after[p] != b {
						t.Errorf("a failed run overwrote %s", p)
					}
				}
			}
		})
	}
}

func TestExpiredCertificateIsRefused(t *testing.T) {
	root := t.TempDir()
	g := generate(t, root, testConfig(t))
	_ = g
	later := &Generator{FS: fsys.NewRoot(root), Cfg: testConfig(t), Now: func() time.Time { return time.Now().Add(400 * 24 * time.Hour) }}
	err := later.EnsureAll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "expired on") {
		t.Fatalf("got %v, want expired", err)
	}
}

func TestExternalCA(t *testing.T) {
	root := t.TempDir()
	generate(t, root, testConfig(t))
	pkiDir := filepath.Join(root, "etc/kubernetes/pki")
	if err := os.Remove(filepath.Join(pkiDir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	// Every leaf present: accepted, nothing written.
	before := snapshot(t, root)
	generate(t, root, testConfig(t))
	if len(snapshot(t, root)) != len(before) {
		t.Fatal("external CA run wrote files")
	}
	// A leaf missing: refused, since kubeboot cannot sign it.
	os.Remove(filepath.Join(pkiDir, "apiserver.crt"))
	os.Remove(filepath.Join(pkiDir, "apiserver.key"))
	g := &Generator{FS: fsys.NewRoot(root), Cfg: testConfig(t)}
	err := g.EnsureAll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "external CA mode") || !strings.Contains(err.Error(), "apiserver.crt") {
		t.Fatalf("got %v", err)
	}
	// Renewal under an external CA is refused too.
	if err := g.Renew("apiserver-kubelet-client"); err == nil || !strings.Contains(err.Error(), "external CA") {
		t.Fatalf("renew: got %v", err)
	}
}

func TestRenewKeepsIdentity(t *testing.T) {
	root := t.TempDir()
	c := testConfig(t)
	g := generate(t, root, c)
	crt := filepath.Join(root, "etc/kubernetes/pki/apiserver.crt")
	old := readCert(t, crt)
	later := &Generator{FS: fsys.NewRoot(root), Cfg: c, Now: func() time.Time { return time.Now().Add(24 * time.Hour) }}
	if err := later.Renew("apiserver"); err != nil {
		t.Fatal(err)
	}
	renewed := readCert(t, crt)
	if !renewed.NotAfter.After(old.NotAfter) || renewed.SerialNumber.Cmp(old.SerialNumber) == 0 {
		t.Errorf("not renewed: %v -> %v", old.NotAfter, renewed.NotAfter)
	}
	if !slices.Equal(renewed.DNSNames, old.DNSNames) || renewed.Subject.CommonName != old.Subject.CommonName {
		t.Errorf("identity changed")
	}
	// The renewed pair is accepted by a re-run.
	if err := later.EnsureAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := g.Renew("ca"); err == nil {
		t.Error("renewing a CA was accepted")
	}
	if err := g.Renew("nope"); err == nil || !strings.Contains(err.Error(), "unknown certificate") {
		t.Errorf("got %v", err)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	root := t.TempDir()
	var out strings.Builder
	g := &Generator{FS: fsys.NewDryRun(fsys.NewRoot(root), &out), Cfg: testConfig(t), Out: &out}
	if err := g.EnsureAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(snapshot(t, root)); n != 0 {
		t.Fatalf("dry run wrote %d files", n)
	}
	if !strings.Contains(out.String(), "[dryrun] Would write file") || !strings.Contains(out.String(), "apiserver.crt") {
		t.Errorf("dry run did not describe writes:\n%s", out.String())
	}
}
