package initphases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeboot/kubeboot/pkg/component"
	"github.com/kubeboot/kubeboot/pkg/cpugroup"
	"github.com/kubeboot/kubeboot/pkg/images"
	"github.com/kubeboot/kubeboot/pkg/kubeconfig"
	"github.com/kubeboot/kubeboot/pkg/node"
	"github.com/kubeboot/kubeboot/pkg/preflight"
)

// nodeChecks are the pre-flight checks of the node side.
func (d *Data) nodeChecks() []preflight.Check {
	r := d.renderer()
	checks := []preflight.Check{
		preflight.Port(component.KubeletPort),
		preflight.FileAvailable(d.FS, node.KubeletConfig),
		preflight.FileExisting("/proc/sys/net/bridge/bridge-nf-call-iptables", "the br_netfilter kernel module is not loaded: run `modprobe br_netfilter`"),
		preflight.FileExisting("/proc/sys/net/ipv4/ip_forward", "IPv4 forwarding is not available in this kernel"),
	}
	if r.ManagedContainerd() {
		checks = append(checks,
			preflight.InPath("containerd", "kubeboot runs containerd from the distribution: run `apt-get install containerd runc` (or give --cri-socket of a running CRI runtime)"),
			preflight.InPath("runc", "containerd needs runc: run `apt-get install runc`"),
			preflight.InPath("ctr", "kubeboot imports its images with containerd's ctr: run `apt-get install containerd`"),
		)
	}
	checks = append(checks, preflight.InPath("iptables", "kube-proxy and the CNI plugins need iptables: run `apt-get install iptables`"))
	return checks
}

// sysctls the node needs: routing between pods, and bridged traffic seen
// by iptables (Services). They are per network namespace.
var sysctls = []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/bridge/bridge-nf-call-iptables", "/proc/sys/net/bridge/bridge-nf-call-ip6tables"}

func runKubeletStart(ctx context.Context, d *Data) error {
	r := d.renderer()
	for _, s := range sysctls {
		if d.FS.DryRun() {
			d.logf("[dryrun] Would set %s to 1", s)
			continue
		}
		if err := os.WriteFile(s, []byte("1"), 0o644); err != nil {
			return fmt.Errorf("setting %s: %w", s, err)
		}
	}
	if err := d.linkCNIPlugins(); err != nil {
		return err
	}
	if err := d.writeFirstCNIConfig(); err != nil {
		return err
	}
	if r.ManagedContainerd() {
		d.logf("[kubelet-start] Writing containerd configuration to file %q", d.FS.Path(node.ContainerdConfig))
		if err := d.FS.WriteFile(node.ContainerdConfig, []byte(node.ContainerdConfigTOML(d.FS)), 0o644); err != nil {
			return err
		}
		containerd, err := execPath("containerd")
		if err != nil {
			return err
		}
		spec := r.ContainerdSpec(containerd)
		if err := d.writeSpec(spec, "kubelet-start"); err != nil {
			return err
		}
		if err := d.wait(ctx, "kubelet-start", spec); err != nil {
			return err
		}
	}
	d.startImageImport(ctx, r.CRISocket())
	if err := d.FS.MkdirAll(node.ManifestsDir, 0o755); err != nil {
		return err
	}
	kc, err := node.LocalKubeletConfiguration(d.Cfg, d.FS, r.CRISocket())
	if err != nil {
		return err
	}
	d.logf("[kubelet-start] Writing kubelet configuration to file %q", d.FS.Path(node.KubeletConfig))
	if err := d.FS.WriteFile(node.KubeletConfig, kc, 0o644); err != nil {
		return err
	}
	d.logf("[kubelet-start] Starting the kubelet")
	if err := d.writeSpec(r.KubeletSpec(), "kubelet-start"); err != nil {
		return err
	}
	if err := d.writeSpec(r.NetAgentSpec(), "kubelet-start"); err != nil {
		return err
	}
	// kube-proxy runs on the host, not as a DaemonSet, so it can start with
	// the kubelet: Services (the API server's own ClusterIP, which CoreDNS
	// needs) work as soon as the first pods do, instead of after the
	// add-on phase at the end of init. The addon/kube-proxy phase confirms
	// it; proxy.disabled in the ClusterConfiguration turns both off.
	if d.Cfg.Cluster.Proxy.Disabled {
		return nil
	}
	return d.startKubeProxy("kubelet-start")
}

