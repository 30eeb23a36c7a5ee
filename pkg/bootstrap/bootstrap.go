// Package bootstrap owns what `init` stores in a new cluster for the
// nodes that join it later: the admin RBAC binding, the kubeadm-config
// and kubelet-config ConfigMaps, and the encrypted kubeadm-certs Secret.
package bootstrap

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/addons/proxy"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/pkg/apiclient"
	"github.com/kubeboot/kubeboot/pkg/config"
	"github.com/kubeboot/kubeboot/pkg/discovery"
	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/kubeconfig"
	"github.com/kubeboot/kubeboot/pkg/node"
)

// Names kubeadm gives these objects; joining nodes look them up.
const (
	ClusterAdminsGroup = "kubeadm:cluster-admins"
	KubeadmConfigMap   = "kubeadm-config"
	KubeletConfigMap   = "kubelet-config"
	KubeadmCertsSecret = "kubeadm-certs"
	CertsTokenTTL      = 2 * time.Hour
)

// EnsureAdminBinding binds the kubeadm:cluster-admins group (admin.conf's)
// to cluster-admin. It must be called with super-admin credentials: until
// the binding exists, admin.conf can do nothing.
func EnsureAdminBinding(ctx context.Context, super kubernetes.Interface) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterAdminsGroup},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: ClusterAdminsGroup}},
	}
	return apiclient.CreateOrUpdate(ctx, super.RbacV1().ClusterRoleBindings().Create, super.RbacV1().ClusterRoleBindings().Update, crb)
}

// readableBy lets the groups get one object of a namespace.
func readableBy(ctx context.Context, c kubernetes.Interface, roleName, resource, object string, groups ...string) error {
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: roleName, Namespace: metav1.NamespaceSystem},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{resource}, ResourceNames: []string{object}}},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().Roles(role.Namespace).Create, c.RbacV1().Roles(role.Namespace).Update, role); err != nil {
		return err
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: roleName, Namespace: metav1.NamespaceSystem},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
	}
	for _, g := range groups {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: g})
	}
	return apiclient.CreateOrUpdate(ctx, c.RbacV1().RoleBindings(rb.Namespace).Create, c.RbacV1().RoleBindings(rb.Namespace).Update, rb)
}

func configMap(ctx context.Context, c kubernetes.Interface, name string, data map[string]string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem}, Data: data}
	return apiclient.CreateOrUpdate(ctx, c.CoreV1().ConfigMaps(cm.Namespace).Create, c.CoreV1().ConfigMaps(cm.Namespace).Update, cm)
}

// UploadKubeadmConfig stores the ClusterConfiguration in
// kube-system/kubeadm-config, readable by joining nodes.
func UploadKubeadmConfig(ctx context.Context, c kubernetes.Interface, cfg *config.Config) error {
	only := &config.Config{Cluster: cfg.Cluster.DeepCopy()}
	b, err := only.Marshal()
	if err != nil {
		return err
	}
	if err := configMap(ctx, c, KubeadmConfigMap, map[string]string{config.KindCluster: string(b)}); err != nil {
		return err
	}
	return readableBy(ctx, c, "kubeadm:nodes-kubeadm-config", "configmaps", KubeadmConfigMap, discovery.DefaultTokenGroup, "system:nodes")
}

// UploadKubeletConfig stores the cluster-wide KubeletConfiguration in
// kube-system/kubelet-config.
func UploadKubeletConfig(ctx context.Context, c kubernetes.Interface, cfg *config.Config) error {
	b, err := yaml.Marshal(node.KubeletConfiguration(cfg))
	if err != nil {
		return err
	}
	if err := configMap(ctx, c, KubeletConfigMap, map[string]string{"kubelet": string(b)}); err != nil {
		return err
	}
	return readableBy(ctx, c, "kubeadm:kubelet-config", "configmaps", KubeletConfigMap, discovery.DefaultTokenGroup, "system:nodes")
}

// NewCertificateKey returns a random AES-256 key, hex-encoded.
func NewCertificateKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Encrypt seals data with AES-GCM, the nonce in front, as kubeadm does.
func Encrypt(data, key []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return gcm.Seal(nonce, nonce, data, nil), nil
}

// Decrypt opens what Encrypt sealed.
func Decrypt(data, key []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	if len(data) < gcm.NonceSize() {
		return nil, fmt.Errorf("ciphertext too short")
	}
	return gcm.Open(nil, data[:gcm.NonceSize()], data[gcm.NonceSize():], nil)
}

