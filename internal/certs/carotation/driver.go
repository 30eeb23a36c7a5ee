package carotation

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/poll"
	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
)

// DefaultTrustPeriod is how long every node trusts both CAs before the new
// one signs: client-go reloads a CA file every 5 minutes (the
// ClientsAllowCARotation feature, on by default since v1.36), and the
// kubelet refreshes the pods' kube-root-ca.crt within a minute.
const DefaultTrustPeriod = 6 * time.Minute

// nextBase is the new CA, staged in the certificates dir between the
// trust and switch steps.
const nextBase = "ca-next"

// SignerFile is the signing CA alone, which kube-controller-manager signs
// with while ca.crt holds two CAs: its signers require exactly one
// certificate in --cluster-signing-cert-file (kubeadm's ca.crt otherwise).
const SignerFile = "ca-signer.crt"

const controlPlaneLabel = "node-role.kubernetes.io/control-plane"

// Driver rotates the cluster CA from the control plane.
type Driver struct {
	Gen *pki.Generator
	KW  *kubeconfig.Writer
	// Kubeconfig is the admin kubeconfig (a host path), read anew for
	// each call: the rotation changes the CA it trusts.
	Kubeconfig string
	// TrustPeriod is how long both CAs are trusted before the switch.
	TrustPeriod time.Duration
	// NodeTimeout bounds the wait for every node to reach a step.
	NodeTimeout time.Duration
	Logf        func(format string, args ...any)
	// Poll is the interval of the waits (default 2 s).
	Poll time.Duration
	// SigningCert points kube-controller-manager's
	// --cluster-signing-cert-file at a file (node path) and waits until it
	// runs with it again.
	SigningCert func(ctx context.Context, certFile string) error
}

func (d *Driver) fs() fsys.FS { return d.Gen.FS }

func (d *Driver) file(base string) string { return path.Join(d.Gen.Dir(), base) }

func (d *Driver) cp() *ControlPlane {
	return &ControlPlane{Gen: d.Gen, KW: d.KW, SigningCert: d.SigningCert, Logf: d.Logf}
}

// shareKey seals the new CA key for the other control planes, in a Secret
// only the control-plane nodes may read.
func (d *Driver) shareKey(ctx context.Context, cur *pki.KeyPair, next *x509.Certificate) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	cps, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: controlPlaneLabel})
	if err != nil {
		return fmt.Errorf("listing the control planes: %w", err)
	}
	var names []string
	for _, n := range cps.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	keyPEM, err := d.fs().ReadFile(d.file(nextBase + ".key"))
	if err != nil {
		return err
	}
	sealed, err := SealKey(cur.Key, next, keyPEM)
	if err != nil {
		return err
	}
	role, binding := keyReader(names)
	roles, bindings, secrets := c.RbacV1().Roles(metav1.NamespaceSystem), c.RbacV1().RoleBindings(metav1.NamespaceSystem), c.CoreV1().Secrets(metav1.NamespaceSystem)
	if err := apiclient.CreateOrUpdate(ctx, roles.Create, roles.Update, role); err != nil {
		return err
	}
	if err := apiclient.CreateOrUpdate(ctx, bindings.Create, bindings.Update, binding); err != nil {
		return err
	}
	if err := apiclient.CreateOrUpdate(ctx, secrets.Create, secrets.Update, keySecret(sealed)); err != nil {
		return err
	}
	d.Logf("[certs/rotate-ca] Sealed the new CA key for the control planes (%s) in %s/%s, under a key derived from the current CA key", strings.Join(names, ", "), metav1.NamespaceSystem, KeySecret)
	return nil
}

func (d *Driver) client() (kubernetes.Interface, error) {
	c, _, err := apiclient.FromKubeconfig(d.Kubeconfig, "")
	return c, err
}