func execPath(name string) (string, error) {
	for _, dir := range []string{"/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin"} {
		p := path.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not installed: run `apt-get install containerd runc`", name)
}

// linkCNIPlugins makes the CNI plugins containerd execs: links to the
// kubeboot binary, which dispatches on its name.
func (d *Data) linkCNIPlugins() error {
	if d.FS.DryRun() {
		d.logf("[dryrun] Would link the CNI plugins %v in %q to %s", node.CNIPlugins, d.FS.Path(node.CNIBinDir), d.Exe)
		return nil
	}
	dir := d.FS.Path(node.CNIBinDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range node.CNIPlugins {
		link := path.Join(dir, p)
		if cur, err := os.Readlink(link); err == nil && cur == d.Exe {
			continue
		}
		os.Remove(link)
		if err := os.Symlink(d.Exe, link); err != nil {
			return err
		}
	}
	return nil
}

// writeFirstCNIConfig writes the CNI configuration of the first node of a
// cluster before the runtime starts: the controller-manager hands the
// first node the first subnet of the pod network, so the node is Ready as
// soon as it registers instead of after the allocation round trip and the
// kubelet's next runtime check. The network agent rewrites it should the
// allocation differ.
func (d *Data) writeFirstCNIConfig() error {
	cidr, err := node.FirstNodeCIDR(d.Cfg.Cluster.Networking.PodSubnet)
	if err != nil {
		return err
	}
	conf, err := node.CNIConfList(d.FS, cidr)
	if err != nil {
		return err
	}
	d.logf("[kubelet-start] Writing the CNI configuration for pod CIDR %s to %q", cidr, d.FS.Path(node.CNIConfFile))
	return d.FS.WriteFile(node.CNIConfFile, conf, 0o644)
}

// startImageImport streams kubeboot's images into containerd in the
// background: the kubelet needs none of them to register and report
// Ready, and the first pods (the add-ons) wait for the import.
func (d *Data) startImageImport(ctx context.Context, criEndpoint string) {
	d.imported = make(chan error, 1)
	if d.FS.DryRun() {
		d.logf("[dryrun] Would import the images %v", []string{images.Pause, images.CoreDNS, images.TestServer})
		d.imported <- nil
		return
	}
	sock := criEndpoint[len("unix://"):]
	go func() {
		start := time.Now()
		// The import is node-side work: while the API server comes up it
		// runs at the node side's low CPU weight, as containerd does.
		var place func(pid int)
		if g, err := cpugroup.Open(d.FS.Path("/")); err == nil {
			place = func(pid int) { _ = g.Add(cpugroup.Node, pid) }
		}
		err := images.ImportBuilt(ctx, sock, d.Exe, place)
		if err == nil {
			d.logf("[images] Imported %s, %s and %s into containerd in %s (no registry contacted)", images.Pause, images.CoreDNS, images.TestServer, time.Since(start).Round(time.Millisecond))
		}
		d.imported <- err
	}()
}

func (d *Data) waitImages(ctx context.Context) error {
	if d.imported == nil {
		return nil
	}
	select {
	case err := <-d.imported:
		d.imported <- err // later callers see the same result
		if err != nil {
			return fmt.Errorf("importing kubeboot's images: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitKubelet waits for the kubelet's healthz, as kubeadm's kubelet-check.
func (d *Data) waitKubelet(ctx context.Context) error {
	return d.wait(ctx, "kubelet-check", d.renderer().KubeletSpec())
}

// waitNode waits until the kubelet has registered the node.
func (d *Data) waitNode(ctx context.Context, c kubernetes.Interface) (*corev1.Node, error) {
	name := d.Cfg.Init.NodeRegistration.Name
	timeout := d.Cfg.Init.Timeouts.KubeletHealthCheck.Duration
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := time.Now()
	for {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return n, nil
		}
		if !apierrors.IsNotFound(err) {
			d.logf("[mark-control-plane] Reading node %q: %v", name, err)
		}
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			d.logf("[mark-control-plane] Still waiting for the kubelet to register node %q", name)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("node %q was not registered within %s; see %s", name, timeout, d.FS.Path("/var/log/kubeboot/kubelet.log"))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func runMarkControlPlane(ctx context.Context, d *Data) error {
	labels := map[string]string{"node-role.kubernetes.io/control-plane": "", "node.kubernetes.io/exclude-from-external-load-balancers": ""}
	taints := d.Cfg.Init.NodeRegistration.Taints
	if taints == nil && !d.SingleNode {
		taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	}
	name := d.Cfg.Init.NodeRegistration.Name
	d.logf("[mark-control-plane] Marking the node %s as control-plane by adding the labels: [node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]", name)
	if len(taints) > 0 {
		d.logf("[mark-control-plane] Marking the node %s as control-plane by adding the taints %v", name, taints)
	} else {
		d.logf("[mark-control-plane] The node %s runs workloads: no control-plane taint", name)
	}
	return d.withClient(ctx, "mark the node as control-plane", func(ctx context.Context, c kubernetes.Interface) error {
		n, err := d.waitNode(ctx, c)
		if err != nil {
			return err
		}
		n = n.DeepCopy()
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		for k, v := range labels {
			n.Labels[k] = v
		}
		for _, t := range taints {
			has := false
			for _, cur := range n.Spec.Taints {
				if cur.Key == t.Key && cur.Effect == t.Effect {
					has = true
				}
			}
			if !has {
				n.Spec.Taints = append(n.Spec.Taints, t)
			}
		}
		_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

func runEnableClientCertRotation(_ context.Context, d *Data) error {
	current := path.Join(node.KubeletDir, "pki", "kubelet-client-current.pem")
	if _, err := os.Stat(d.FS.Path(current)); errors.Is(err, os.ErrNotExist) {
		d.logf("[kubelet-finalize] The kubelet still uses the client certificate in kubelet.conf; it rotates it into %q before expiry", d.FS.Path(current))
		return nil
	}
	file := path.Join(kubeconfig.Dir, "kubelet.conf")
	kc, _, user, err := d.Kubeconfigs.Load(file)
	if err != nil {
		return err
	}
	user.ClientCertificateData, user.ClientKeyData = nil, nil
	user.ClientCertificate, user.ClientKey = d.FS.Path(current), d.FS.Path(current)
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	d.logf("[kubelet-finalize] Updating %q to point to a rotatable kubelet client certificate and key", d.FS.Path(file))
	return d.FS.WriteFile(file, b, 0o600)
}

// startKubeProxy writes kube-proxy's configuration and hands it to the
// node daemon; doing it again with the same configuration changes nothing.
func (d *Data) startKubeProxy(prefix string) error {
	cfg, err := node.KubeProxyConfiguration(d.Cfg, d.FS, d.Cfg.Init.NodeRegistration.Name)
	if err != nil {
		return err
	}
	if err := d.FS.WriteFile(node.KubeProxyConfig, cfg, 0o644); err != nil {
		return err
	}
	return d.writeSpec(d.renderer().KubeProxySpec(), prefix)
}

func runKubeProxy(_ context.Context, d *Data) error {
	if err := d.startKubeProxy("addons"); err != nil {
		return err
	}
	d.logf("[addons] Applied essential addon: kube-proxy (on the host, under the node daemon)")
	return nil
}
