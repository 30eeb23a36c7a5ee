package discovery

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	tokenjws "k8s.io/cluster-bootstrap/token/jws"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/bootstraptoken/clusterinfo"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	"github.com/kubeboot/kubeboot/internal/certs/pki"
)

const testToken = "abcdef.0123456789abcdef"

// fakeAPI serves kube-public/cluster-info as an API server does, over
// its own TLS certificate; cluster tells what the ConfigMap holds.
type fakeAPI struct {
	srv *httptest.Server
	cm  func() *corev1.ConfigMap
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/kube-public/configmaps/cluster-info" {
			http.NotFound(w, r)
			return
		}
		cm := f.cm()
		if cm == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: 403, Message: "configmaps \"cluster-info\" is forbidden: User \"system:anonymous\" cannot get"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(cm)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) endpoint() string { return strings.TrimPrefix(f.srv.URL, "https://") }

// clusterInfo is cluster-info naming server and trusting caPEM, signed
// for the token (unless sign is false) over content (tampered, when it
// differs from what the ConfigMap holds).
func clusterInfo(t *testing.T, server string, caPEM []byte, token string, sign, tamper bool) *corev1.ConfigMap {
	t.Helper()
	// The ConfigMap as kubeadm's own bootstrap-token phase (which init
	// calls) writes it from admin.conf.
	admin := clientcmdapi.NewConfig()
	admin.Clusters["k"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	admin.Contexts["c"] = &clientcmdapi.Context{Cluster: "k", AuthInfo: "u"}
	admin.CurrentContext = "c"
	client := fake.NewClientset()
	if err := clusterinfo.CreateBootstrapConfigMapIfNotExists(client, admin); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(context.Background(), bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	content := cm.Data[bootstrapapi.KubeConfigKey]
	if sign {
		tok, _ := bootstraptokenv1.NewBootstrapTokenString(token)
		sig, err := tokenjws.ComputeDetachedSignature(content, tok.ID, tok.Secret)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[bootstrapapi.JWSSignatureKeyPrefix+tok.ID] = sig
	}
	if tamper {
		cm.Data[bootstrapapi.KubeConfigKey] = strings.Replace(content, server, "https://10.6.6.6:6443", 1)
	}
	return cm
}

func TestTokenDiscovery(t *testing.T) {
	f := newFakeAPI(t)
	serverCA := pki.EncodeCertPEM(f.srv.Certificate())
	serverPin := pubkeypin.Hash(f.srv.Certificate())
	// Another CA: what an impostor would put in cluster-info.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, err := pki.NewSelfSignedCA("other", key, time.Now(), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	otherCA, otherPin := pki.EncodeCertPEM(other), pubkeypin.Hash(other)
	const wrongPin = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

	cases := []struct {
		name    string
		cm      *corev1.ConfigMap
		pins    []string
		unsafe  bool
		token   string
		wantErr []string
		wantLog string
	}{
		{name: "valid", cm: clusterInfo(t, "https://10.0.0.1:6443", serverCA, testToken, true, false), pins: []string{wrongPin, serverPin}},
		{name: "pin mismatch", cm: clusterInfo(t, "https://10.0.0.1:6443", serverCA, testToken, true, false), pins: []string{wrongPin},
			wantErr: []string{"matches no --discovery-token-ca-cert-hash", serverPin, "kubeboot token create --print-join-command", "openssl x509 -pubkey"}},
		{name: "unknown or expired token", cm: clusterInfo(t, "https://10.0.0.1:6443", serverCA, "zzzzzz.0123456789abcdef", true, false), pins: []string{serverPin},
			wantErr: []string{`no signature for bootstrap token "abcdef"`, "unknown or has expired", "kubeboot token create --print-join-command"}},
		{name: "wrong token secret", cm: clusterInfo(t, "https://10.0.0.1:6443", serverCA, "abcdef.ffffffffffffffff", true, false), pins: []string{serverPin},
			wantErr: []string{"does not match its signature", "token's secret is wrong", "refusing"}},
		{name: "tampered cluster-info", cm: clusterInfo(t, "https://10.0.0.1:6443", serverCA, testToken, true, true), pins: []string{serverPin},
			wantErr: []string{"does not match its signature", "altered", "refusing"}},
		{name: "server with another CA", cm: clusterInfo(t, "https://10.0.0.1:6443", otherCA, testToken, true, false), pins: []string{otherPin},
			wantErr: []string{"serving certificate that the cluster CA does not verify", "another server answers", "refusing"}},
		{name: "unsafe skip", cm: clusterInfo(t, "https://10.0.0.1:6443", serverCA, testToken, true, false), unsafe: true, wantLog: "WARNING"},
		{name: "no pin", cm: clusterInfo(t, "https://10.0.0.1:6443", serverCA, testToken, true, false),
			wantErr: []string{"needs the CA's public-key pin", "--discovery-token-unsafe-skip-ca-verification"}},
		{name: "not set up for tokens", cm: nil, pins: []string{serverPin}, wantErr: []string{"does not let anonymous clients read kube-public/cluster-info"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.cm = func() *corev1.ConfigMap { return tc.cm }
			tok, _ := bootstraptokenv1.NewBootstrapTokenString(testToken)
			var log strings.Builder
			d := &TokenDiscovery{Endpoint: f.endpoint(), Token: tok, CACertHashes: tc.pins, UnsafeSkipCAVerification: tc.unsafe,
				Timeout: 5 * time.Second, SignatureWait: 300 * time.Millisecond,
				Logf: func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }}
			c, err := d.Discover(context.Background())
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("discovery succeeded, want a refusal")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Server != f.srv.URL || c.ClusterInfoServer != "https://10.0.0.1:6443" || string(c.CAData) != string(serverCA) {
				t.Errorf("discovered %+v", c)
			}
			if !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("log %q lacks %q", log.String(), tc.wantLog)
			}
		})
	}
}

func TestTokenDiscoveryUnreachable(t *testing.T) {
	tok, _ := bootstraptokenv1.NewBootstrapTokenString(testToken)
	d := &TokenDiscovery{Endpoint: "127.0.0.1:1", Token: tok, UnsafeSkipCAVerification: true, Timeout: 500 * time.Millisecond, Logf: t.Logf}
	_, err := d.Discover(context.Background())
	if err == nil || !strings.Contains(err.Error(), "https://127.0.0.1:1") || !strings.Contains(err.Error(), "connection refused") ||
		!strings.Contains(err.Error(), "(gave up after ") || !strings.Contains(err.Error(), "timeouts.discovery") {
		t.Fatalf("got %v, want an error naming the address tried and the timeout", err)
	}
}

// The printed join command is one line that a shell splits into join's
// arguments, as kubeadm's; init's own output keeps the multi-line form.
func TestJoinCommandLine(t *testing.T) {
	for _, c := range []struct {
		cp   bool
		key  string
		want string
	}{
		{false, "", "kubeboot join 10.0.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:ab12"},
		{true, "k3y", "kubeboot join 10.0.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:ab12 --control-plane --certificate-key k3y"},
	} {
		got := JoinCommandLine("10.0.0.1:6443", "abcdef.0123456789abcdef", "sha256:ab12", c.cp, c.key)
		if got != c.want {
			t.Errorf("JoinCommandLine = %q, want %q", got, c.want)
		}
		if multi := JoinCommand("10.0.0.1:6443", "abcdef.0123456789abcdef", "sha256:ab12", c.cp, c.key); !strings.Contains(multi, "\\\n\t") {
			t.Errorf("init's form lost its continuations: %q", multi)
		}
	}
}
