// Package discovery owns what lets a node find and trust a cluster:
// bootstrap tokens (as Secrets), the cluster-info ConfigMap and its JWS
// signatures, the CA public-key pin, and the join command built from them.
package discovery

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"

	"github.com/kubeboot/kubeboot/pkg/apiclient"
)

// DefaultTokenGroup is the group every kubeadm-style join token carries.
const DefaultTokenGroup = "system:bootstrappers:kubeadm:default-node-token"

// TokenSecret renders a bootstrap token as the Secret the API server's
// bootstrap authenticator and the bootstrap signer read.
func TokenSecret(bt bootstraptokenv1.BootstrapToken, now time.Time) *corev1.Secret {
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:     []byte(bt.Token.ID),
		bootstrapapi.BootstrapTokenSecretKey: []byte(bt.Token.Secret),
	}
	if bt.Description != "" {
		data[bootstrapapi.BootstrapTokenDescriptionKey] = []byte(bt.Description)
	}
	switch {
	case bt.Expires != nil:
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(bt.Expires.UTC().Format(time.RFC3339))
	case bt.TTL != nil && bt.TTL.Duration > 0:
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(now.Add(bt.TTL.Duration).UTC().Format(time.RFC3339))
	}
	for _, u := range bt.Usages {
		data[bootstrapapi.BootstrapTokenUsagePrefix+u] = []byte("true")
	}
	if len(bt.Groups) > 0 {
		data[bootstrapapi.BootstrapTokenExtraGroupsKey] = []byte(strings.Join(bt.Groups, ","))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(bt.Token.ID), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data:       data,
	}
}

// CreateTokens creates (or updates) the tokens' Secrets.
func CreateTokens(ctx context.Context, c kubernetes.Interface, tokens []bootstraptokenv1.BootstrapToken) error {
	now := time.Now()
	for _, bt := range tokens {
		s := TokenSecret(bt, now)
		if err := apiclient.CreateOrUpdate(ctx, c.CoreV1().Secrets(s.Namespace).Create, c.CoreV1().Secrets(s.Namespace).Update, s); err != nil {
			return fmt.Errorf("creating bootstrap token %s: %w", bt.Token.ID, err)
		}
	}
	return nil
}

// Token is a bootstrap token as `token list` shows it.
type Token struct {
	ID, Secret, Description string
	Expires                 *time.Time
	Usages, Groups          []string
}

// ListTokens reads every bootstrap token Secret.
func ListTokens(ctx context.Context, c kubernetes.Interface) ([]Token, error) {
	secrets, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(bootstrapapi.SecretTypeBootstrapToken)})
	if err != nil {
		return nil, err
	}
	var out []Token
	for _, s := range secrets.Items {
		t := Token{ID: string(s.Data[bootstrapapi.BootstrapTokenIDKey]), Secret: string(s.Data[bootstrapapi.BootstrapTokenSecretKey]),
			Description: string(s.Data[bootstrapapi.BootstrapTokenDescriptionKey])}
		if exp := string(s.Data[bootstrapapi.BootstrapTokenExpirationKey]); exp != "" {
			if e, err := time.Parse(time.RFC3339, exp); err == nil {
				t.Expires = &e
			}
		}
		for k, v := range s.Data {
			if strings.HasPrefix(k, bootstrapapi.BootstrapTokenUsagePrefix) && string(v) == "true" {
				t.Usages = append(t.Usages, strings.TrimPrefix(k, bootstrapapi.BootstrapTokenUsagePrefix))
			}
		}
		sort.Strings(t.Usages)
		if g := string(s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey]); g != "" {
			t.Groups = strings.Split(g, ",")
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteToken deletes a token given as its ID or as the whole token.
func DeleteToken(ctx context.Context, c kubernetes.Interface, tokenOrID string) (string, error) {
	id := tokenOrID
	if bootstraputil.IsValidBootstrapToken(tokenOrID) {
		id = strings.SplitN(tokenOrID, ".", 2)[0]
	} else if !bootstraputil.IsValidBootstrapTokenID(tokenOrID) {
		return "", fmt.Errorf("%q is neither a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16}) nor a token ID ([a-z0-9]{6})", tokenOrID)
	}
	err := c.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("bootstrap token %q not found", id)
	}
	return id, err
}

