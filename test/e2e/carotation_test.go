package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// TestCARotation rotates the cluster CA of a control plane and a worker
// (CoreDNS and pods on the worker) while a client reads the API every
// 100 ms, each read on a new TLS connection, with a service-account token
// and the control plane's ca.crt as its CA file, as client-go reloads it
// (every 5 minutes): no read fails, the pods keep running, and at the end
// the old CA is trusted nowhere: not in any ca.crt, kubeconfig,
// cluster-info or kube-root-ca.crt, and a client certificate it signed is
// refused. Exec, logs and DNS (CoreDNS watching the API) work after it.
//
// With --hardened the kubelets' serving certificates come from the cluster
// CA too and the API server verifies them (kubelet-certificate-authority):
// they are re-issued, and exec and logs show the API server trusts them.
// That cluster has a second control plane: its ca-agent takes the new CA
// key from the sealed Secret and re-issues its own certificates; the
// reader reads through both API servers.
func TestCARotation(t *testing.T) {
	requireE2E(t)
	t.Run("default", func(t *testing.T) { testCARotation(t, "kbca", "10.221.0", false) })
	t.Run("hardened-ha", func(t *testing.T) {
		testCARotation(t, "kbcah", "10.222.0", true, "--hardened", "--upload-certs")
	})
}

