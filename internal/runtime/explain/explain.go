// Package explain is `--explain` of init, join and reset: under each
// phase's log line, every file the phase wrote, with its mode and what it
// is — a certificate's identity, issuer, names and expiry read from the
// certificate itself, a kubeconfig's user and server, a component spec's
// ports and readiness probe, and for the other files why they exist — in
// the spirit of seed 003's annotated kubeadm log.
package explain

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
)

// Prefix starts every explain line: indented under the phase's line.
const Prefix = "    ↳ "

// FS wraps a node filesystem and explains every file written through it.
type FS struct {
	fsys.FS
	Out  io.Writer
	dirs map[string]bool // explained already
}

// WriteFile writes, then explains.
func (e *FS) WriteFile(p string, data []byte, perm fs.FileMode) error {
	if err := e.FS.WriteFile(p, data, perm); err != nil {
		return err
	}
	verb := "wrote"
	if e.FS.DryRun() {
		verb = "would write"
	}
	fmt.Fprintf(e.Out, "%s%s %s (mode %04o): %s\n", Prefix, verb, e.FS.Path(p), perm.Perm(), Describe(p, data, perm))
	return nil
}

// MkdirAll creates, then explains.
func (e *FS) MkdirAll(p string, perm fs.FileMode) error {
	if err := e.FS.MkdirAll(p, perm); err != nil {
		return err
	}
	if e.dirs == nil {
		e.dirs = map[string]bool{}
	}
	if why := dirs[p]; why != "" && !e.dirs[p] {
		e.dirs[p] = true
		fmt.Fprintf(e.Out, "%sdirectory %s (mode %04o): %s\n", Prefix, e.FS.Path(p), perm.Perm(), why)
	}
	return nil
}

// dirs explains the directories whose mode matters.
var dirs = map[string]string{
	"/etc/kubernetes/pki": "the certificates and keys; 0700, only root enters",
	"/var/lib/etcd":       "etcd's data: every object of the cluster, Secrets included; 0700",
	node.SpecDir:          "the component specs the node daemon runs, as kubeadm's static pod manifests",
	"/etc/kubernetes":     "kubeconfigs and the node's configuration",
	"/etc/systemd/system": "systemd's unit directory",
}

// files explains the files that carry no identity of their own, by node
// path (path.Match patterns).
var files = []struct{ pattern, why string }{
	{"/etc/kubernetes/pki/sa.key", "signs service-account tokens (controller-manager) and verifies them (API server); with it anyone can mint a token for any account"},
	{"/etc/kubernetes/pki/sa.pub", "verifies service-account tokens (API server --service-account-key-file)"},
	{"/etc/kubernetes/pki/encryption-config.yaml", "the key that encrypts Secrets in etcd (--hardened, API server --encryption-provider-config); every control plane shares it"},
	{"/etc/kubernetes/audit-policy.yaml", "what the API server's audit log records (--hardened): metadata of Secrets, ConfigMaps and tokens, bodies of other writes"},
	{"/var/lib/kubelet/config.yaml", "the kubelet's configuration: the cluster's kubelet-config with this node's paths, CRI endpoint and cgroup root"},
	{"/var/lib/kube-proxy/config.conf", "kube-proxy's configuration, from the cluster's kube-proxy ConfigMap"},
	{"/etc/cni/net.d/*", "the pod network of this node (bridge, host-local IPAM on the node's pod CIDR), read by containerd for each pod"},
	{"/etc/kubernetes/kubeboot/resolv.conf", "the resolv.conf pods with dnsPolicy Default get: the host's without loopback servers, which pods cannot reach"},
	{"/etc/kubernetes/kubeboot/containerd/*", "containerd's configuration: everything under this node's root, its own CNI network and cgroup parent"},
	{"/etc/systemd/system/*.service", "the node daemon's systemd unit: after a reboot it runs the specs again"},
	{"/etc/kubernetes/manifests/*", "a static pod the kubelet runs"},
}

// Describe says what a written file is.
func Describe(nodePath string, data []byte, perm fs.FileMode) string {
	var parts []string
	switch {
	case strings.HasSuffix(nodePath, ".crt"):
		parts = append(parts, describeCert(data))
	case strings.HasSuffix(nodePath, ".key"):
		if strings.HasSuffix(nodePath, "sa.key") {
			break
		}
		parts = append(parts, "the private key of the certificate next to it")
	case strings.HasSuffix(nodePath, ".conf") && path.Dir(nodePath) == "/etc/kubernetes":
		parts = append(parts, describeKubeconfig(data))
	case path.Dir(nodePath) == node.SpecDir:
		parts = append(parts, describeSpec(data))
	}
	for _, f := range files {
		if ok, _ := path.Match(f.pattern, nodePath); ok {
			parts = append(parts, f.why)
			break
		}
	}
	if perm.Perm()&0o077 == 0 && !strings.Contains(strings.Join(parts, " "), "only root") {
		parts = append(parts, "readable by root only")
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d bytes", len(data))
	}
	return strings.Join(parts, "; ")
}

