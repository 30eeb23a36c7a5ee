package initphases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/markcontrolplane"

	"github.com/kubeboot/kubeboot/internal/base/poll"
	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/network/cni"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/pkg/config"
)

func runKubeletStart(ctx context.Context, d *Data) error {
	if err := d.PrepareHost("kubelet-start"); err != nil {
		return err
	}
	if err := d.writeFirstCNIConfig(); err != nil {
		return err
	}
	if err := d.StartRuntime(ctx, "kubelet-start"); err != nil {
		return err
	}
	if err := d.StartKubelet("kubelet-start"); err != nil {
		return err
	}
	// kube-proxy runs on the host, not as a DaemonSet, so it can start with
	// the kubelet: Services (the API server's own ClusterIP, which CoreDNS
	// needs) work as soon as the first pods do, instead of after the
	// add-on phase at the end of init. The addon/kube-proxy phase confirms
	// it; proxy.disabled in the ClusterConfiguration turns it off.
	return d.StartNetwork("kubelet-start")
}

// writeFirstCNIConfig writes the CNI configuration of the first node of a
// cluster before the runtime starts, as flannel will write it: the
// controller-manager hands the first node the first subnet of the pod
// network, so the node is Ready as soon as it registers instead of after
// the allocation round trip, flannel's lease and the kubelet's next
// runtime check. The pods' MTU is the node interface's less the backend's
// overhead, flannel's own figure. flannel rewrites the file should its
// lease differ.
func (d *Data) writeFirstCNIConfig() error {
	r := d.Renderer()
	if !r.RunsFlannel() {
		return nil
	}
	v4, v6 := config.NodeMaskSizes(d.Cfg.Cluster)
	subnets, err := node.FirstNodeSubnets(d.Cfg.Cluster.Networking.PodSubnet, v4, v6)
	if err != nil {
		return err
	}
	mtu := cni.PodMTU(d.Cfg.Init.LocalAPIEndpoint.AdvertiseAddress, d.Cfg.PodNetwork.Overhead(d.Cfg.Cluster.Networking.PodSubnet))
	if mtu <= 0 {
		return nil // flannel writes it, from the interface it finds
	}
	conf, err := node.CNIConfList(d.FS, subnets, mtu)
	if err != nil {
		return err
	}
	d.Logf("[kubelet-start] Writing the CNI configuration for pod CIDR %s, MTU %d, to %q", strings.Join(subnets, ","), mtu, d.FS.Path(node.CNIConfFile))
	return d.FS.WriteFile(node.CNIConfFile, conf, 0o644)
}

// waitKubelet waits for the kubelet's healthz, as kubeadm's kubelet-check.
func (d *Data) waitKubelet(ctx context.Context) error {
	return d.Wait(ctx, "kubelet-check", d.Renderer().KubeletSpec())
}

// waitNode waits until the kubelet has registered the node.
func (d *Data) waitNode(ctx context.Context, c kubernetes.Interface) (*corev1.Node, error) {
	name := d.Cfg.Init.NodeRegistration.Name
	timeout := d.Cfg.Init.Timeouts.KubeletHealthCheck.Duration
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var n *corev1.Node
	progress := poll.Progress(d.Logf, "mark-control-plane", fmt.Sprintf("the kubelet to register node %q", name), false)
	err := poll.Until(ctx, 50*time.Millisecond, 5*time.Second, progress, func(ctx context.Context) error {
		var err error
		if n, err = c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
			d.Logf("[mark-control-plane] Reading node %q: %v", name, err)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("node %q was not registered within %s; see %s", name, timeout, d.FS.Path(node.ComponentLog(component.Kubelet)))
	}
	return n, nil
}

func runMarkControlPlane(ctx context.Context, d *Data) error {
	taints := d.Cfg.Init.NodeRegistration.Taints
	if taints == nil && !d.SingleNode {
		taints = []corev1.Taint{kubeadmconstants.ControlPlaneTaint}
	}
	name := d.Cfg.Init.NodeRegistration.Name
	if len(taints) == 0 {
		d.Logf("[mark-control-plane] The node %s runs workloads: no control-plane taint", name)
	}
	return d.withClient(ctx, "mark the node as control-plane", func(ctx context.Context, c kubernetes.Interface) error {
		// Waited for here, for an error that points at the kubelet's log.
		if _, err := d.waitNode(ctx, c); err != nil {
			return err
		}
		// kubeadm's own labels, taints and lines.
		return apiclient.KubeadmPrintsTo(d.Out, func() error { return markcontrolplane.MarkControlPlane(c, name, taints) })
	})
}

func runEnableClientCertRotation(_ context.Context, d *Data) error {
	current := path.Join(node.KubeletDir, "pki", "kubelet-client-current.pem")
	if _, err := os.Stat(d.FS.Path(current)); errors.Is(err, os.ErrNotExist) {
		d.Logf("[kubelet-finalize] The kubelet still uses the client certificate in kubelet.conf; it rotates it into %q before expiry", d.FS.Path(current))
		return nil
	}
	file := path.Join(node.KubernetesDir, "kubelet.conf")
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
	d.Logf("[kubelet-finalize] Updating %q to point to a rotatable kubelet client certificate and key", d.FS.Path(file))
	return d.FS.WriteFile(file, b, 0o600)
}

func runKubeProxy(ctx context.Context, d *Data) error {
	if !d.ControlPlaneOnly {
		if err := d.StartKubeProxy("addons"); err != nil {
			return err
		}
	}
	if err := d.withClient(ctx, "store the kube-proxy configuration", func(ctx context.Context, c kubernetes.Interface) error {
		return bootstrap.UploadKubeProxyConfig(ctx, c, d.Cfg)
	}); err != nil {
		return err
	}
	if d.ControlPlaneOnly {
		d.Logf("[addons] Stored the kube-proxy configuration for the nodes that join")
		return nil
	}
	d.Logf("[addons] Applied essential addon: kube-proxy (on the host, under the node daemon)")
	return nil
}