func testCARotation(t *testing.T, name, subnet string, secondCP bool, initFlags ...string) {
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already", n)
	}
	hardened := slices.Contains(initFlags, "--hardened")
	apiserver := subnet + ".2:6443"
	network := newNetwork(t, name+"-net")
	cp := newHostWith(t, name+"-cp", subnet+".2", nethost.Options{Network: network})
	w := newHostWith(t, name+"-w", subnet+".3", nethost.Options{Network: network})
	out := kb(t, cp, append([]string{"init", "--node-name", "cp"}, initFlags...)...)
	j, ok := nethost.ParseJoin(out)
	if !ok {
		t.Fatalf("no join command in init's output:\n%s", out)
	}
	cps, hosts := []*nethost.Host{cp}, []*nethost.Host{cp, w}
	if secondCP {
		if j.CertificateKey == "" {
			t.Fatalf("no certificate key in init's output:\n%s", out)
		}
		cp2 := newHostWith(t, name+"-cp2", subnet+".4", nethost.Options{Network: network})
		start := time.Now()
		kb(t, cp2, "join", apiserver, "--token", j.Token, "--discovery-token-ca-cert-hash", j.Hash, "--control-plane", "--certificate-key", j.CertificateKey, "--node-name", "cp2")
		waitNodeReady(t, cp2, cp, "cp2", start)
		cps, hosts = append(cps, cp2), append(hosts, cp2)
	}
	start := time.Now()
	kb(t, w, "join", apiserver, "--token", j.Token, "--discovery-token-ca-cert-hash", j.Hash, "--node-name", "w")
	waitNodeReady(t, w, cp, "w", start)
	f := filepath.Join(t.TempDir(), "app.yaml")
	os.WriteFile(f, []byte(fmt.Sprintf(testApp, images.TestServer)), 0o644)
	kubectl(t, cp, "apply", "-f", f)
	kubectl(t, cp, "rollout", "status", "deployment/web", "--timeout=120s")
	kubectl(t, cp, "rollout", "status", "-n", "kube-system", "deployment/coredns", "--timeout=120s")
	kubectl(t, cp, "wait", "--for=condition=Ready", "pod/client", "--timeout=90s")
	podsState := func() string {
		return kubectl(t, cp, "get", "pods", "-A", "-o", "jsonpath={range .items[*]}{.metadata.name}/{.metadata.uid}/{.spec.nodeName}/{.status.containerStatuses[0].restartCount} {end}")
	}
	podsBefore := podsState()
	t.Logf("pods: %s", podsBefore)

	pkiDir := filepath.Join(cp.Root, "etc/kubernetes/pki")
	oldCA := readCertFile(t, filepath.Join(pkiDir, "ca.crt"))
	oldClient := oldCAClient(t, cp, apiserver, pkiDir)

	// The reader: a service account's token, client-go with the control
	// plane's ca.crt as CA file.
	kubectl(t, cp, "create", "serviceaccount", "reader")
	kubectl(t, cp, "create", "clusterrolebinding", "reader", "--clusterrole=view", "--serviceaccount=default:reader")
	token := strings.TrimSpace(kubectl(t, cp, "create", "token", "reader", "--duration=2h"))
	// One reader per API server, in turn.
	type apiReader struct {
		hc *http.Client
		c  kubernetes.Interface
	}
	var readers []apiReader
	for _, h := range cps {
		rc := &rest.Config{Host: "https://" + h.IP + ":6443", BearerToken: token, Timeout: 2 * time.Second,
			TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(pkiDir, "ca.crt")}, Dial: cp.DialContext}
		hc, err := rest.HTTPClientFor(rc)
		if err != nil {
			t.Fatal(err)
		}
		c, err := kubernetes.NewForConfigAndClient(rc, hc)
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, apiReader{hc, c})
	}
	var reads atomic.Int64
	read := func() error {
		r := readers[int(reads.Add(1))%len(readers)]
		defer utilnet.CloseIdleConnectionsFor(r.hc.Transport)
		_, err := r.c.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{Limit: 1})
		return err
	}
	eventually(t, 15*time.Second, 100*time.Millisecond, "a first read with the reader's token", read)
	r := startReader(t, read)

	start = time.Now()
	out = kb(t, cp, "certs", "rotate-ca")
	t.Logf("certs rotate-ca took %s", time.Since(start).Round(time.Second))
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[certs/rotate-ca] ") && !strings.Contains(l, "left before the switch") {
			t.Log(l)
		}
	}
	time.Sleep(2 * time.Second)
	r.Stop()
	r.Report(t, "reads during the rotation")

	newCA := readCertFile(t, filepath.Join(pkiDir, "ca.crt"))
	if newCA.Equal(oldCA) {
		t.Fatal("ca.crt still holds the old CA")
	}
	onlyNew := func(what string, pemData []byte) {
		t.Helper()
		certs, err := certutil.ParseCertsPEM(pemData)
		if err != nil || len(certs) != 1 || !certs[0].Equal(newCA) {
			t.Errorf("%s does not hold just the new CA (%d certificates, %v)", what, len(certs), err)
		}
	}
	for _, h := range hosts {
		b, _ := os.ReadFile(filepath.Join(h.Root, "etc/kubernetes/pki/ca.crt"))
		onlyNew(h.Name+"'s ca.crt", b)
		confs, _ := filepath.Glob(filepath.Join(h.Root, "etc/kubernetes/*.conf"))
		for _, c := range confs {
			kc, err := clientcmd.LoadFromFile(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, cl := range kc.Clusters {
				if len(cl.CertificateAuthorityData) > 0 {
					onlyNew(c, cl.CertificateAuthorityData)
				}
			}
		}
		kubelet := readCertFile(t, filepath.Join(h.Root, "var/lib/kubelet/pki/kubelet-client-current.pem"))
		if kubelet.CheckSignatureFrom(newCA) != nil {
			t.Errorf("%s's kubelet client certificate is not signed by the new CA", h.Name)
		}
		if hardened {
			serving := readCertFile(t, filepath.Join(h.Root, "var/lib/kubelet/pki/kubelet-server-current.pem"))
			if serving.CheckSignatureFrom(newCA) != nil {
				t.Errorf("%s's kubelet serving certificate is not signed by the new CA", h.Name)
			}
		}
	}
	caKey, _ := os.ReadFile(filepath.Join(pkiDir, "ca.key"))
	for _, h := range cps {
		dir := filepath.Join(h.Root, "etc/kubernetes/pki")
		for _, l := range []string{"apiserver", "apiserver-kubelet-client"} {
			if readCertFile(t, filepath.Join(dir, l+".crt")).CheckSignatureFrom(newCA) != nil {
				t.Errorf("%s's %s.crt is not signed by the new CA", h.Name, l)
			}
		}
		if served := servedCert(t, cp, h.IP+":6443"); served.CheckSignatureFrom(newCA) != nil {
			t.Errorf("%s's API server does not serve a certificate of the new CA", h.Name)
		}
		if k, _ := os.ReadFile(filepath.Join(dir, "ca.key")); string(k) != string(caKey) {
			t.Errorf("%s's ca.key is not the new CA's key", h.Name)
		}
		for _, f := range []string{"ca-next.crt", "ca-next.key", "ca-signer.crt"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				t.Errorf("%s: the rotation left %s", h.Name, f)
			}
		}
		for _, conf := range []string{"admin.conf", "controller-manager.conf", "scheduler.conf"} {
			kc, err := clientcmd.LoadFromFile(filepath.Join(h.Root, "etc/kubernetes", conf))
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range kc.AuthInfos {
				if certs, err := certutil.ParseCertsPEM(u.ClientCertificateData); err != nil || certs[0].CheckSignatureFrom(newCA) != nil {
					t.Errorf("%s's %s: the client certificate is not signed by the new CA (%v)", h.Name, conf, err)
				}
			}
		}
	}
	onlyNew("kube-root-ca.crt", []byte(kubectl(t, cp, "get", "configmap", "kube-root-ca.crt", "-o", "jsonpath={.data.ca\\.crt}")))
	kc, err := clientcmd.Load([]byte(kubectl(t, cp, "get", "configmap", "-n", "kube-public", "cluster-info", "-o", "jsonpath={.data.kubeconfig}")))
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range kc.Clusters {
		onlyNew("cluster-info", cl.CertificateAuthorityData)
	}
	if out, err := kubectlErr(cp, "get", "configmap", "-n", "kube-public", "kubeboot-ca-rotation"); err == nil {
		t.Errorf("the rotation's ConfigMap is left:\n%s", out)
	}
	if out, err := kubectlErr(cp, "get", "secret", "-n", "kube-system", "kubeboot-ca-rotation"); err == nil {
		t.Errorf("the rotation's key Secret is left:\n%s", out)
	}
	if a := kubectl(t, cp, "get", "nodes", "-o", "jsonpath={.items[*].metadata.annotations.kubeboot\\.io/ca-rotation}"); strings.TrimSpace(a) != "" {
		t.Errorf("nodes keep the rotation's annotation: %q", a)
	}
	// A client certificate of the old CA is refused.
	resp, err := oldClient.Get("https://" + apiserver + "/api")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a client certificate of the old CA: %s, want 401", resp.Status)
	}

	// The pods ran on; the kubelets, CoreDNS and the API server's kubelet
	// client work with the new CA.
	if after := podsState(); after != podsBefore {
		t.Errorf("pods after the rotation:\n%s\nbefore:\n%s", after, podsBefore)
	}
	for _, h := range hosts {
		waitNodeReady(t, h, cp, strings.TrimPrefix(h.Name, name+"-"), time.Now())
	}
	kubectl(t, cp, "create", "service", "clusterip", "late", "--tcp=80")
	lateIP := kubectl(t, cp, "get", "service", "late", "-o", "jsonpath={.spec.clusterIP}")
	eventually(t, 30*time.Second, 300*time.Millisecond, "resolve a Service made after the rotation", func() error {
		out, err := kubectlErr(cp, "exec", "client", "--", "/test-server", "--resolve", "late.default.svc.cluster.local")
		if err != nil || strings.TrimSpace(out) != lateIP {
			return fmt.Errorf("%v: %q, want %s", err, out, lateIP)
		}
		return nil
	})
	if _, err := kubectlErr(cp, "logs", "deployment/web"); err != nil {
		t.Errorf("kubectl logs after the rotation: %v", err)
	}
}

// oldCAClient is an HTTP client with a system:masters certificate signed
// by the current CA, trusting every CA of ca.crt as it will be.
func oldCAClient(t *testing.T, h *nethost.Host, apiserver, pkiDir string) *http.Client {
	t.Helper()
	keyPEM, err := os.ReadFile(filepath.Join(pkiDir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := pki.ParseKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ca := &pki.KeyPair{Cert: readCertFile(t, filepath.Join(pkiDir, "ca.crt")), Key: caKey}
	key, _ := pki.NewPrivateKey("ECDSA-P256")
	kp, err := pki.NewSignedKeyPair(ca, key, "old-ca-probe", []string{"system:masters"}, certutil.AltNames{}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{kp.Cert.Raw}, PrivateKey: key, Leaf: kp.Cert}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: h.DialContext, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}}
	resp, err := c.Get("https://" + apiserver + "/api")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a client certificate of the CA before the rotation: %s", resp.Status)
	}
	return c
}