// controlPlaneCertFiles are the files a joining control-plane node needs,
// relative to the certificates dir.
var controlPlaneCertFiles = []string{"ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "sa.key", "sa.pub", "etcd/ca.crt", "etcd/ca.key"}

// UploadCerts encrypts the shared control-plane keys with the certificate
// key into kube-system/kubeadm-certs, owned by a 2 h bootstrap token so
// that the Secret is garbage-collected when the token expires.
func UploadCerts(ctx context.Context, c kubernetes.Interface, fs fsys.FS, cfg *config.Config, certificateKey string) error {
	key, err := hex.DecodeString(certificateKey)
	if err != nil || len(key) != 32 {
		return fmt.Errorf("the certificate key must be 64 hexadecimal characters")
	}
	data := map[string][]byte{}
	for _, f := range controlPlaneCertFiles {
		if cfg.Cluster.Etcd.External != nil && strings.HasPrefix(f, "etcd/") {
			continue
		}
		b, err := fs.ReadFile(path.Join(cfg.Cluster.CertificatesDir, f))
		if err != nil {
			return fmt.Errorf("reading %s: %w", fs.Path(path.Join(cfg.Cluster.CertificatesDir, f)), err)
		}
		enc, err := Encrypt(b, key)
		if err != nil {
			return err
		}
		data[strings.ReplaceAll(f, "/", "-")] = enc
	}
	tokStr, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return err
	}
	tok, err := bootstraptokenv1.NewBootstrapTokenString(tokStr)
	if err != nil {
		return err
	}
	bt := bootstraptokenv1.BootstrapToken{Token: tok, Description: "Proxy for managing TTL for the kubeadm-certs secret", TTL: &metav1.Duration{Duration: CertsTokenTTL}}
	tokenSecret := discovery.TokenSecret(bt, time.Now())
	created, err := c.CoreV1().Secrets(tokenSecret.Namespace).Create(ctx, tokenSecret, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the token that owns %s: %w", KubeadmCertsSecret, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: KubeadmCertsSecret, Namespace: metav1.NamespaceSystem,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(created, corev1.SchemeGroupVersion.WithKind("Secret"))}},
		Data: data,
	}
	if err := apiclient.CreateOrUpdate(ctx, c.CoreV1().Secrets(secret.Namespace).Create, c.CoreV1().Secrets(secret.Namespace).Update, secret); err != nil {
		return err
	}
	return readableBy(ctx, c, "kubeadm:kubeadm-certs", "secrets", KubeadmCertsSecret, discovery.DefaultTokenGroup)
}

// UploadKubeProxyConfig stores the cluster-wide kube-proxy configuration
// as kubeadm's kube-proxy add-on does (ConfigMap kube-system/kube-proxy,
// from kubeadm's own template, readable by joining nodes), with the
// add-on's ServiceAccount and its binding to system:node-proxier: a node
// joined with upstream kubeadm reads it, and a kube-proxy DaemonSet the
// operator adds for such nodes runs with it. kubeboot's nodes run
// kube-proxy on the host and read the same configuration when they join.
func UploadKubeProxyConfig(ctx context.Context, c kubernetes.Interface, cfg *config.Config) error {
	b, err := yaml.Marshal(node.ClusterKubeProxyConfiguration(cfg))
	if err != nil {
		return err
	}
	var indented strings.Builder
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		indented.WriteString("    " + l + "\n")
	}
	manifest, err := kubeadmutil.ParseTemplate(proxy.KubeProxyConfigMap19, struct {
		ControlPlaneEndpoint, ProxyConfig, ProxyConfigMap, ProxyConfigMapKey string
	}{
		ControlPlaneEndpoint: kubeconfig.ServerURL(cfg),
		ProxyConfig:          indented.String(),
		ProxyConfigMap:       kubeadmconstants.KubeProxyConfigMap,
		ProxyConfigMapKey:    kubeadmconstants.KubeProxyConfigMapKey,
	})
	if err != nil {
		return fmt.Errorf("rendering the kube-proxy ConfigMap: %w", err)
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.UnmarshalStrict(manifest, cm); err != nil {
		return fmt.Errorf("decoding the kube-proxy ConfigMap: %w", err)
	}
	cm.Namespace = metav1.NamespaceSystem
	if err := apiclient.CreateOrUpdate(ctx, c.CoreV1().ConfigMaps(cm.Namespace).Create, c.CoreV1().ConfigMaps(cm.Namespace).Update, cm); err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: proxy.KubeProxyServiceAccountName, Namespace: metav1.NamespaceSystem}}
	if err := apiclient.CreateOrUpdate(ctx, c.CoreV1().ServiceAccounts(sa.Namespace).Create, c.CoreV1().ServiceAccounts(sa.Namespace).Update, sa); err != nil {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kubeadmconstants.KubeProxyClusterRoleBindingName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubeadmconstants.KubeProxyClusterRoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings().Create, c.RbacV1().ClusterRoleBindings().Update, crb); err != nil {
		return err
	}
	return readableBy(ctx, c, proxy.KubeProxyConfigMapRoleName, "configmaps", kubeadmconstants.KubeProxyConfigMap, discovery.DefaultTokenGroup)
}

// RBAC names of what kubeboot's nodes do beyond a kubeadm node.
const (
	NodeProxierBinding = "kubeboot:node-proxier"
	NodeSelfDeleteRole = "kubeboot:node-self-delete"
)

// NodeRBAC lets every node (group system:nodes) run kube-proxy and
// kubeboot's network agent with its own credentials, since kube-proxy runs
// on the host rather than as a DaemonSet with a ServiceAccount
// (system:node-proxier: read Services, EndpointSlices and Nodes), and
// delete its own Node object when it is reset (the NodeRestriction
// admission plugin limits a node to its own Node).
func NodeRBAC(ctx context.Context, c kubernetes.Interface) error {
	nodes := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}}
	proxier := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: NodeProxierBinding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubeadmconstants.KubeProxyClusterRoleName},
		Subjects:   nodes,
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings().Create, c.RbacV1().ClusterRoleBindings().Update, proxier); err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: NodeSelfDeleteRole},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"nodes"}}},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoles().Create, c.RbacV1().ClusterRoles().Update, role); err != nil {
		return err
	}
	del := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: NodeSelfDeleteRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: NodeSelfDeleteRole},
		Subjects:   nodes,
	}
	return apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings().Create, c.RbacV1().ClusterRoleBindings().Update, del)
}
