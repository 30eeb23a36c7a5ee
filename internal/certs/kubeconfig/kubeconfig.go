// Package kubeconfig owns the kubeconfig files kubeboot writes for each
// identity (admin, super-admin, kubelet, controller-manager, scheduler):
// which files, whose identity, which server URL, and how existing files
// are checked and renewed.
package kubeconfig

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"path"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Admin is the cluster administrator's kubeconfig file, in
// node.KubernetesDir (its node path is node.AdminKubeconfig).
const Admin = kubeadmconstants.AdminKubeConfigFileName

// Spec is one kubeconfig file and the identity it carries.
type Spec struct {
	// Name is the phase name ("admin").
	Name     string
	FileName string
	// ClientName is the certificate's CN; Organizations its O.
	ClientName    string
	Organizations []string
	Short         string
	// Renewable files carry certificates kubeboot re-issues on renewal;
	// kubelet.conf is left to the kubelet's own rotation, as kubeadm does.
	Renewable bool
	// Local files point at this node's own API server rather than at the
	// control-plane endpoint, as kubeadm v1.37 writes kubelet.conf,
	// controller-manager.conf and scheduler.conf: a control plane's own
	// components need no load balancer or VIP to reach their API server.
	Local bool
}

// Server is the API server URL the file names.
func (s Spec) Server(c *config.Config) string {
	if s.Local {
		return LocalURL(c)
	}
	return ServerURL(c)
}

// List returns the kubeconfig files of a control-plane node, in kubeadm's
// order. A nil configuration gives the list with an empty node name.
func List(c *config.Config) []Spec {
	node := ""
	if c != nil && c.Init != nil {
		node = c.Init.NodeRegistration.Name
	}
	return []Spec{
		{Name: "admin", FileName: Admin, ClientName: "kubernetes-admin", Organizations: []string{"kubeadm:cluster-admins"}, Renewable: true,
			Short: "Generate a kubeconfig file for the admin to use and for kubeboot itself"},
		{Name: "super-admin", FileName: "super-admin.conf", ClientName: "kubernetes-super-admin", Organizations: []string{"system:masters"}, Renewable: true,
			Short: "Generate a kubeconfig file for the super-admin (bypasses RBAC)"},
		{Name: "kubelet", FileName: "kubelet.conf", ClientName: "system:node:" + node, Organizations: []string{"system:nodes"}, Local: true,
			Short: "Generate a kubeconfig file for the kubelet to use *only* for cluster bootstrapping purposes"},
		{Name: "controller-manager", FileName: "controller-manager.conf", ClientName: "system:kube-controller-manager", Renewable: true, Local: true,
			Short: "Generate a kubeconfig file for the controller manager to use"},
		{Name: "scheduler", FileName: "scheduler.conf", ClientName: "system:kube-scheduler", Renewable: true, Local: true,
			Short: "Generate a kubeconfig file for the scheduler to use"},
		// kube-proxy runs on the host under the node daemon rather than as a
		// DaemonSet, so it gets a kubeconfig of its own (its identity is
		// bound to system:node-proxier by the default RBAC policy).
		{Name: "kube-proxy", FileName: "kube-proxy.conf", ClientName: "system:kube-proxy", Renewable: true,
			Short: "Generate a kubeconfig file for kube-proxy to use"},
	}
}

// Renewable are the kubeconfig files whose certificates kubeboot checks
// and renews.
func Renewable(c *config.Config) []Spec {
	var out []Spec
	for _, s := range List(c) {
		if s.Renewable {
			out = append(out, s)
		}
	}
	return out
}

// ServerURL is the control-plane endpoint as a URL: the
// controlPlaneEndpoint when one is given (with the bind port when it names
// no port), else this node's advertise address. admin.conf,
// super-admin.conf, kube-proxy.conf and cluster-info name it.
func ServerURL(c *config.Config) string {
	port := strconv.Itoa(int(c.Init.LocalAPIEndpoint.BindPort))
	if ep := c.Cluster.ControlPlaneEndpoint; ep != "" {
		if h, p, err := net.SplitHostPort(ep); err == nil {
			return "https://" + net.JoinHostPort(h, p)
		}
		return "https://" + net.JoinHostPort(ep, port)
	}
	return "https://" + net.JoinHostPort(c.Init.LocalAPIEndpoint.AdvertiseAddress, port)
}

// LocalURL is this node's own API server: its advertise address and bind
// port (kubeadm's LocalAPIEndpoint).
func LocalURL(c *config.Config) string {
	e := c.Init.LocalAPIEndpoint
	return "https://" + net.JoinHostPort(e.AdvertiseAddress, strconv.Itoa(int(e.BindPort)))
}

// Build returns a kubeconfig with one cluster, one user and one context,
// made by kubeadm's own kubeconfigutil.
func Build(server, clusterName string, ca *x509.Certificate, user string, kp *pki.KeyPair) (*clientcmdapi.Config, error) {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(kp.Key)
	if err != nil {
		return nil, err
	}
	return kubeconfigutil.CreateWithCerts(server, clusterName, user, pki.EncodeCertPEM(ca), keyPEM, pki.EncodeCertPEM(kp.Cert)), nil
}