func describeCert(data []byte) string {
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil || len(certs) == 0 {
		return "a certificate"
	}
	c := certs[0]
	var b strings.Builder
	if c.IsCA {
		fmt.Fprintf(&b, "CA %q", c.Subject.CommonName)
	} else {
		fmt.Fprintf(&b, "identity CN=%s", c.Subject.CommonName)
		if len(c.Subject.Organization) > 0 {
			fmt.Fprintf(&b, " O=%s", strings.Join(c.Subject.Organization, ","))
		}
		fmt.Fprintf(&b, ", signed by %q", c.Issuer.CommonName)
		var uses []string
		for _, u := range c.ExtKeyUsage {
			switch u {
			case x509.ExtKeyUsageServerAuth:
				uses = append(uses, "server")
			case x509.ExtKeyUsageClientAuth:
				uses = append(uses, "client")
			}
		}
		if len(uses) > 0 {
			fmt.Fprintf(&b, ", for %s authentication", strings.Join(uses, " and "))
		}
	}
	fmt.Fprintf(&b, ", valid until %s", c.NotAfter.Format("2006-01-02"))
	return b.String()
}

func describeKubeconfig(data []byte) string {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return "a kubeconfig"
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil {
		return "a kubeconfig"
	}
	server := ""
	if cl := kc.Clusters[ctx.Cluster]; cl != nil {
		server = cl.Server
	}
	user := ctx.AuthInfo
	if ai := kc.AuthInfos[ctx.AuthInfo]; ai != nil {
		switch {
		case len(ai.ClientCertificateData) > 0:
			if block, _ := pem.Decode(ai.ClientCertificateData); block != nil {
				if c, err := x509.ParseCertificate(block.Bytes); err == nil {
					user = "CN=" + c.Subject.CommonName
					if len(c.Subject.Organization) > 0 {
						user += " O=" + strings.Join(c.Subject.Organization, ",")
					}
				}
			}
		case ai.ClientCertificate != "":
			user += " (certificate " + ai.ClientCertificate + ")"
		case ai.Token != "":
			user += " (a bootstrap token)"
		}
	}
	return fmt.Sprintf("kubeconfig of %s for %s", user, server)
}

func describeSpec(data []byte) string {
	var s component.Spec
	if err := json.Unmarshal(bytes.TrimSpace(data), &s); err != nil {
		return "a component spec"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the node daemon runs %s", s.Name)
	if len(s.Ports) > 0 {
		fmt.Fprintf(&b, ", listening on ports %v", s.Ports)
	}
	if !s.Probe.Empty() {
		fmt.Fprintf(&b, ", ready when %s answers", s.Probe)
	}
	if deps := append(append([]string{}, s.After...), s.Requires...); len(deps) > 0 {
		fmt.Fprintf(&b, ", after %s", strings.Join(deps, ", "))
	}
	return b.String()
}

// removed explains what reset removes, by node path.
var removed = []struct{ prefix, why string }{
	{"/etc/kubernetes", "the node's kubeconfigs, certificates and keys, component specs and configuration"},
	{"/var/lib/etcd", "etcd's data: this member's copy of every object of the cluster"},
	{"/var/lib/kubelet", "the kubelet's state: its certificates, pod volumes, checkpoints"},
	{"/var/lib/kubeboot", "kubeboot's state: the links the daemon runs components through"},
	{"/var/log/kubeboot", "the node daemon's and the components' logs"},
	{"/var/log/pods", "the containers' logs"},
	{"/var/log/containers", "links to this node's container logs (a machine-wide directory: only this node's entries)"},
	{"/var/log/kubernetes/audit", "the API server's audit log (--hardened)"},
	{"/run/kubeboot", "the daemon's pid and status files, containerd's state"},
	{"/etc/cni", "the node's CNI configuration"},
	{"/var/lib/cni", "the CNI plugins' IP allocations and results"},
	{"/var/lib/kube-proxy", "kube-proxy's configuration"},
	{"/usr/libexec/kubernetes", "the kubelet's FlexVolume directory (removed only when empty)"},
	{"/etc/systemd/system", "the node daemon's systemd unit"},
	{"/run/containerd", "containerd's shim sockets of this node's containers (a machine-wide directory: only this node's)"},
}

// Reset wraps reset's output: under each "[reset] Deleted <path>" line it
// says what the path held. root is the node's root prefix.
func Reset(out io.Writer, root string) io.Writer {
	return &resetWriter{out: out, root: strings.TrimSuffix(root, "/")}
}

type resetWriter struct {
	out  io.Writer
	root string
	buf  []byte
}

func (w *resetWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i+1])
		w.buf = w.buf[i+1:]
		if _, err := io.WriteString(w.out, line); err != nil {
			return 0, err
		}
		host, ok := strings.CutPrefix(strings.TrimSpace(line), "[reset] Deleted ")
		if !ok {
			continue
		}
		node := "/" + strings.TrimPrefix(strings.TrimPrefix(host, w.root), "/")
		for _, r := range removed {
			if node == r.prefix || strings.HasPrefix(node, r.prefix+"/") || strings.HasPrefix(host, r.prefix+"/") {
				fmt.Fprintf(w.out, "%s%s\n", Prefix, r.why)
				break
			}
		}
	}
}
