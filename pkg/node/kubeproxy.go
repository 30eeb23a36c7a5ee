package node

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/pkg/config"
	"github.com/kubeboot/kubeboot/pkg/fsys"
)

// KubeProxyConfiguration renders kube-proxy's configuration for this node
// from the user's KubeProxyConfiguration document: iptables mode, the
// pod CIDR, the node's name, kube-proxy.conf (whose server is the
// control-plane endpoint), and conntrack left as the kernel has it (a
// network namespace cannot change the host-wide conntrack table size).
func KubeProxyConfiguration(c *config.Config, fs fsys.FS, nodeName string) ([]byte, error) {
	k := &kubeproxyv1alpha1.KubeProxyConfiguration{}
	if c.KubeProxy != nil {
		k = c.KubeProxy.DeepCopy()
	}
	k.APIVersion, k.Kind = kubeproxyv1alpha1.SchemeGroupVersion.String(), "KubeProxyConfiguration"
	k.ClientConnection.Kubeconfig = fs.Path(KubeProxyConf)
	if k.Mode == "" {
		k.Mode = "iptables"
	}
	if k.ClusterCIDR == "" {
		k.ClusterCIDR = c.Cluster.Networking.PodSubnet
	}
	k.HostnameOverride = nodeName
	if k.Conntrack.MaxPerCore == nil {
		k.Conntrack.MaxPerCore = ptr.To[int32](0)
	}
	if k.Conntrack.TCPEstablishedTimeout == nil {
		k.Conntrack.TCPEstablishedTimeout = &metav1.Duration{}
	}
	if k.Conntrack.TCPCloseWaitTimeout == nil {
		k.Conntrack.TCPCloseWaitTimeout = &metav1.Duration{}
	}
	if k.HealthzBindAddress == "" {
		k.HealthzBindAddress = "127.0.0.1:10256"
	}
	if k.MetricsBindAddress == "" {
		k.MetricsBindAddress = "127.0.0.1:10249"
	}
	return yaml.Marshal(k)
}
