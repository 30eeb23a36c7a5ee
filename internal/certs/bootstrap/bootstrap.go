// Package bootstrap owns what `init` stores in a new cluster for the
// nodes that join it later: the admin RBAC binding, the kubeadm-config
// and kubelet-config ConfigMaps, and the encrypted kubeadm-certs Secret.
package bootstrap

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/addons/proxy"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/copycerts"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
	cryptoutil "k8s.io/kubernetes/cmd/kubeadm/app/util/crypto"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/host/hardening"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/kube/discovery"
	"github.com/kubeboot/kubeboot/pkg/config"
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

// UploadPodNetwork stores the pod network's engines in
// kube-system/kubeboot-network, for the nodes that join.
func UploadPodNetwork(ctx context.Context, c kubernetes.Interface, cfg *config.Config) error {
	if err := configMap(ctx, c, config.PodNetworkConfigMap, cfg.PodNetwork.Data()); err != nil {
		return err
	}
	return readableBy(ctx, c, "kubeboot:nodes-network", "configmaps", config.PodNetworkConfigMap, discovery.DefaultTokenGroup, "system:nodes")
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

// NewCertificateKey returns a random AES-256 key, hex-encoded, as kubeadm
// makes it.
func NewCertificateKey() (string, error) { return copycerts.CreateCertificateKey() }

// controlPlaneCertFiles are the files a joining control-plane node needs,
// relative to the certificates dir. In the Secret, "/" becomes "-", as
// kubeadm names them.
var controlPlaneCertFiles = []string{"ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "sa.key", "sa.pub", "etcd/ca.crt", "etcd/ca.key"}

// optionalCertFiles travel with them when the first control plane has
// them: the key that encrypts Secrets at rest (--hardened), which every API
// server of the cluster must share. kubeadm has no such file; a kubeadm
// join ignores the extra entry.
var optionalCertFiles = []string{hardening.EncryptionConfigName}

// SharedFile is a file every control plane of a cluster shares, by its
// name in the certificates dir.
type SharedFile struct {
	Name string
	// Optional files are shared when the cluster has them.
	Optional bool
}

// secretKey is the file's key in kubeadm-certs: "/" becomes "-", as
// kubeadm names them.
func (f SharedFile) secretKey() string { return strings.ReplaceAll(f.Name, "/", "-") }

// SharedFileMode is the mode a shared file is written with: certificates
// and the public key 0644, keys and the encryption configuration 0600.
func SharedFileMode(name string) os.FileMode {
	if strings.HasSuffix(name, ".crt") || strings.HasSuffix(name, ".pub") {
		return 0o644
	}
	return 0o600
}

// SharedFiles are the files every control plane of the cluster shares:
// what kubeadm-certs carries and an etcd snapshot must keep.
func SharedFiles(cfg *config.Config) []SharedFile {
	var out []SharedFile
	for _, f := range controlPlaneCertFiles {
		if cfg.Cluster.Etcd.External == nil || !strings.HasPrefix(f, "etcd/") {
			out = append(out, SharedFile{Name: f})
		}
	}
	for _, f := range optionalCertFiles {
		out = append(out, SharedFile{Name: f, Optional: true})
	}
	return out
}

// UploadCerts encrypts the shared control-plane keys with the certificate
// key into kube-system/kubeadm-certs, owned by a 2 h bootstrap token so
// that the Secret is garbage-collected when the token expires. The same
// Secret as kubeadm's copycerts.UploadCerts (kubeadm's cryptoutil, names,
// owner token), written by kubeboot because it carries one file more, the
// encryption key of Secrets at rest, and reads under the root prefix.
func UploadCerts(ctx context.Context, c kubernetes.Interface, fs fsys.FS, cfg *config.Config, certificateKey string) error {
	key, err := hex.DecodeString(certificateKey)
	if err != nil || len(key) != 32 {
		return fmt.Errorf("the certificate key must be 64 hexadecimal characters")
	}
	data := map[string][]byte{}
	for _, f := range SharedFiles(cfg) {
		b, err := fs.ReadFile(path.Join(cfg.Cluster.CertificatesDir, f.Name))
		if os.IsNotExist(err) && f.Optional {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", fs.Path(path.Join(cfg.Cluster.CertificatesDir, f.Name)), err)
		}
		enc, err := cryptoutil.EncryptBytes(b, key)
		if err != nil {
			return err
		}
		data[f.secretKey()] = enc
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
	tokenSecret := bootstraptokenv1.BootstrapTokenToSecret(&bt)
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
	NetworkPolicyRole  = "kubeboot:network-policy"
)

// NodeRBAC lets every node (group system:nodes) run kube-proxy with its
// own credentials, since kube-proxy runs
// on the host rather than as a DaemonSet with a ServiceAccount
// (system:node-proxier: read Services, EndpointSlices and Nodes), and
// delete its own Node object when it is reset (the NodeRestriction
// admission plugin limits a node to its own Node).
//
// With networkPolicy, nodes may also read what kube-router's network
// policy controller enforces on their pods: Namespaces and
// NetworkPolicies (a node reads Pods already).
func NodeRBAC(ctx context.Context, c kubernetes.Interface, networkPolicy bool) error {
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
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings().Create, c.RbacV1().ClusterRoleBindings().Update, del); err != nil || !networkPolicy {
		return err
	}
	read := []string{"get", "list", "watch"}
	policy := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyRole},
		Rules: []rbacv1.PolicyRule{
			{Verbs: read, APIGroups: []string{""}, Resources: []string{"namespaces", "pods"}},
			{Verbs: read, APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}},
		},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoles().Create, c.RbacV1().ClusterRoles().Update, policy); err != nil {
		return err
	}
	bind := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: NetworkPolicyRole},
		Subjects:   nodes,
	}
	return apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings().Create, c.RbacV1().ClusterRoleBindings().Update, bind)
}

// CertFile is one downloaded file, relative to the certificates dir.
type CertFile struct {
	Name string
	Data []byte
	Mode os.FileMode
}

// DownloadCerts reads kube-system/kubeadm-certs and decrypts the shared
// control-plane keys with the certificate key, as kubeadm's join does. A
// Secret that is gone (it lives two hours) or a key that does not open it
// is refused with what to do.
func DownloadCerts(ctx context.Context, c kubernetes.Interface, cfg *config.Config, key []byte) ([]CertFile, error) {
	const again = "run `kubeboot init phase upload-certs --upload-certs` on a control-plane node: it uploads them again and prints a new certificate key"
	s, err := c.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, KubeadmCertsSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the Secret %q with the control-plane certificates is not in the %q namespace: it is deleted 2 hours after the upload. To join a control plane, %s",
			KubeadmCertsSecret, metav1.NamespaceSystem, again)
	case err != nil:
		return nil, fmt.Errorf("reading the Secret %q: %w", KubeadmCertsSecret, err)
	}
	var out []CertFile
	for _, f := range SharedFiles(cfg) {
		enc, ok := s.Data[f.secretKey()]
		switch {
		case !ok && f.Optional:
			continue
		case !ok:
			return nil, fmt.Errorf("the Secret %q lacks %s: %s", KubeadmCertsSecret, f.Name, again)
		}
		data, err := cryptoutil.DecryptBytes(enc, key)
		if err != nil {
			return nil, fmt.Errorf("the certificate key does not decrypt %s in the Secret %q (%v): it is not the key the certificates were uploaded with. Give the key `kubeboot init --upload-certs` printed, or %s",
				f.Name, KubeadmCertsSecret, err, again)
		}
		out = append(out, CertFile{Name: f.Name, Data: data, Mode: SharedFileMode(f.Name)})
	}
	return out, nil
}
