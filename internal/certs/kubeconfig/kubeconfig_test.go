package kubeconfig

import (
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/pkg/config"
)

func testConfig(t *testing.T, endpoint string) *config.Config {
	c := &config.Config{}
	c.EnsureInit()
	c.Init.LocalAPIEndpoint.AdvertiseAddress = "10.10.0.2"
	c.Cluster.ControlPlaneEndpoint = endpoint
	c.Cluster.EncryptionAlgorithm = kubeadmv1.EncryptionAlgorithmECDSAP256
	if err := c.DefaultInit(config.Host{Hostname: "node-a"}); err != nil {
		t.Fatal(err)
	}
	return c
}

func write(t *testing.T, root string, c *config.Config) *Writer {
	t.Helper()
	fs := fsys.NewRoot(root)
	g := &pki.Generator{FS: fs, Cfg: c}
	if err := g.EnsureAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := &Writer{FS: fs, Cfg: c, PKI: g}
	if err := w.EnsureAll(); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestServerURL(t *testing.T) {
	cases := map[string]string{
		"":                     "https://10.10.0.2:6443",
		"vip.example.com":      "https://vip.example.com:6443",
		"vip.example.com:8443": "https://vip.example.com:8443",
		"10.0.0.100:443":       "https://10.0.0.100:443",
		"fd00::1":              "https://[fd00::1]:6443",
	}
	for ep, want := range cases {
		if got := ServerURL(testConfig(t, ep)); got != want {
			t.Errorf("endpoint %q: %s, want %s", ep, got, want)
		}
	}
}

func TestKubeconfigIdentities(t *testing.T) {
	root := t.TempDir()
	write(t, root, testConfig(t, "vip.example.com:8443"))
	caPEM, _ := os.ReadFile(filepath.Join(root, "etc/kubernetes/pki/ca.crt"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	// As kubeadm v1.37: the admin files and kube-proxy go through the
	// control-plane endpoint, the control plane's own components (and its
	// kubelet) straight to this node's API server.
	const endpoint, local = "https://vip.example.com:8443", "https://10.10.0.2:6443"
	want := map[string]struct {
		cn     string
		orgs   []string
		server string
	}{
		"admin.conf":              {"kubernetes-admin", []string{"kubeadm:cluster-admins"}, endpoint},
		"super-admin.conf":        {"kubernetes-super-admin", []string{"system:masters"}, endpoint},
		"kubelet.conf":            {"system:node:node-a", []string{"system:nodes"}, local},
		"controller-manager.conf": {"system:kube-controller-manager", nil, local},
		"scheduler.conf":          {"system:kube-scheduler", nil, local},
		"kube-proxy.conf":         {"system:kube-proxy", nil, endpoint},
	}
	for file, w := range want {
		t.Run(file, func(t *testing.T) {
			p := filepath.Join(root, "etc/kubernetes", file)
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", st.Mode())
			}
			rc, err := clientcmd.BuildConfigFromFlags("", p)
			if err != nil {
				t.Fatalf("clientcmd cannot load it: %v", err)
			}
			if rc.Host != w.server {
				t.Errorf("server %s, want %s", rc.Host, w.server)
			}
			kc, _ := clientcmd.LoadFromFile(p)
			if kc.CurrentContext != w.cn+"@kubernetes" {
				t.Errorf("context %q", kc.CurrentContext)
			}
			cert, err := (&Writer{FS: fsys.NewRoot(root)}).ClientCert(filepath.Join("/etc/kubernetes", file))
			if err != nil {
				t.Fatal(err)
			}
			if cert.Subject.CommonName != w.cn || !slices.Equal(cert.Subject.Organization, w.orgs) {
				t.Errorf("identity %q %v, want %q %v", cert.Subject.CommonName, cert.Subject.Organization, w.cn, w.orgs)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("client cert does not verify against ca.crt: %v", err)
			}
		})
	}
}

func TestExistingKubeconfigChecked(t *testing.T) {
	root := t.TempDir()
	write(t, root, testConfig(t, ""))
	before, _ := os.ReadFile(filepath.Join(root, "etc/kubernetes/admin.conf"))
	// Same configuration: reused as is.
	write(t, root, testConfig(t, ""))
	after, _ := os.ReadFile(filepath.Join(root, "etc/kubernetes/admin.conf"))
	if string(before) != string(after) {
		t.Error("re-run rewrote admin.conf")
	}
	// Another endpoint: refused, naming the file.
	c := testConfig(t, "other.example.com")
	c.Cluster.APIServer.CertSANs = nil
	fs := fsys.NewRoot(root)
	w := &Writer{FS: fs, Cfg: c, PKI: &pki.Generator{FS: fs, Cfg: c}}
	err := w.EnsureAll()
	if err == nil || !strings.Contains(err.Error(), "admin.conf exists but points at https://10.10.0.2:6443") {
		t.Fatalf("got %v", err)
	}
}

func TestRenewKubeconfig(t *testing.T) {
	root := t.TempDir()
	c := testConfig(t, "")
	w := write(t, root, c)
	old, _ := w.ClientCert("/etc/kubernetes/admin.conf")
	if err := w.Renew(List(c)[0]); err != nil {
		t.Fatal(err)
	}
	renewed, _ := w.ClientCert("/etc/kubernetes/admin.conf")
	if renewed.SerialNumber.Cmp(old.SerialNumber) == 0 || renewed.Subject.CommonName != old.Subject.CommonName {
		t.Errorf("renewal did not re-issue the same identity")
	}
	if _, err := clientcmd.BuildConfigFromFlags("", filepath.Join(root, "etc/kubernetes/admin.conf")); err != nil {
		t.Fatal(err)
	}
}