// Run rotates the CA, or continues a rotation that stopped half-way.
func (d *Driver) Run(ctx context.Context) error {
	if d.Poll == 0 {
		d.Poll = 2 * time.Second
	}
	cur, err := d.Gen.CA("ca")
	if err != nil {
		return err
	}
	if cur.Key == nil {
		return fmt.Errorf("the cluster CA is external (%s is absent): rotate it with the tool that holds its key", d.fs().Path(d.file("ca.key")))
	}
	c, err := d.client()
	if err != nil {
		return err
	}
	cas, err := d.trusted()
	if err != nil {
		return err
	}
	published, err := d.published(ctx, c)
	if err != nil {
		return err
	}
	switch {
	case fsys.Exists(d.fs(), d.file(nextBase+".key")):
		d.Logf("[certs/rotate-ca] Continuing the rotation: a new CA is staged in %s", d.fs().Path(d.file(nextBase+".crt")))
		if err := d.trust(ctx, cur); err != nil {
			return err
		}
		fallthrough
	case len(cas) > 1:
		if err := d.switchCA(ctx); err != nil {
			return err
		}
		fallthrough
	case published != nil && published.Phase == PhaseDrop:
		if err := d.drop(ctx); err != nil {
			return err
		}
	default:
		if published != nil {
			return fmt.Errorf("%s/%s says a rotation is at its %s step, but %s holds one CA: remove the ConfigMap if no rotation runs", Namespace, ConfigMapName, published.Phase, d.fs().Path(d.file("ca.crt")))
		}
		if err := d.trust(ctx, cur); err != nil {
			return err
		}
		if err := d.switchCA(ctx); err != nil {
			return err
		}
		if err := d.drop(ctx); err != nil {
			return err
		}
	}
	return d.finish(ctx)
}

// trusted reads the CAs of ca.crt.
func (d *Driver) trusted() ([]*x509.Certificate, error) {
	b, err := d.fs().ReadFile(d.file("ca.crt"))
	if err != nil {
		return nil, err
	}
	return certutil.ParseCertsPEM(b)
}

func (d *Driver) published(ctx context.Context, c kubernetes.Interface) (*Step, error) {
	cm, err := c.CoreV1().ConfigMaps(Namespace).Get(ctx, ConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s, err := stepOf(cm)
	return &s, err
}

// trust stages a new CA (or the one staged before) and makes every node
// trust it beside the current one.
func (d *Driver) trust(ctx context.Context, cur *pki.KeyPair) error {
	next, err := d.staged()
	if err != nil {
		return err
	}
	if next == nil {
		if next, err = d.Gen.NextCA("ca"); err != nil {
			return err
		}
		if err := pki.WriteKeyPair(d.fs(), d.Gen.Dir(), nextBase, next); err != nil {
			return err
		}
		d.Logf("[certs/rotate-ca] Generated the new CA %q (serial %s, valid until %s), staged in %s", next.Cert.Subject.CommonName, next.Cert.SerialNumber.Text(16), next.Cert.NotAfter.UTC().Format(time.RFC3339), d.fs().Path(d.file(nextBase+".crt")))
	}
	step := Step{Phase: PhaseTrust, Trust: Bundle(cur.Cert, next.Cert), Signer: pki.EncodeCertPEM(cur.Cert)}
	if err := d.cp().Trust(ctx, step); err != nil {
		return err
	}
	if err := d.shareKey(ctx, cur, next.Cert); err != nil {
		return err
	}
	if err := d.publish(ctx, step); err != nil {
		return err
	}
	if err := d.waitNodes(ctx, step); err != nil {
		return err
	}
	if err := d.waitRootCA(ctx, step.Trust); err != nil {
		return err
	}
	d.Logf("[certs/rotate-ca] Trusting both CAs for %s before the new one signs: clients that reload their CA file (client-go does every 5 minutes) and pods' kube-root-ca.crt catch up", d.TrustPeriod)
	end := time.Now().Add(d.TrustPeriod)
	for left := time.Until(end); left > 0; left = time.Until(end) {
		wait := min(left, 30*time.Second)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		if left > wait {
			d.Logf("[certs/rotate-ca] %s left before the switch", (left - wait).Round(time.Second))
		}
	}
	// The API server's kubelet client (--kubelet-certificate-authority)
	// checks its CA file only when it sends a request; exec and
	// port-forward take its TLS settings without one. A request to each
	// kubelet now, at least 5 minutes after ca.crt changed, makes it load
	// both CAs before the kubelets' serving certificates change.
	return d.reachKubelets(ctx, false)
}

// reachKubelets sends a request to each kubelet through each API server
// (GET /api/v1/nodes/NAME/proxy/healthz): each has a kubelet client of
// its own. With require, it waits until every kubelet answers: the API
// servers verify their new serving certificates.
func (d *Driver) reachKubelets(ctx context.Context, require bool) error {
	var nodes, servers int
	err := d.wait(ctx, "every API server to reach every kubelet", func(c kubernetes.Interface) (string, error) {
		ns, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		hosts, err := apiServers(ctx, c)
		if err != nil {
			return "", err
		}
		nodes, servers = len(ns.Items), len(hosts)
		var failed []string
		for _, h := range hosts {
			via, _, err := apiclient.FromKubeconfig(d.Kubeconfig, "https://"+h)
			if err != nil {
				return "", err
			}
			for _, n := range ns.Items {
				if err := via.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", "healthz").Do(ctx).Error(); err != nil {
					failed = append(failed, fmt.Sprintf("%s via %s: %v", n.Name, h, err))
				}
			}
		}
		if !require {
			return "", nil
		}
		return strings.Join(failed, "; "), nil
	})
	if err == nil && require {
		d.Logf("[certs/rotate-ca] Every API server (%d) reaches every kubelet (%d) with the new certificates", servers, nodes)
	}
	return err
}

