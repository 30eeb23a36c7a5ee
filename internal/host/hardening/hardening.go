// Package hardening is what `kubeboot init --hardened` turns on: the
// settings of the CIS Kubernetes benchmark that kubeadm leaves off, and the
// files they name.
//
// Every setting is plain kubeadm v1beta4 configuration (extraArgs of the
// control-plane components, the KubeletConfiguration's serverTLSBootstrap),
// so the cluster's kubeadm-config and kubelet-config ConfigMaps carry them
// to every node that joins, a configuration file can say the same without
// the flag (`kubeboot config print init-defaults --hardened` prints it), and
// an operator can turn any one of them off by setting it otherwise.
//
// The files are made where the settings name kubeboot's own paths: the
// audit policy (Policy), and the encryption configuration of Secrets with a
// new key on the first control plane; a joining control plane gets that
// key with the certificates (kubeadm-certs) or from the operator, never a
// new one, or two API servers would write Secrets the other cannot read.
package hardening

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path"

	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// The node paths of the files the hardened settings name.
const (
	// EncryptionConfigName is the encryption configuration's file name in
	// the certificates dir: a secret like the keys next to it, copied
	// with them to joining control planes.
	EncryptionConfigName = "encryption-config.yaml"
)

// Flag names of the API server this package sets and reads.
const (
	FlagAuditPolicy      = "audit-policy-file"
	FlagEncryptionConfig = "encryption-provider-config"
)

// EncryptionConfigFile is the node path of the encryption configuration.
func EncryptionConfigFile(c *config.Config) string {
	return path.Join(c.Cluster.CertificatesDir, EncryptionConfigName)
}

// Apply sets the hardened settings on a defaulted configuration, each only
// where the configuration does not set it already: what the operator wrote
// wins. It returns the settings it added, as "component: flag=value".
func Apply(c *config.Config) []string {
	var added []string
	set := func(component string, args *[]kubeadmv1.Arg, name, value string) {
		for _, a := range *args {
			if a.Name == name {
				return
			}
		}
		*args = append(*args, kubeadmv1.Arg{Name: name, Value: value})
		added = append(added, fmt.Sprintf("%s: --%s=%s", component, name, value))
	}
	cl := c.Cluster
	api := &cl.APIServer.ExtraArgs
	// CIS 1.2.16-1.2.19: an audit log, kept 30 days in 10 files of 100 MB.
	set("kube-apiserver", api, FlagAuditPolicy, node.AuditPolicyFile)
	set("kube-apiserver", api, "audit-log-path", node.AuditLogFile)
	set("kube-apiserver", api, "audit-log-maxage", "30")
	set("kube-apiserver", api, "audit-log-maxbackup", "10")
	set("kube-apiserver", api, "audit-log-maxsize", "100")
	// CIS 1.2.27/1.2.28: Secrets encrypted at rest.
	set("kube-apiserver", api, FlagEncryptionConfig, EncryptionConfigFile(c))
	// CIS 1.2.4 (1.2.5 in older releases): the API server verifies the
	// kubelets' serving certificates, which the cluster CA then signs.
	set("kube-apiserver", api, "kubelet-certificate-authority", path.Join(cl.CertificatesDir, "ca.crt"))
	// CIS 1.2.30: service-account tokens expire when they say, not a year
	// later (the kubelet renews projected tokens at 80% of their life;
	// a client that reads its token once at start fails after an hour).
	set("kube-apiserver", api, "service-account-extend-token-expiration", "false")
	// CIS 1.2.15, 1.3.2, 1.4.1: no profiling endpoints.
	set("kube-apiserver", api, "profiling", "false")
	set("kube-controller-manager", &cl.ControllerManager.ExtraArgs, "profiling", "false")
	set("kube-scheduler", &cl.Scheduler.ExtraArgs, "profiling", "false")
	// CIS 4.2.11 (RotateKubeletServerCertificate): kubelets ask the
	// cluster for their serving certificates; the csr-approver component
	// approves those of known nodes.
	// (A boolean: a document's false cannot be told from no value, so
	// --hardened always sets it; leave --hardened out to keep it false.)
	if c.Kubelet == nil {
		c.Kubelet = &kubeletv1beta1.KubeletConfiguration{}
	}
	if !c.Kubelet.ServerTLSBootstrap {
		c.Kubelet.ServerTLSBootstrap = true
		added = append(added, "kubelet: serverTLSBootstrap=true")
	}
	return added
}

// Arg returns the value of an extraArg.
func Arg(args []kubeadmv1.Arg, name string) (string, bool) {
	v, ok := "", false
	for _, a := range args {
		if a.Name == name {
			v, ok = a.Value, true // the last one wins, as in the renderer
		}
	}
	return v, ok
}

