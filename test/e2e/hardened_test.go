package e2e

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// TestHardened brings up a cluster with `init --hardened`, joins a worker
// and a second control plane, and checks what the settings are for:
// Secrets are not plaintext in etcd on either control plane, the audit log
// records requests without Secrets' content, profiling is off, the
// kubelets serve certificates of the cluster CA approved for their own
// addresses, and the API server refuses a kubelet whose certificate
// another CA signed.
func TestHardened(t *testing.T) {
	requireE2E(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already; this test needs it free of other kubelets", n)
	}
	network := newNetwork(t, "kbs-net")
	cp1 := newHostWith(t, "kbs-cp1", "10.209.0.2", nethost.Options{Network: network})
	cp2 := newHostWith(t, "kbs-cp2", "10.209.0.3", nethost.Options{Network: network})
	w := newHostWith(t, "kbs-w1", "10.209.0.4", nethost.Options{Network: network})

	start := time.Now()
	out := kb(t, cp1, "init", "--node-name", "cp1", "--hardened", "--upload-certs")
	t.Logf("init --hardened took %s", time.Since(start).Round(time.Millisecond))
	for _, want := range []string{"[hardened] kube-apiserver: --encryption-provider-config=/etc/kubernetes/pki/encryption-config.yaml",
		"[hardened] kubelet: serverTLSBootstrap=true", "[control-plane] Writing the encryption configuration of Secrets, with a new key",
		"[control-plane] Writing the audit policy", `Writing the component spec for "csr-approver"`} {
		if !strings.Contains(out, want) {
			t.Errorf("init's output lacks %q:\n%s", want, out)
		}
	}
	j, ok := nethost.ParseJoin(out)
	if !ok || j.CertificateKey == "" {
		t.Fatalf("no control-plane join command in init's output:\n%s", out)
	}
	token, hash, key := j.Token, j.Hash, j.CertificateKey
	for _, f := range []string{"etc/kubernetes/pki/encryption-config.yaml", "etc/kubernetes/audit-policy.yaml"} {
		if st, err := os.Stat(filepath.Join(cp1.Root, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", f, err, st.Mode().Perm())
		}
	}

	t.Run("Secrets encrypted at rest", func(t *testing.T) {
		const plain = "kubeboot-canary-plaintext"
		kubectl(t, cp1, "create", "secret", "generic", "canary", "--from-literal=v="+plain)
		ec := etcdClient(t, cp1)
		defer ec.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := ec.Get(ctx, "/registry/secrets/default/canary")
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("reading the Secret from etcd: %v %v", err, resp)
		}
		v := string(resp.Kvs[0].Value)
		if strings.Contains(v, plain) || !strings.HasPrefix(v, "k8s:enc:secretbox:v1:key1:") {
			t.Errorf("the Secret is stored in etcd as %.60q...; want secretbox-encrypted", v)
		}
		if got := kubectl(t, cp1, "get", "secret", "canary", "-o", "jsonpath={.data.v}"); !strings.Contains(got, "a3ViZWJvb3QtY2FuYXJ5LXBsYWludGV4dA") {
			t.Errorf("the API server does not read the Secret back: %q", got)
		}
	})

	t.Run("audit log", func(t *testing.T) {
		log := filepath.Join(cp1.Root, "var/log/kubernetes/audit/audit.log")
		var line string
		eventually(t, 10*time.Second, 200*time.Millisecond, "the audit log records the Secret's creation", func() error {
			b, err := os.ReadFile(log)
			if err != nil {
				return err
			}
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, `"verb":"create"`) && strings.Contains(l, `"resource":"secrets"`) && strings.Contains(l, `"name":"canary"`) {
					line = l
					return nil
				}
			}
			return fmt.Errorf("no create of Secret canary in %d bytes", len(b))
		})
		if !strings.Contains(line, `"username":"kubernetes-admin"`) || !strings.Contains(line, `"level":"Metadata"`) {
			t.Errorf("the audit event does not say who, or records more than metadata: %s", line)
		}
		if strings.Contains(line, "a3ViZWJvb3QtY2FuYXJ5") {
			t.Errorf("the audit log holds the Secret's content: %s", line)
		}
		if st, err := os.Stat(filepath.Dir(log)); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("the audit log's directory: %v %v; want mode 0700", err, st.Mode().Perm())
		}
	})

	t.Run("no profiling", func(t *testing.T) {
		if out, err := kubectlErr(cp1, "get", "--raw", "/debug/pprof/"); err == nil {
			t.Errorf("the API server serves /debug/pprof/:\n%.200s", out)
		}
	})

	t.Run("join a worker", func(t *testing.T) {
		start := time.Now()
		kb(t, w, "join", "10.209.0.2:6443", "--token", token, "--discovery-token-ca-cert-hash", hash, "--node-name", "w1")
		waitNodeReady(t, w, cp1, "w1", start)
	})

	t.Run("kubectl top", func(t *testing.T) { testMetrics(t, cp1, []string{"cp1", "w1"}, time.Time{}) })
	t.Run("kubelet serving certificates", func(t *testing.T) {
		for _, node := range []string{"cp1", "w1"} {
			eventually(t, 30*time.Second, 200*time.Millisecond, node+"'s serving CSR approved by kubeboot", func() error {
				out := kubectl(t, cp1, "get", "csr", "-o", `jsonpath={range .items[?(@.spec.signerName=="kubernetes.io/kubelet-serving")]}{.spec.username} {.status.conditions[0].reason} {.status.certificate}{"\n"}{end}`)
				for _, l := range strings.Split(out, "\n") {
					if f := strings.Fields(l); len(f) == 3 && f[0] == "system:node:"+node && f[1] == "KubebootKnownNode" {
						return nil
					}
				}
				return fmt.Errorf("no issued serving CSR of %s: %q", node, out)
			})
		}
		// The worker's kubelet serves the certificate the cluster CA signed.
		pool := x509.NewCertPool()
		caPEM, _ := os.ReadFile(filepath.Join(cp1.Root, "etc/kubernetes/pki/ca.crt"))
		pool.AppendCertsFromPEM(caPEM)
		eventually(t, 30*time.Second, 500*time.Millisecond, "w1's kubelet serves a certificate of the cluster CA", func() error {
			conn, err := cp1.DialContext(context.Background(), "tcp", "10.209.0.4:10250")
			if err != nil {
				return err
			}
			tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: "10.209.0.4"})
			defer tc.Close()
			return tc.Handshake()
		})
		// Logs go from the API server to the kubelet, which it verifies.
		kubectl(t, cp1, "run", "web", "--image", images.TestServer, "--image-pull-policy", "IfNotPresent",
			"--overrides", `{"spec":{"nodeName":"w1"}}`, "--", "--port", "8080")
		eventually(t, 60*time.Second, 500*time.Millisecond, "kubectl logs of a pod on w1", func() error {
			out, err := kubectlErr(cp1, "logs", "web")
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
	})

	t.Run("a kubelet certificate of another CA is refused", func(t *testing.T) {
		caCert, caKey := readCA(t, cp1)
		foreignKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		foreign := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: caCert.Subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		foreignDER, _ := x509.CreateCertificate(rand.Reader, foreign, foreign, &foreignKey.PublicKey, foreignKey)
		foreignCA, _ := x509.ParseCertificate(foreignDER)
		var serving atomic.Pointer[tls.Certificate]
		serving.Store(servingCert(t, foreignCA, foreignKey))
		var l net.Listener
		if err := w.InNetns(func() (err error) { l, err = net.Listen("tcp", "10.209.0.4:10299"); return err }); err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprint(rw, "fake kubelet") })}
		go srv.Serve(tls.NewListener(l, &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return serving.Load(), nil }}))
		defer srv.Close()
		// A Node whose kubelet is that server.
		f := filepath.Join(t.TempDir(), "node.yaml")
		os.WriteFile(f, []byte("apiVersion: v1\nkind: Node\nmetadata: {name: fake-kubelet}\n"), 0o644)
		kubectl(t, cp1, "create", "-f", f)
		defer kubectlErr(cp1, "delete", "node", "fake-kubelet")
		kubectl(t, cp1, "patch", "node", "fake-kubelet", "--subresource=status", "--type=merge", "-p",
			`{"status":{"addresses":[{"type":"InternalIP","address":"10.209.0.4"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10299}}}}`)
		out, err := kubectlErr(cp1, "get", "--raw", "/api/v1/nodes/fake-kubelet/proxy/healthz")
		if err == nil || strings.Contains(out, "fake kubelet") {
			t.Errorf("the API server accepted a kubelet certificate of another CA: %v %s", err, out)
		} else {
			t.Logf("refused: %s", lastLine(strings.TrimSpace(out)))
		}
		// The same server with a certificate of the cluster CA is accepted:
		// the refusal was the CA's.
		serving.Store(servingCert(t, caCert, caKey))
		out, err = kubectlErr(cp1, "get", "--raw", "/api/v1/nodes/fake-kubelet/proxy/healthz")
		if err != nil || !strings.Contains(out, "fake kubelet") {
			t.Errorf("a kubelet certificate of the cluster CA: %v %s", err, out)
		}
	})

	t.Run("join a control plane", func(t *testing.T) {
		out := kb(t, cp2, "join", "10.209.0.2:6443", "--token", token, "--discovery-token-ca-cert-hash", hash,
			"--control-plane", "--certificate-key", key, "--node-name", "cp2")
		logProgress(t, out)
		a, _ := os.ReadFile(filepath.Join(cp1.Root, "etc/kubernetes/pki/encryption-config.yaml"))
		b, err := os.ReadFile(filepath.Join(cp2.Root, "etc/kubernetes/pki/encryption-config.yaml"))
		if err != nil || string(a) != string(b) {
			t.Fatalf("cp2 does not have cp1's encryption key: %v", err)
		}
		for _, f := range []string{"etc/kubernetes/audit-policy.yaml", "etc/kubernetes/kubeboot/components/csr-approver.json"} {
			if _, err := os.Stat(filepath.Join(cp2.Root, f)); err != nil {
				t.Errorf("cp2: %v", err)
			}
		}
		// Written through cp2's API server, read through cp1's.
		out, err = nethost.Run(cp2.Command(cp2.Binary, "kubectl", "--kubeconfig", filepath.Join(cp2.Root, "etc/kubernetes/admin.conf"),
			"create", "secret", "generic", "from-cp2", "--from-literal=v=written-on-cp2"))
		if err != nil {
			t.Fatalf("creating a Secret through cp2: %v\n%s", err, out)
		}
		if got := kubectl(t, cp1, "get", "secret", "from-cp2", "-o", "jsonpath={.data.v}"); got != "d3JpdHRlbi1vbi1jcDI=" {
			t.Errorf("cp1 reads cp2's Secret as %q", got)
		}
	})

	t.Run("reset leaves nothing", func(t *testing.T) {
		for _, h := range []*nethost.Host{w, cp2, cp1} {
			kb(t, h, "reset", "--force")
			if files := listAll(h.Root); len(files) != 0 {
				t.Errorf("%s: reset left %v", h.Name, files)
			}
		}
		// Nor the links of their volume directories (a joined control
		// plane's once stayed).
		for _, name := range []string{"w1", "cp2", "cp1"} {
			if target, err := os.Readlink(filepath.Join(node.StorageRoot, name)); err == nil {
				t.Errorf("reset left the link %s -> %s", filepath.Join(node.StorageRoot, name), target)
			}
		}
	})
}

func readCA(t *testing.T, h *nethost.Host) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	certs, err := certutil.CertsFromFile(filepath.Join(h.Root, "etc/kubernetes/pki/ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := keyutil.PrivateKeyFromFile(filepath.Join(h.Root, "etc/kubernetes/pki/ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	return certs[0], key.(crypto.Signer)
}

// servingCert is a kubelet-like serving certificate for 10.209.0.4.
func servingCert(t *testing.T, ca *x509.Certificate, caKey crypto.Signer) *tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("10.209.0.4")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