// apiServers lists the API servers (host:port) from the kubernetes
// Service's EndpointSlices.
func apiServers(ctx context.Context, c kubernetes.Interface) ([]string, error) {
	eps, err := c.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range eps.Items {
		for _, p := range s.Ports {
			if p.Port == nil || (p.Name != nil && *p.Name != "https") {
				continue
			}
			for _, e := range s.Endpoints {
				for _, a := range e.Addresses {
					out = append(out, net.JoinHostPort(a, strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the kubernetes Service has no endpoints")
	}
	return out, nil
}

// staged reads the new CA staged by the trust step, nil when none is.
func (d *Driver) staged() (*pki.KeyPair, error) {
	if !fsys.Exists(d.fs(), d.file(nextBase+".key")) {
		return nil, nil
	}
	certPEM, err := d.fs().ReadFile(d.file(nextBase + ".crt"))
	if err != nil {
		return nil, err
	}
	keyPEM, err := d.fs().ReadFile(d.file(nextBase + ".key"))
	if err != nil {
		return nil, err
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, err
	}
	key, err := pki.ParseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	return &pki.KeyPair{Cert: certs[0], Key: key}, nil
}

// switchCA makes the new CA the signer, re-issues everything the CA signs
// on this control plane, and has every other control plane and every
// node's kubelet follow.
func (d *Driver) switchCA(ctx context.Context) error {
	next, err := d.staged()
	if err != nil {
		return err
	}
	cas, err := d.trusted()
	if err != nil {
		return err
	}
	signer := cas[0] // switched here already
	if next != nil {
		signer = next.Cert
	}
	step := Step{Phase: PhaseSwitch, Trust: Bundle(signer, cas...), Signer: pki.EncodeCertPEM(signer)}
	err = d.cp().Switch(ctx, step, func() ([]byte, error) {
		if next == nil {
			return nil, fmt.Errorf("no new CA is staged in %s, and %s is not the new CA's", d.fs().Path(d.file(nextBase+".key")), d.fs().Path(d.file("ca.key")))
		}
		return d.fs().ReadFile(d.file(nextBase + ".key"))
	})
	// The staged CA goes once ca.key is its key, also when re-issuing
	// failed: a run again continues from ca.key.
	if next != nil {
		if keyPEM, rerr := d.fs().ReadFile(d.file("ca.key")); rerr == nil {
			if key, perr := pki.ParseKey(keyPEM); perr == nil && pki.MatchKey(next.Cert, key) == nil {
				for _, ext := range []string{".crt", ".key"} {
					if rerr := os.Remove(d.fs().Path(d.file(nextBase + ext))); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
						return rerr
					}
				}
			}
		}
	}
	if err != nil {
		return err
	}
	if err := d.publish(ctx, step); err != nil {
		return err
	}
	if err := d.waitNodes(ctx, step); err != nil {
		return err
	}
	return d.reachKubelets(ctx, true)
}

// drop stops trusting the old CA everywhere.
func (d *Driver) drop(ctx context.Context) error {
	d.Gen.Forget()
	ca, err := d.Gen.CA("ca")
	if err != nil {
		return err
	}
	step := Step{Phase: PhaseDrop, Trust: Bundle(ca.Cert), Signer: pki.EncodeCertPEM(ca.Cert)}
	if err := d.cp().Drop(ctx, step); err != nil {
		return err
	}
	if err := d.publish(ctx, step); err != nil {
		return err
	}
	if err := d.waitNodes(ctx, step); err != nil {
		return err
	}
	return d.waitRootCA(ctx, step.Trust)
}

// finish removes the rotation's objects: the ConfigMap and its RBAC, then
// the nodes' annotations.
func (d *Driver) finish(ctx context.Context) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	for _, del := range []func() error{
		func() error {
			return c.CoreV1().ConfigMaps(Namespace).Delete(ctx, ConfigMapName, metav1.DeleteOptions{})
		},
		func() error { return c.RbacV1().RoleBindings(Namespace).Delete(ctx, rbacName, metav1.DeleteOptions{}) },
		func() error { return c.RbacV1().Roles(Namespace).Delete(ctx, rbacName, metav1.DeleteOptions{}) },
		func() error {
			return c.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, KeySecret, metav1.DeleteOptions{})
		},
		func() error {
			return c.RbacV1().RoleBindings(metav1.NamespaceSystem).Delete(ctx, rbacName, metav1.DeleteOptions{})
		},
		func() error {
			return c.RbacV1().Roles(metav1.NamespaceSystem).Delete(ctx, rbacName, metav1.DeleteOptions{})
		},
	} {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	// The annotations go after the ConfigMap: an agent that still saw the
	// last step published would annotate its node again (a node kept the
	// drop step's annotation once in CI).
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{Annotation: nil}}})
	for _, n := range nodes.Items {
		if _, ok := n.Annotations[Annotation]; ok {
			if _, err := c.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return err
			}
		}
	}
	// The certificates init or upload-certs uploaded for joining control
	// planes hold the old CA: a control plane joining with them would not
	// be trusted.
	err = c.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, bootstrap.KubeadmCertsSecret, metav1.DeleteOptions{})
	switch {
	case err == nil:
		d.Logf("[certs/rotate-ca] Deleted %s/%s, which held the old CA: run `kubeboot init phase upload-certs --upload-certs` on a control plane before joining another one", metav1.NamespaceSystem, bootstrap.KubeadmCertsSecret)
	case !apierrors.IsNotFound(err):
		return err
	}
	ca, err := d.Gen.CA("ca")
	if err != nil {
		return err
	}
	d.Logf("[certs/rotate-ca] The cluster CA is rotated: every node trusts only %q (serial %s, valid until %s)", ca.Cert.Subject.CommonName, ca.Cert.SerialNumber.Text(16), ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	d.Logf("[certs/rotate-ca] Join commands printed before name the old CA's hash (--discovery-token-ca-cert-hash): print a new one with `kubeboot token create --print-join-command`")
	return nil
}