// auditPolicy records who did what without ever recording a Secret's,
// ConfigMap's or token's content, and leaves out the read-only traffic
// every node and controller makes all the time (health checks, leases,
// events, kube-proxy's watches), which would otherwise be most of the log.
const auditPolicy = `# The audit policy kubeboot writes for --hardened. Edit it freely: kubeboot
# writes it only when it is missing.
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
- RequestReceived
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/version", "/metrics"]
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
  resources:
  - group: ""
    resources: ["endpoints", "services", "services/status"]
  - group: "discovery.k8s.io"
    resources: ["endpointslices"]
- level: None
  verbs: ["get", "update"]
  resources:
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: None
  resources:
  - group: ""
    resources: ["events"]
  - group: "events.k8s.io"
    resources: ["events"]
# Never the content of credentials and configuration: who, what, when.
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "configmaps", "serviceaccounts/token"]
  - group: "authentication.k8s.io"
    resources: ["tokenreviews"]
  - group: "certificates.k8s.io"
    resources: ["certificatesigningrequests"]
# Changes with what was asked for.
- level: Request
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
# Reads, and everything else: metadata only.
- level: Metadata
`

// AuditPolicy is the audit policy kubeboot writes.
func AuditPolicy() []byte { return []byte(auditPolicy) }

// NewEncryptionConfig is an EncryptionConfiguration that encrypts Secrets
// with a new random 32-byte secretbox key (XSalsa20-Poly1305, what the
// Kubernetes documentation recommends among the local providers), and
// still reads Secrets written before encryption was on (identity).
func NewEncryptionConfig() ([]byte, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	ec := apiserverv1.EncryptionConfiguration{
		Resources: []apiserverv1.ResourceConfiguration{{
			Resources: []string{"secrets"},
			Providers: []apiserverv1.ProviderConfiguration{
				{Secretbox: &apiserverv1.SecretboxConfiguration{Keys: []apiserverv1.Key{{Name: "key1", Secret: base64.StdEncoding.EncodeToString(key)}}}},
				{Identity: &apiserverv1.IdentityConfiguration{}},
			},
		}},
	}
	ec.APIVersion, ec.Kind = apiserverv1.SchemeGroupVersion.String(), "EncryptionConfiguration"
	return yaml.Marshal(ec)
}

// EncryptionConfigMissing reports whether the API server's flags name an
// encryption configuration at kubeboot's path that this node lacks.
func EncryptionConfigMissing(fs fsys.FS, c *config.Config) bool {
	p, ok := Arg(c.Cluster.APIServer.ExtraArgs, FlagEncryptionConfig)
	return ok && p == EncryptionConfigFile(c) && !fsys.Exists(fs, p)
}

// MissingKeyError is the refusal of a joining control plane that lacks
// the cluster's encryption configuration.
func MissingKeyError(fs fsys.FS, c *config.Config) error {
	return fmt.Errorf("the cluster encrypts Secrets with the key in %s, which this node lacks: join with the --certificate-key `kubeboot init --upload-certs` printed (the key travels with the certificates), or copy the file from a control-plane node with mode 0600",
		fs.Path(EncryptionConfigFile(c)))
}

// Files makes the files the API server's flags name at kubeboot's paths,
// when they are missing: the audit policy, and on the first control plane
// (newKey) the encryption configuration. A joining control plane without
// the encryption configuration is refused with what to do. Files the
// operator put there are kept.
func Files(fs fsys.FS, c *config.Config, newKey bool, logf func(string, ...any)) error {
	args := c.Cluster.APIServer.ExtraArgs
	if p, ok := Arg(args, FlagAuditPolicy); ok && p == node.AuditPolicyFile && !fsys.Exists(fs, p) {
		logf("[control-plane] Writing the audit policy to %q", fs.Path(p))
		if err := fs.MkdirAll(path.Dir(p), 0o755); err != nil {
			return err
		}
		if err := fs.WriteFile(p, AuditPolicy(), 0o600); err != nil {
			return err
		}
	}
	if !EncryptionConfigMissing(fs, c) {
		return nil
	}
	p := EncryptionConfigFile(c)
	if !newKey {
		return MissingKeyError(fs, c)
	}
	logf("[control-plane] Writing the encryption configuration of Secrets, with a new key, to %q", fs.Path(p))
	b, err := NewEncryptionConfig()
	if err != nil {
		return err
	}
	if err := fs.MkdirAll(path.Dir(p), 0o700); err != nil {
		return err
	}
	return fs.WriteFile(p, b, 0o600)
}
