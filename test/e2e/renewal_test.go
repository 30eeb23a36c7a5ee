package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// TestCertificateRenewal makes a control plane whose certificates are
// valid for 2 minutes and reads the API every 100 ms, each read a new TLS
// connection, with a service-account token, while the node daemon renews
// every certificate and kubeconfig by itself (a third of the validity
// before expiry) and restarts only what reads its kubeconfig at start.
// The reads go on past the first certificates' expiry: none may fail.
// Then `certs renew all` online, under the same reads.
func TestCertificateRenewal(t *testing.T) {
	requireE2E(t)
	h := newHost(t, "kbcert", "10.220.0.2")
	cfg := filepath.Join(t.TempDir(), "kubeboot.yaml")
	os.WriteFile(cfg, []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {advertiseAddress: 10.220.0.2}
nodeRegistration: {name: cr}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
certificateValidityPeriod: 2m
`), 0o644)
	kb(t, h, "init", "--config", cfg, "--single-node", "--skip-phases", "addon/coredns,addon/storage,addon/metrics-server")
	pkiDir := filepath.Join(h.Root, "etc/kubernetes/pki")
	first := readCertFile(t, filepath.Join(pkiDir, "apiserver.crt"))
	t.Logf("the first certificates expire at %s (in %s)", first.NotAfter.Format(time.RFC3339), time.Until(first.NotAfter).Round(time.Second))

	// A reader whose credentials outlive the test: a service account's token.
	kubectl(t, h, "create", "serviceaccount", "reader")
	kubectl(t, h, "create", "clusterrolebinding", "reader", "--clusterrole=view", "--serviceaccount=default:reader")
	token := strings.TrimSpace(kubectl(t, h, "create", "token", "reader", "--duration=1h"))
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: h.DialContext, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: pool}}}
	read := func() (*http.Response, error) {
		req, _ := http.NewRequest("GET", "https://10.220.0.2:6443/api/v1/namespaces/default/configmaps?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return client.Do(req)
	}
	readOK := func() error {
		resp, err := read()
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	}
	// The authorizer sees the new binding a moment after it is made.
	eventually(t, 15*time.Second, 100*time.Millisecond, "a first read with the reader's token", readOK)
	r := startReader(t, readOK)

	// Every leaf and kubeconfig renewed by the daemon, past the first
	// certificates' expiry.
	leaves := []string{"apiserver", "apiserver-kubelet-client", "front-proxy-client", "apiserver-etcd-client", "etcd/server", "etcd/peer", "etcd/healthcheck-client"}
	kubeconfigs := []string{"admin.conf", "super-admin.conf", "controller-manager.conf", "scheduler.conf", "kube-proxy.conf"}
	renewedAt := eventually(t, 150*time.Second, time.Second, "every certificate renewed by the daemon", func() error {
		for _, l := range leaves {
			if c := readCertFile(t, filepath.Join(pkiDir, l+".crt")); !c.NotAfter.After(first.NotAfter) {
				return fmt.Errorf("%s still expires at %s", l, c.NotAfter)
			}
		}
		for _, k := range kubeconfigs {
			if c := kubeconfigCert(t, filepath.Join(h.Root, "etc/kubernetes", k)); !c.NotAfter.After(first.NotAfter) {
				return fmt.Errorf("%s still expires at %s", k, c.NotAfter)
			}
		}
		return nil
	})
	t.Logf("every certificate renewed %s after the test looked", renewedAt.Round(time.Second))
	// The restarts follow the renewal; the reads go on past the expiry.
	time.Sleep(time.Until(first.NotAfter.Add(15 * time.Second)))
	r.Report(t, "reads until 15 s past the first certificates' expiry")

	log, _ := os.ReadFile(filepath.Join(h.Root, "var/log/kubeboot/daemon.log"))
	for _, want := range []string{"restarting kube-controller-manager: " + filepath.Join(h.Root, "etc/kubernetes/controller-manager.conf") + " changed",
		"restarting kube-scheduler: ", "[certs] kube-scheduler restarted and ready in", "restarting kube-proxy: "} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the daemon's log lacks %q:\n%s", want, lastLines(string(log), 40))
		}
	}
	renewerLog, _ := os.ReadFile(filepath.Join(h.Root, "var/log/kubeboot/cert-renewer.log"))
	if n := strings.Count(string(renewerLog), "[certs] Renewed "); n < len(leaves)+len(kubeconfigs) {
		t.Errorf("the renewer logged %d renewals, want at least %d:\n%s", n, len(leaves)+len(kubeconfigs), renewerLog)
	}
	st, err := daemon.ReadStatus(fsys.NewRoot(h.Root))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Components {
		switch c.Name {
		case "kube-apiserver", "etcd":
			if c.Restarts != 0 {
				t.Errorf("%s restarted %d times (%s): it reloads its certificates by itself", c.Name, c.Restarts, c.LastExit)
			}
		case "kube-controller-manager", "kube-scheduler":
			if c.Restarts < 1 || !strings.HasPrefix(c.LastExit, "restarted: ") {
				t.Errorf("%s: %d restarts, last exit %q", c.Name, c.Restarts, c.LastExit)
			}
		}
	}
	// The new certificates are what the API server serves and what
	// check-expiration shows.
	served := servedCert(t, h, "10.220.0.2:6443")
	if !served.NotAfter.After(first.NotAfter) {
		t.Errorf("the API server serves a certificate expiring at %s", served.NotAfter)
	}
	out := kb(t, h, "certs", "check-expiration")
	if strings.Contains(out, "<invalid>") || !strings.Contains(out, readCertFile(t, filepath.Join(pkiDir, "apiserver.crt")).NotAfter.UTC().Format("Jan 02, 2006 15:04 MST")) {
		t.Errorf("check-expiration after the renewal:\n%s", out)
	}
	waitNodeReady(t, h, h, "cr", time.Now())

	// Online renewal by hand: the same restarts, no failed read.
	before := readCertFile(t, filepath.Join(pkiDir, "apiserver.crt"))
	out = kb(t, h, "certs", "renew", "all")
	if !strings.Contains(out, "kube-apiserver and etcd load them by themselves") || !strings.Contains(out, "The kubeboot daemon restarts kube-controller-manager, kube-proxy, kube-scheduler, manifest-applier, storage-scaler, one at a time") {
		t.Errorf("certs renew all said:\n%s", out)
	}
	if after := readCertFile(t, filepath.Join(pkiDir, "apiserver.crt")); after.SerialNumber.Cmp(before.SerialNumber) == 0 {
		t.Error("certs renew all did not renew apiserver.crt")
	}
	eventually(t, 60*time.Second, time.Second, "the scheduler restarted after certs renew", func() error {
		log, _ := os.ReadFile(filepath.Join(h.Root, "var/log/kubeboot/daemon.log"))
		if n := strings.Count(string(log), "[certs] kube-scheduler restarted and ready in"); n < 2 {
			return fmt.Errorf("%d restarts of the scheduler logged", n)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	r.Stop()
	r.Report(t, "reads in all")
}

func readCertFile(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return parseCertPEM(t, b, file)
}

func parseCertPEM(t *testing.T, b []byte, what string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM block", what)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return c
}

// kubeconfigCert is the client certificate a kubeconfig embeds.
func kubeconfigCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range kc.AuthInfos {
		if len(u.ClientCertificateData) > 0 {
			return parseCertPEM(t, u.ClientCertificateData, file)
		}
	}
	t.Fatalf("%s embeds no client certificate", file)
	return nil
}

// servedCert is the certificate a TLS server inside h presents.
func servedCert(t *testing.T, h *nethost.Host, addr string) *x509.Certificate {
	t.Helper()
	var cert *x509.Certificate
	err := h.InNetns(func() error {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		defer c.Close()
		cert = c.ConnectionState().PeerCertificates[0]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