// Writer creates the kubeconfig files of a configuration.
type Writer struct {
	FS  fsys.FS
	Cfg *config.Config
	PKI *pki.Generator
	Out io.Writer
}

func (w *Writer) logf(format string, args ...any) {
	if w.Out != nil {
		fmt.Fprintf(w.Out, format+"\n", args...)
	}
}

// EnsureAll writes every kubeconfig file of the list.
func (w *Writer) EnsureAll() error {
	for _, s := range List(w.Cfg) {
		if err := w.Ensure(s); err != nil {
			return err
		}
	}
	return nil
}

// Ensure writes one kubeconfig file, or checks the existing one: the same
// CA and server URL are required, anything else is an error naming the
// file (a silent rewrite could lock an operator out, a silent reuse could
// point a component at the wrong cluster).
func (w *Writer) Ensure(s Spec) error {
	file := path.Join(node.KubernetesDir, s.FileName)
	ca, err := w.PKI.CA("ca")
	if err != nil {
		return err
	}
	server := s.Server(w.Cfg)
	if fsys.Exists(w.FS, file) {
		if err := w.check(file, ca.Cert, server); err != nil {
			return err
		}
		w.logf("[kubeconfig] Using existing kubeconfig file: %q", w.FS.Path(file))
		return nil
	}
	w.logf("[kubeconfig] Writing %q kubeconfig file", s.FileName)
	kp, err := w.PKI.NewClientKeyPair("ca", s.ClientName, s.Organizations)
	if err != nil {
		return err
	}
	kc, err := Build(server, w.Cfg.Cluster.ClusterName, ca.Cert, s.ClientName, kp)
	if err != nil {
		return err
	}
	return w.write(file, kc)
}

func (w *Writer) write(file string, kc *clientcmdapi.Config) error {
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	if err := w.FS.MkdirAll(node.KubernetesDir, 0o755); err != nil {
		return err
	}
	return w.FS.WriteFile(file, b, 0o600)
}

// Load reads a kubeconfig file and returns it with its current cluster and
// user.
func (w *Writer) Load(file string) (*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo, error) {
	b, err := w.FS.ReadFile(file)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading %s: %w", w.FS.Path(file), err)
	}
	kc, err := clientcmd.Load(b)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s is not a valid kubeconfig: %w", w.FS.Path(file), err)
	}
	ctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok {
		return nil, nil, nil, fmt.Errorf("%s has no current context", w.FS.Path(file))
	}
	cl, ok := kc.Clusters[ctx.Cluster]
	if !ok {
		return nil, nil, nil, fmt.Errorf("%s: context %q names the missing cluster %q", w.FS.Path(file), kc.CurrentContext, ctx.Cluster)
	}
	return kc, cl, kc.AuthInfos[ctx.AuthInfo], nil
}

func (w *Writer) check(file string, ca *x509.Certificate, server string) error {
	_, cl, _, err := w.Load(file)
	if err != nil {
		return err
	}
	if !bytes.Equal(bytes.TrimSpace(cl.CertificateAuthorityData), bytes.TrimSpace(pki.EncodeCertPEM(ca))) {
		return fmt.Errorf("%s exists but trusts another CA than %s: remove it to have it regenerated", w.FS.Path(file), w.FS.Path(path.Join(w.Cfg.Cluster.CertificatesDir, "ca.crt")))
	}
	if cl.Server != server {
		return fmt.Errorf("%s exists but points at %s, the configuration says %s: remove it to have it regenerated", w.FS.Path(file), cl.Server, server)
	}
	return nil
}

// ClientCert returns the client certificate embedded in a kubeconfig file.
func (w *Writer) ClientCert(file string) (*x509.Certificate, error) {
	_, _, user, err := w.Load(file)
	if err != nil {
		return nil, err
	}
	if user == nil || len(user.ClientCertificateData) == 0 {
		return nil, fmt.Errorf("%s has no embedded client certificate", w.FS.Path(file))
	}
	certs, err := certutil.ParseCertsPEM(user.ClientCertificateData)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("%s: unreadable client certificate: %v", w.FS.Path(file), err)
	}
	return certs[0], nil
}

// Renew re-issues the client certificate of a kubeconfig file, keeping
// its identity, server and CA.
func (w *Writer) Renew(s Spec) error {
	file := path.Join(node.KubernetesDir, s.FileName)
	kc, _, user, err := w.Load(file)
	if err != nil {
		return err
	}
	old, err := w.ClientCert(file)
	if err != nil {
		return err
	}
	ca, err := w.PKI.CA("ca")
	if err != nil {
		return err
	}
	if ca.Key == nil {
		return fmt.Errorf("%s is signed by the external CA (ca.key is absent): renew it with that CA", s.FileName)
	}
	kp, err := w.PKI.RenewFrom(ca, old)
	if err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(kp.Key)
	if err != nil {
		return err
	}
	user.ClientCertificateData = pki.EncodeCertPEM(kp.Cert)
	user.ClientKeyData = keyPEM
	return w.write(file, kc)
}
