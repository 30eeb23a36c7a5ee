package csrapprover

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func node(name string, addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: addrs}}
}

type req struct {
	user, cn string
	dns      []string
	ips      []string
	usages   []certificatesv1.KeyUsage
	signer   string
}

func (r req) csr(t *testing.T, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: r.cn, Organization: []string{"system:nodes"}}, DNSNames: r.dns}
	for _, ip := range r.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	if r.usages == nil {
		r.usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	}
	if r.signer == "" {
		r.signer = certificatesv1.KubeletServingSignerName
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: r.signer,
			Usages: r.usages, Username: r.user, Groups: []string{"system:nodes", "system:authenticated"},
		},
	}
}

func TestCheck(t *testing.T) {
	w1 := node("w1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "w1.example"})
	good := req{user: "system:node:w1", cn: "system:node:w1", dns: []string{"w1", "w1.example"}, ips: []string{"10.0.0.5"}}
	if err := Check(good.csr(t, "good"), w1); err != nil {
		t.Fatalf("a node's own serving CSR is refused: %v", err)
	}
	for _, c := range []struct {
		name string
		r    req
		want string
	}{
		{"another node's name", req{user: "system:node:w1", cn: "system:node:w2", ips: []string{"10.0.0.5"}}, "not for the requesting node"},
		{"requested by another node", req{user: "system:node:w2", cn: "system:node:w2", ips: []string{"10.0.0.5"}}, "not by node"},
		{"an address the node does not have", req{user: "system:node:w1", cn: "system:node:w1", ips: []string{"10.0.0.5", "10.0.0.1"}}, "IP address 10.0.0.1"},
		{"a name the node does not have", req{user: "system:node:w1", cn: "system:node:w1", dns: []string{"kubernetes.default.svc"}}, `DNS name "kubernetes.default.svc"`},
		{"client usages", req{user: "system:node:w1", cn: "system:node:w1", ips: []string{"10.0.0.5"},
			usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}, "usages did not match"},
		{"another signer", req{user: "system:node:w1", cn: "system:node:w1", ips: []string{"10.0.0.5"}, signer: certificatesv1.KubeAPIServerClientSignerName}, "signer"},
	} {
		err := Check(c.r.csr(t, "x"), w1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// Run approves a known node's CSR, once its Node exists, and leaves a
// bad one pending.
func TestRunApprovesKnownNodes(t *testing.T) {
	good := req{user: "system:node:w1", cn: "system:node:w1", ips: []string{"10.0.0.5"}}.csr(t, "good")
	bad := req{user: "system:node:w1", cn: "system:node:w1", ips: []string{"10.9.9.9"}}.csr(t, "bad")
	client := fake.NewClientset(good, bad)
	// The ClusterRole is bound a moment after the approver starts.
	bound := time.Now().Add(200 * time.Millisecond)
	client.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		r := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = time.Now().After(bound)
		return true, r, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- (&Approver{Client: client, Logf: t.Logf}).Run(ctx) }()
	time.Sleep(300 * time.Millisecond) // the node registers after its CSR
	if _, err := client.CoreV1().Nodes().Create(ctx, node("w1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	approved := func(name string) bool {
		csr, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		return err == nil && !pending(csr)
	}
	for !approved("good") {
		if ctx.Err() != nil {
			t.Fatal("the known node's CSR was not approved")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if approved("bad") {
		t.Error("a CSR for an address the node does not have was approved")
	}
	cancel()
	<-done
}
