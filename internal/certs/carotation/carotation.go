// Package carotation rotates the cluster CA (pki's "ca", which signs the
// API server's serving certificate, every client certificate and the
// kubelets' certificates) without API downtime, on every node of the
// cluster, in three steps, each reached by every node before the next:
//
//  1. trust: a new CA is made; every node trusts the old and the new
//     (ca.crt, the CA data of every kubeconfig, cluster-info, the
//     kube-root-ca.crt ConfigMaps), and the rotation waits until clients
//     that reload their CA file (client-go does every 5 minutes) have.
//  2. switch: the new CA signs; every leaf certificate and kubeconfig of
//     the control plane is re-issued, and each node's kubelet asks the
//     cluster for a new client (and serving) certificate.
//  3. drop: the old CA is trusted no more anywhere.
//
// The control plane drives it (Driver, `kubeboot certs rotate-ca`); each
// node's daemon follows it (Agent, the ca-agent component) from the
// kubeboot-ca-rotation ConfigMap in kube-public, and reports each step it
// has reached in an annotation on its Node. Service-account tokens are
// signed by sa.key, which the rotation leaves alone: they stay valid.
package carotation

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubeboot/kubeboot/internal/certs/pki"
)

// Where a rotation is published and reported.
const (
	Namespace     = metav1.NamespacePublic
	ConfigMapName = "kubeboot-ca-rotation"
	// Annotation on a Node: the ID of the last step the node has applied.
	Annotation = "kubeboot.io/ca-rotation"
	// rbacName is the Role and RoleBinding that let nodes read the
	// ConfigMap; they live as long as the rotation.
	rbacName = "kubeboot:ca-rotation"
)

// Phase is one step of a rotation.
type Phase string

// The phases, in order.
const (
	PhaseTrust  Phase = "trust"
	PhaseSwitch Phase = "switch"
	PhaseDrop   Phase = "drop"
)

// Step is what every node must reach: trust exactly the CAs of Trust, and
// hold kubelet certificates signed by Signer.
type Step struct {
	Phase Phase
	// Trust is the CA bundle (PEM), the signing CA first.
	Trust []byte
	// Signer is the CA (PEM) that signs certificates from this step on.
	Signer []byte
}

// ID names the step: its phase and a digest of its CAs.
func (s Step) ID() string {
	h := sha256.New()
	h.Write(s.Trust)
	h.Write([]byte{0})
	h.Write(s.Signer)
	return string(s.Phase) + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// Parse checks the step's CAs and returns them.
func (s Step) Parse() (trust []*x509.Certificate, signer *x509.Certificate, err error) {
	if trust, err = certutil.ParseCertsPEM(s.Trust); err != nil {
		return nil, nil, fmt.Errorf("the CA rotation's trust bundle: %w", err)
	}
	signers, err := certutil.ParseCertsPEM(s.Signer)
	if err != nil || len(signers) != 1 {
		return nil, nil, fmt.Errorf("the CA rotation's signing CA: %d certificates, %v", len(signers), err)
	}
	if !slices.ContainsFunc(trust, signers[0].Equal) {
		return nil, nil, fmt.Errorf("the CA rotation's signing CA %q is not in its trust bundle", signers[0].Subject.CommonName)
	}
	for _, c := range trust {
		if !c.IsCA {
			return nil, nil, fmt.Errorf("the CA rotation's trust bundle holds %q, which is not a CA", c.Subject.CommonName)
		}
	}
	return trust, signers[0], nil
}

func (s Step) configMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: Namespace},
		Data:       map[string]string{"id": s.ID(), "phase": string(s.Phase), "trust": string(s.Trust), "signer": string(s.Signer)},
	}
}

func stepOf(cm *corev1.ConfigMap) (Step, error) {
	s := Step{Phase: Phase(cm.Data["phase"]), Trust: []byte(cm.Data["trust"]), Signer: []byte(cm.Data["signer"])}
	switch s.Phase {
	case PhaseTrust, PhaseSwitch, PhaseDrop:
	default:
		return Step{}, fmt.Errorf("%s/%s names the unknown phase %q", Namespace, ConfigMapName, s.Phase)
	}
	if _, _, err := s.Parse(); err != nil {
		return Step{}, err
	}
	return s, nil
}

// Bundle encodes CAs, signer first, as a trust bundle.
func Bundle(signer *x509.Certificate, others ...*x509.Certificate) []byte {
	var b bytes.Buffer
	b.Write(pki.EncodeCertPEM(signer))
	for _, c := range others {
		if !c.Equal(signer) {
			b.Write(pki.EncodeCertPEM(c))
		}
	}
	return b.Bytes()
}

// sameSet tells whether two PEM bundles hold the same certificates, in any
// order: a node rewrites (and its components restart for) a changed
// trust, not a reordered one.
func sameSet(a, b []byte) bool {
	ca, err1 := certutil.ParseCertsPEM(a)
	cb, err2 := certutil.ParseCertsPEM(b)
	if err1 != nil || err2 != nil || len(ca) != len(cb) {
		return false
	}
	for _, c := range ca {
		if !slices.ContainsFunc(cb, c.Equal) {
			return false
		}
	}
	return true
}

// signedBy tells whether cert was issued by ca.
func signedBy(cert, ca *x509.Certificate) bool {
	return bytes.Equal(cert.RawIssuer, ca.RawSubject) && cert.CheckSignatureFrom(ca) == nil
}

// nodeReader lets every node read the rotation's ConfigMap (with the
// kubelet's identity), as cluster-info is readable by anyone.
func nodeReader() (*rbacv1.Role, *rbacv1.RoleBinding) {
	meta := metav1.ObjectMeta{Name: rbacName, Namespace: Namespace}
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{ConfigMapName}, Verbs: []string{"get"},
	}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: meta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: rbacName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:nodes"}},
	}
	return role, binding
}
