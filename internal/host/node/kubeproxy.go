package node

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// KubeProxyKubeconfigInConfigMap is the kubeconfig path the cluster-wide
// kube-proxy configuration names, kubeadm's: a kube-proxy DaemonSet mounts
// it from the kube-proxy ConfigMap there. kubeboot's own nodes run
// kube-proxy on the host with KubeProxyConf instead.
const KubeProxyKubeconfigInConfigMap = "/var/lib/kube-proxy/kubeconfig.conf"

// ClusterKubeProxyConfiguration is the cluster-wide kube-proxy
// configuration, what init stores in the kube-proxy ConfigMap (as kubeadm
// does) and every joining node reads back: the user's
// KubeProxyConfiguration document with, where it leaves them empty,
// iptables mode, the pod network, and conntrack left as the kernel has it
// (a network namespace cannot change the host-wide conntrack table size).
func ClusterKubeProxyConfiguration(c *config.Config) *kubeproxyv1alpha1.KubeProxyConfiguration {
	k := &kubeproxyv1alpha1.KubeProxyConfiguration{}
	if c.KubeProxy != nil {
		k = c.KubeProxy.DeepCopy()
	}
	k.APIVersion, k.Kind = kubeproxyv1alpha1.SchemeGroupVersion.String(), "KubeProxyConfiguration"
	if k.ClientConnection.Kubeconfig == "" {
		k.ClientConnection.Kubeconfig = KubeProxyKubeconfigInConfigMap
	}
	if k.Mode == "" {
		k.Mode = "iptables"
	}
	if k.ClusterCIDR == "" {
		k.ClusterCIDR = c.Cluster.Networking.PodSubnet
	}
	if k.BindAddress == "" {
		// kubeadm's default: every address of the API server's family.
		k.BindAddress = "0.0.0.0"
		if c.Init != nil && netutils.IsIPv6String(c.Init.LocalAPIEndpoint.AdvertiseAddress) {
			k.BindAddress = "::"
		}
	}
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
	return k
}

// KubeProxyConfiguration renders kube-proxy's configuration for this node:
// the cluster-wide one with this node's name and its kubeconfig,
// kube-proxy.conf under the root prefix.
func KubeProxyConfiguration(c *config.Config, fs fsys.FS, nodeName string) ([]byte, error) {
	k := ClusterKubeProxyConfiguration(c)
	k.ClientConnection.Kubeconfig = fs.Path(KubeProxyConf)
	k.HostnameOverride = nodeName
	return yaml.Marshal(k)
}