// CAHash is the public-key pin of a CA: sha256 over its
// SubjectPublicKeyInfo, as kubeadm's --discovery-token-ca-cert-hash.
func CAHash(ca *x509.Certificate) string {
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ClusterInfo is the kube-public/cluster-info ConfigMap: a kubeconfig with
// the cluster's server and CA and no credentials. The bootstrap signer adds
// one JWS signature per signing token.
func ClusterInfo(server string, caPEM []byte) (*corev1.ConfigMap, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[""] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic},
		Data:       map[string]string{bootstrapapi.KubeConfigKey: string(b)},
	}, nil
}

// CreateClusterInfo publishes cluster-info and lets anonymous users read
// it (and only it), as kubeadm does.
func CreateClusterInfo(ctx context.Context, c kubernetes.Interface, server string, caPEM []byte) error {
	cm, err := ClusterInfo(server, caPEM)
	if err != nil {
		return err
	}
	// Create only: an update would drop the signatures the bootstrap signer
	// added; refresh the kubeconfig key in place when it exists.
	if _, err := c.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		cur, gerr := c.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		if cur.Data == nil {
			cur.Data = map[string]string{}
		}
		cur.Data[bootstrapapi.KubeConfigKey] = cm.Data[bootstrapapi.KubeConfigKey]
		_, err = c.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:bootstrap-signer-clusterinfo", Namespace: metav1.NamespacePublic},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{bootstrapapi.ConfigMapClusterInfo}}},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().Roles(role.Namespace).Create, c.RbacV1().Roles(role.Namespace).Update, role); err != nil {
		return err
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: metav1.NamespacePublic},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "system:anonymous"}},
	}
	return apiclient.CreateOrUpdate(ctx, c.RbacV1().RoleBindings(rb.Namespace).Create, c.RbacV1().RoleBindings(rb.Namespace).Update, rb)
}

// NodeBootstrapRBAC grants bootstrap tokens what joining needs: read
// nodes, post CSRs, have node client CSRs auto-approved, and lets nodes
// renew their own client certificates.
func NodeBootstrapRBAC(ctx context.Context, c kubernetes.Interface, out func(string)) error {
	getNodes := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:get-nodes"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoles().Create, c.RbacV1().ClusterRoles().Update, getNodes); err != nil {
		return err
	}
	bindings := []struct {
		name, role, kind, subject, msg string
	}{
		{"kubeadm:get-nodes", "kubeadm:get-nodes", rbacv1.GroupKind, DefaultTokenGroup, "Configured RBAC rules to allow Node Bootstrap tokens to get nodes"},
		{"kubeadm:kubelet-bootstrap", "system:node-bootstrapper", rbacv1.GroupKind, DefaultTokenGroup, "Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get long term certificate credentials"},
		{"kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", rbacv1.GroupKind, DefaultTokenGroup, "Configured RBAC rules to allow the csrapprover controller automatically approve CSRs from a Node Bootstrap Token"},
		{"kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", rbacv1.GroupKind, "system:nodes", "Configured RBAC rules to allow certificate rotation for all node client certificates in the cluster"},
		{"kubeadm:apiserver-kubelet-client", "system:kubelet-api-admin", rbacv1.UserKind, "kube-apiserver-kubelet-client", "Configured RBAC rules to allow the API server to reach the kubelets (logs, exec, port-forward)"},
	}
	for _, b := range bindings {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: b.name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: b.kind, Name: b.subject}},
		}
		if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings().Create, c.RbacV1().ClusterRoleBindings().Update, crb); err != nil {
			return err
		}
		out(b.msg)
	}
	return nil
}

// JoinCommand is the command a node runs to join.
func JoinCommand(endpoint, token, caHash string, controlPlane bool, certificateKey string) string {
	cmd := fmt.Sprintf("kubeboot join %s --token %s \\\n\t--discovery-token-ca-cert-hash %s", endpoint, token, caHash)
	if controlPlane {
		cmd += " \\\n\t--control-plane"
		if certificateKey != "" {
			cmd += " --certificate-key " + certificateKey
		}
	}
	return cmd
}
