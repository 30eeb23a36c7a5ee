package apilb

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
)

// backend is a fake API server: /readyz answers ok, / its name.
type backend struct {
	name string
	addr string
	srv  *http.Server
}

func newCA(t *testing.T) *pki.KeyPair {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cert, err := pki.NewSelfSignedCA("test-ca", key, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return &pki.KeyPair{Cert: cert, Key: key}
}

func startBackend(t *testing.T, ca *pki.KeyPair, name string) *backend {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	kp, err := pki.NewSignedKeyPair(ca, key, "kube-apiserver", nil, certutil.AltNames{IPs: []net.IP{net.ParseIP("127.0.0.1")}},
		[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{name: name, addr: ln.Addr().String()}
	b.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			fmt.Fprint(w, "ok")
			return
		}
		fmt.Fprint(w, name)
	})}
	tlsConf := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{kp.Cert.Raw}, PrivateKey: key}}}
	go b.srv.Serve(tls.NewListener(ln, tlsConf))
	t.Cleanup(func() { b.srv.Close() })
	return b
}

// client talks to the balancer as a kubelet would: TLS verified with the
// cluster CA for the name 127.0.0.1, keep-alive connections.
func client(ca *pki.KeyPair) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestBalancerFailsOver(t *testing.T) {
	ca := newCA(t)
	a, b := startBackend(t, ca, "a"), startBackend(t, ca, "b")
	var log strings.Builder
	lb, err := New(Options{Listen: "127.0.0.1:0", Seed: a.addr, CAData: pki.EncodeCertPEM(ca.Cert), Interval: 100 * time.Millisecond,
		Logf: func(f string, args ...any) { fmt.Fprintf(&log, f+"\n", args...) }})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go lb.Run(ctx)
	url := "https://" + lb.Addr() + "/"
	c := client(ca)
	if got, err := get(c, url); err != nil || got != "a" {
		t.Fatalf("through the balancer with only the seed: %q %v", got, err)
	}
	// The EndpointSlice announces both servers: new connections spread.
	lb.set([]string{a.addr, b.addr})
	seen := map[string]bool{}
	for i := 0; i < 6; i++ {
		fresh := client(ca)
		got, err := get(fresh, url)
		if err != nil {
			t.Fatal(err)
		}
		seen[got] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Errorf("new connections went only to %v", seen)
	}
	// Lose a: a client that keeps reading (on a kept-alive connection) sees
	// a short gap, then b.
	if _, err := get(c, url); err != nil {
		t.Fatal(err)
	}
	a.srv.Close()
	start := time.Now()
	var gap, last time.Duration
	lastOK := time.Now()
	for time.Since(start) < 3*time.Second {
		got, err := get(c, url)
		if err == nil && got == "b" {
			if d := time.Since(lastOK); d > gap {
				gap = d
			}
			last = time.Since(start)
			if last > time.Second {
				break
			}
			lastOK = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last == 0 {
		t.Fatalf("no answer from b after a was lost; log:\n%s", log.String())
	}
	if gap > time.Second {
		t.Errorf("longest gap %s after losing a server", gap)
	}
	t.Logf("longest gap while losing a server: %s", gap)
	if h := lb.Servers(); h[a.addr] || !h[b.addr] {
		t.Errorf("health %v", h)
	}
	// The EndpointSlice drops every server: the seed stays.
	lb.set([]string{b.addr})
	if _, ok := lb.Servers()[a.addr]; !ok {
		t.Errorf("the seed was removed")
	}
}

func TestSliceAddresses(t *testing.T) {
	es := &discoveryv1.EndpointSlice{
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](6443)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.0.0.2"}},
			{Addresses: []string{"10.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			{Addresses: []string{"fd00::1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		},
	}
	got := strings.Join(sliceAddresses(es), " ")
	if got != "10.0.0.1:6443 10.0.0.2:6443 [fd00::1]:6443" {
		t.Errorf("addresses %q", got)
	}
}

// The health checks verify the servers with the CAs of CAFile as it is
// now: a server whose certificate a new CA signed is healthy once the file
// trusts that CA (a rotation of the cluster CA), not before.
func TestBalancerReloadsItsCAFile(t *testing.T) {
	old, next := newCA(t), newCA(t)
	srv := startBackend(t, next, "a")
	file := filepath.Join(t.TempDir(), "ca.crt")
	os.WriteFile(file, pki.EncodeCertPEM(old.Cert), 0o644)
	lb, err := New(Options{Listen: "127.0.0.1:0", Seed: srv.addr, CAData: pki.EncodeCertPEM(old.Cert), CAFile: file, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	ctx := context.Background()
	if lb.check(ctx, srv.addr) {
		t.Fatal("a server of another CA passed the health check")
	}
	os.WriteFile(file+".tmp", append(pki.EncodeCertPEM(old.Cert), pki.EncodeCertPEM(next.Cert)...), 0o644)
	os.Rename(file+".tmp", file)
	if !lb.check(ctx, srv.addr) {
		t.Error("the server of the CA added to the file failed the health check")
	}
}

// The servers a balancer learned are kept in its state file, and a
// balancer started again (the node rebooted, its seed down) knows them
// before any API server answers; with no state file it knows the seed
// alone.
func TestBalancerKeepsWhatItLearned(t *testing.T) {
	ca := newCA(t)
	fs := fsys.NewRoot(t.TempDir())
	const state = "/var/lib/kubeboot/apiserver-lb.json"
	o := Options{Listen: "127.0.0.1:0", Seed: "127.0.0.1:1", CAData: pki.EncodeCertPEM(ca.Cert), FS: fs, StateFile: state, Logf: t.Logf}
	lb, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	lb.set([]string{"127.0.0.1:2", "127.0.0.1:3"})
	lb.Close()
	if !fsys.Exists(fs, state) {
		t.Fatalf("%s not written", fs.Path(state))
	}
	again, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for _, a := range []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"} {
		if _, ok := again.Servers()[a]; !ok {
			t.Errorf("started again, the balancer does not know %s: %v", a, again.Servers())
		}
	}
	// A state file that learned nothing: the seed alone, as with none.
	if err := fs.WriteFile(state, []byte(`{"seed": "127.0.0.1:1", "servers": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if got := empty.Servers(); len(got) != 1 || !got["127.0.0.1:1"] {
		t.Errorf("with a state file that learned nothing the balancer knows %v, want the seed alone", got)
	}
	o.StateFile = ""
	none, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	if got := none.Servers(); len(got) != 1 {
		t.Errorf("with no state file the balancer knows %v, want the seed alone", got)
	}
}