// publish writes the step for the nodes, and cluster-info's CA for the
// nodes that join.
func (d *Driver) publish(ctx context.Context, step Step) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	role, binding := nodeReader()
	roles, bindings, cms := c.RbacV1().Roles(Namespace), c.RbacV1().RoleBindings(Namespace), c.CoreV1().ConfigMaps(Namespace)
	if err := apiclient.CreateOrUpdate(ctx, roles.Create, roles.Update, role); err != nil {
		return err
	}
	if err := apiclient.CreateOrUpdate(ctx, bindings.Create, bindings.Update, binding); err != nil {
		return err
	}
	if err := apiclient.CreateOrUpdate(ctx, cms.Create, cms.Update, step.configMap()); err != nil {
		return err
	}
	if err := d.updateClusterInfo(ctx, c, step.Trust); err != nil {
		return err
	}
	d.Logf("[certs/rotate-ca] Published the %s step (%s) in %s/%s", step.Phase, step.ID(), Namespace, ConfigMapName)
	return nil
}

// updateClusterInfo sets the CA of cluster-info's kubeconfig; the
// controller-manager's bootstrap signer signs it again.
func (d *Driver) updateClusterInfo(ctx context.Context, c kubernetes.Interface, trust []byte) error {
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	kc, err := clientcmd.Load([]byte(cm.Data[bootstrapapi.KubeConfigKey]))
	if err != nil {
		return fmt.Errorf("cluster-info's kubeconfig: %w", err)
	}
	changed := false
	for _, cl := range kc.Clusters {
		if !sameSet(cl.CertificateAuthorityData, trust) {
			cl.CertificateAuthorityData, changed = trust, true
		}
	}
	if !changed {
		return nil
	}
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	cm.Data[bootstrapapi.KubeConfigKey] = string(b)
	_, err = c.CoreV1().ConfigMaps(metav1.NamespacePublic).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// waitNodes waits until every node reports the step.
func (d *Driver) waitNodes(ctx context.Context, step Step) error {
	id, start := step.ID(), time.Now()
	err := d.wait(ctx, fmt.Sprintf("every node to reach the %s step", step.Phase), func(c kubernetes.Interface) (string, error) {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		var pending []string
		for _, n := range nodes.Items {
			if n.Annotations[Annotation] != id {
				pending = append(pending, n.Name)
			}
		}
		slices.Sort(pending)
		if len(pending) > 0 {
			return "not yet " + strings.Join(pending, ", ") + " (their kubeboot daemon logs say why: ca-agent)", nil
		}
		return "", nil
	})
	if err == nil {
		d.Logf("[certs/rotate-ca] Every node reached the %s step after %s", step.Phase, time.Since(start).Round(time.Second))
	}
	return err
}

// waitRootCA waits until the controller-manager publishes trust as the
// pods' kube-root-ca.crt (it reads its --root-ca-file at start, and the
// daemon restarts it when its kubeconfig's CA changes).
func (d *Driver) waitRootCA(ctx context.Context, trust []byte) error {
	start := time.Now()
	err := d.wait(ctx, "kube-controller-manager to publish the CAs of ca.crt as kube-system/kube-root-ca.crt", func(c kubernetes.Interface) (string, error) {
		cm, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if !sameSet([]byte(cm.Data["ca.crt"]), trust) {
			return "it holds other CAs (is kube-controller-manager running?)", nil
		}
		return "", nil
	})
	if err == nil {
		d.Logf("[certs/rotate-ca] The pods' kube-root-ca.crt holds the same CAs after %s", time.Since(start).Round(time.Second))
	}
	return err
}

// wait polls check, with a new client each time (the rotation changes
// the CA the admin kubeconfig trusts), until it reports nothing pending,
// for at most NodeTimeout, saying every 15 s what it waits for.
func (d *Driver) wait(ctx context.Context, what string, check func(kubernetes.Interface) (pending string, err error)) error {
	wctx, cancel := context.WithTimeout(ctx, d.NodeTimeout)
	defer cancel()
	progress := poll.Progress(d.Logf, "certs/rotate-ca", what, true)
	err := poll.Until(wctx, d.Poll, 15*time.Second, progress, func(context.Context) error {
		c, err := d.client()
		if err != nil {
			return err
		}
		pending, err := check(c)
		if err == nil && pending != "" {
			err = errors.New(pending)
		}
		return err
	})
	var exp *poll.Expired
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &exp):
		return fmt.Errorf("waited %s for %s: %v; run `kubeboot certs rotate-ca` again to continue", d.NodeTimeout, what, exp.Last)
	}
	return err
}
