// Package kubeadm compares what kubeboot writes with what upstream kubeadm
// v1.37.2 writes for the same configuration, by running kubeadm's own
// certificate and kubeconfig phases in-process (the pinned
// k8s.io/kubernetes module carries them): identities, servers, SANs and
// usages must match, file by file.
package kubeadm

import (
	"context"
	"crypto/x509"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/addons/proxy"
	certsphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/certs"
	kubeconfigphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/kubeconfig"
	kubeletphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/kubelet"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/uploadconfig"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/pkg/config"
)

const cfgYAML = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.10.0.2
  bindPort: 6443
nodeRegistration:
  name: node-a
  criSocket: unix:///run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
controlPlaneEndpoint: vip.example.com:8443
encryptionAlgorithm: ECDSA-P256
certificatesDir: /etc/kubernetes/pki
apiServer:
  certSANs: [extra.example.com, 10.9.9.9]
etcd:
  local:
    serverCertSANs: [etcd.example.com]
    peerCertSANs: [10.8.8.8]
networking:
  serviceSubnet: 10.96.0.0/12
  podSubnet: 10.244.0.0/16
  dnsDomain: cluster.local
`

// identity is what must match between the two tools' certificates.
type identity struct {
	cn, orgs, dns, ips, ext string
	isCA                    bool
}

func identityOf(c *x509.Certificate) identity {
	var ips []string
	for _, ip := range c.IPAddresses {
		ips = append(ips, ip.String())
	}
	var ext []string
	for _, u := range c.ExtKeyUsage {
		ext = append(ext, map[x509.ExtKeyUsage]string{x509.ExtKeyUsageServerAuth: "server", x509.ExtKeyUsageClientAuth: "client"}[u])
	}
	sorted := func(s []string) string { s = slices.Clone(s); sort.Strings(s); return strings.Join(s, ",") }
	return identity{cn: c.Subject.CommonName, orgs: sorted(c.Subject.Organization), dns: sorted(c.DNSNames), ips: sorted(ips), ext: sorted(ext), isCA: c.IsCA}
}

// deliberate are the ways kubeboot's certificates differ from kubeadm's on
// purpose: the API server's certificate also names the loopback addresses,
// which the node daemon's readiness probe, init's own client and the
// node-local load balancer use.
var deliberate = map[string]struct{ dns, ips string }{
	"apiserver.crt": {dns: "localhost", ips: "127.0.0.1,::1"},
}

func union(a, b string) string {
	set := map[string]bool{}
	for _, s := range strings.Split(a+","+b, ",") {
		if s != "" {
			set[s] = true
		}
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	certs, err := certutil.CertsFromFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

func TestCertificatesAndKubeconfigsMatchKubeadm(t *testing.T) {
	// kubeboot, under a root prefix.
	root := t.TempDir()
	c, err := config.Parse("test", []byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DefaultInit(config.Host{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	fs := fsys.NewRoot(root)
	g := &pki.Generator{FS: fs, Cfg: c}
	if err := g.EnsureAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := (&kubeconfig.Writer{FS: fs, Cfg: c, PKI: g}).EnsureAll(); err != nil {
		t.Fatal(err)
	}

	// kubeadm, with its own configuration loading, into another directory.
	kdir := t.TempDir()
	kcfg, err := configutil.BytesToInitConfiguration([]byte(cfgYAML), true)
	if err != nil {
		t.Fatal(err)
	}
	kcfg.CertificatesDir = filepath.Join(kdir, "pki")
	if err := certsphase.CreatePKIAssets(kcfg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"admin.conf", "super-admin.conf", "kubelet.conf", "controller-manager.conf", "scheduler.conf"} {
		cfg := kcfg.DeepCopy()
		if name == "kubelet.conf" {
			// As kubeadm's init phase does: the kubelet's kubeconfig falls
			// back to the local API endpoint.
			cfg.ControlPlaneEndpoint = ""
		}
		if err := kubeconfigphase.CreateKubeConfigFile(name, kdir, cfg); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("certificates", func(t *testing.T) {
		var theirs []string
		filepath.Walk(kcfg.CertificatesDir, func(p string, _ os.FileInfo, err error) error {
			if err == nil && strings.HasSuffix(p, ".crt") {
				rel, _ := filepath.Rel(kcfg.CertificatesDir, p)
				theirs = append(theirs, rel)
			}
			return nil
		})
		if len(theirs) < 10 {
			t.Fatalf("kubeadm wrote only %v", theirs)
		}
		for _, rel := range theirs {
			ours := filepath.Join(root, "etc/kubernetes/pki", rel)
			if _, err := os.Stat(ours); err != nil {
				t.Errorf("kubeadm writes %s, kubeboot does not: %v", rel, err)
				continue
			}
			want, got := identityOf(readCert(t, filepath.Join(kcfg.CertificatesDir, rel))), identityOf(readCert(t, ours))
			if extra, ok := deliberate[rel]; ok {
				want.dns, want.ips = union(want.dns, extra.dns), union(want.ips, extra.ips)
			}
			if want != got {
				t.Errorf("%s differs from kubeadm's:\n  kubeadm  %+v\n  kubeboot %+v", rel, want, got)
			}
		}
		for _, f := range []string{"sa.key", "sa.pub"} {
			if _, err := os.Stat(filepath.Join(root, "etc/kubernetes/pki", f)); err != nil {
				t.Errorf("no %s: %v", f, err)
			}
		}
		t.Logf("compared %d certificates with kubeadm's", len(theirs))
	})

	t.Run("kubeconfigs", func(t *testing.T) {
		for _, name := range []string{"admin.conf", "super-admin.conf", "kubelet.conf", "controller-manager.conf", "scheduler.conf"} {
			want, err := clientcmd.LoadFromFile(filepath.Join(kdir, name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := clientcmd.LoadFromFile(filepath.Join(root, "etc/kubernetes", name))
			if err != nil {
				t.Fatal(err)
			}
			wc, gc := want.Contexts[want.CurrentContext], got.Contexts[got.CurrentContext]
			if ws, gs := want.Clusters[wc.Cluster].Server, got.Clusters[gc.Cluster].Server; ws != gs {
				t.Errorf("%s: server %s, kubeadm's %s", name, gs, ws)
			}
			if wc.Cluster != gc.Cluster || want.CurrentContext != got.CurrentContext {
				t.Errorf("%s: context %s (cluster %s), kubeadm's %s (cluster %s)", name, got.CurrentContext, gc.Cluster, want.CurrentContext, wc.Cluster)
			}
			wcert, _ := certutil.ParseCertsPEM(want.AuthInfos[wc.AuthInfo].ClientCertificateData)
			gcert, _ := certutil.ParseCertsPEM(got.AuthInfos[gc.AuthInfo].ClientCertificateData)
			if len(wcert) == 0 || len(gcert) == 0 {
				t.Fatalf("%s: no client certificate", name)
			}
			if w, g := identityOf(wcert[0]), identityOf(gcert[0]); w != g {
				t.Errorf("%s: client identity %+v, kubeadm's %+v", name, g, w)
			}
		}
	})
}

// TestJoinReadsWhatKubeadmInitStores: what upstream kubeadm init stores for
// joining nodes (its own upload-config, kubelet and kube-proxy phases, run
// against a fake API) is what kubeboot join reads back.
func TestJoinReadsWhatKubeadmInitStores(t *testing.T) {
	kcfg, err := configutil.BytesToInitConfiguration([]byte(cfgYAML), true)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	if err := uploadconfig.UploadConfiguration(kcfg, client); err != nil {
		t.Fatal(err)
	}
	if err := kubeletphase.CreateConfigMap(&kcfg.ClusterConfiguration, client); err != nil {
		t.Fatal(err)
	}
	if err := proxy.EnsureProxyAddon(&kcfg.ClusterConfiguration, &kcfg.LocalAPIEndpoint, client, "", io.Discard, false); err != nil {
		t.Fatal(err)
	}
	got, err := bootstrap.FetchConfig(context.Background(), client, "a kubeadm-made cluster")
	if err != nil {
		t.Fatal(err)
	}
	if got.Cluster.ControlPlaneEndpoint != "vip.example.com:8443" || got.Cluster.Networking.PodSubnet != "10.244.0.0/16" ||
		got.Cluster.KubernetesVersion != "v1.37.2" || got.Cluster.ClusterName != "kubernetes" {
		t.Errorf("ClusterConfiguration read back: %+v", got.Cluster)
	}
	if got.Kubelet == nil || got.Kubelet.CgroupDriver != "systemd" || got.Kubelet.ClusterDomain != "cluster.local" {
		t.Errorf("KubeletConfiguration read back: %+v", got.Kubelet)
	}
	if got.KubeProxy == nil || got.KubeProxy.ClusterCIDR != "10.244.0.0/16" {
		t.Errorf("KubeProxyConfiguration read back: %+v", got.KubeProxy)
	}
}
