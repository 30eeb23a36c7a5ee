// Package node owns what runs a workload node: the kubelet's
// configuration, the container runtime's, images and CNI.
package node

import (
	"path"
	"strings"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
	"github.com/kubeboot/kubeboot/internal/host/host"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// CgroupDriver is the cgroup driver of a node's kubelet and runtime: the
// one the user's KubeletConfiguration document names, else this host's
// (host.CgroupDriver). It needs no more of c than that document, which a
// joining node has before the cluster's part (its preflight).
func CgroupDriver(c *config.Config) string {
	if c != nil && c.Kubelet != nil && c.Kubelet.CgroupDriver != "" {
		return c.Kubelet.CgroupDriver
	}
	return host.CgroupDriver()
}

// KubeletConfiguration is the cluster-wide kubelet configuration kubeboot
// uploads to the kubelet-config ConfigMap, with node paths: the user's
// KubeletConfiguration document, with kubeadm's defaults for the fields it
// leaves empty, plus what this host needs: its cgroup driver (systemd's
// where systemd is init, as kubeadm; cgroupfs elsewhere) and, on cgroup v1
// only, failCgroupV1: false. A document that names either wins.
func KubeletConfiguration(c *config.Config) *kubeletv1beta1.KubeletConfiguration {
	k := &kubeletv1beta1.KubeletConfiguration{}
	if c.Kubelet != nil {
		k = c.Kubelet.DeepCopy()
	}
	k.APIVersion, k.Kind = kubeletv1beta1.SchemeGroupVersion.String(), "KubeletConfiguration"
	k.CgroupDriver = CgroupDriver(c)
	if k.FailCgroupV1 == nil && !host.CgroupV2() {
		k.FailCgroupV1 = ptr.To(false)
	}
	if len(k.ClusterDNS) == 0 {
		if ip := ClusterDNSIP(c.Cluster.Networking.ServiceSubnet); ip != "" {
			k.ClusterDNS = []string{ip}
		}
	}
	if k.ClusterDomain == "" {
		k.ClusterDomain = c.Cluster.Networking.DNSDomain
	}
	if k.Authentication.X509.ClientCAFile == "" {
		k.Authentication.X509.ClientCAFile = path.Join(c.Cluster.CertificatesDir, "ca.crt")
	}
	if k.Authentication.Anonymous.Enabled == nil {
		k.Authentication.Anonymous.Enabled = ptr.To(false)
	}
	if k.Authentication.Webhook.Enabled == nil {
		k.Authentication.Webhook.Enabled = ptr.To(true)
	}
	if k.Authorization.Mode == "" {
		k.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeWebhook
	}
	// Client certificate rotation is always on, as kubeadm sets it: the
	// kubelet.conf certificate is renewed by the kubelet, not by kubeboot.
	k.RotateCertificates = true
	if k.StaticPodPath == "" {
		k.StaticPodPath = "/etc/kubernetes/manifests"
	}
	// Cache (a GET per pod sync, cached for the TTL the controller-manager
	// sets by cluster size) rather than the default Watch (a watch per
	// object). The node authorizer admits a node's request for a pod's
	// ConfigMap only once it has seen the pod bound there, and the kubelet
	// sees the pod at the same time: a watch started in that window is
	// refused and backs off for 1-2 s (the first CoreDNS pods hit it in
	// half of the bench runs), where a refused GET is retried after 0.5 s.
	// A pod sees an updated ConfigMap or Secret after the same kubelet sync
	// period either way.
	if k.ConfigMapAndSecretChangeDetectionStrategy == "" {
		k.ConfigMapAndSecretChangeDetectionStrategy = kubeletv1beta1.TTLCacheChangeDetectionStrategy
	}
	if k.HealthzBindAddress == "" {
		k.HealthzBindAddress = "127.0.0.1"
	}
	if k.HealthzPort == nil {
		k.HealthzPort = ptr.To[int32](10248) // kubeadm's constants.KubeletHealthzPort
	}
	return k
}

// ClusterDNSIP is the tenth address of the first service CIDR, where
// kubeadm puts the kube-dns Service.
func ClusterDNSIP(serviceSubnet string) string {
	cidrs, err := netutils.ParseCIDRs(strings.Split(serviceSubnet, ","))
	if err != nil || len(cidrs) == 0 {
		return ""
	}
	ip, err := netutils.GetIndexedIP(cidrs[0], 10)
	if err != nil {
		return ""
	}
	return ip.String()
}

// LocalKubeletConfiguration is the kubelet's /var/lib/kubelet/config.yaml
// on this node: the cluster-wide configuration with its paths under the
// root prefix and the node's CRI endpoint.
//
// It also keeps the node apart from other nodes of the same machine: its
// pods' cgroups under the node's own parent cgroup (the kubelet removes
// every pod cgroup under its root that it does not know, so two kubelets
// sharing "/" deleted each other's pods), and its pods' logs under the
// root prefix.
//
// resolvConf, when set, is the resolv.conf for pods with dnsPolicy
// Default (see DetectHostDNS); a node path under the root prefix when it
// is PodResolvConf.
func LocalKubeletConfiguration(c *config.Config, fs fsys.FS, criEndpoint, resolvConf string) ([]byte, error) {
	k := KubeletConfiguration(c)
	if resolvConf != "" {
		if resolvConf == PodResolvConf {
			resolvConf = fs.Path(resolvConf)
		}
		k.ResolverConfig = &resolvConf
	}
	k.Authentication.X509.ClientCAFile = fs.Path(k.Authentication.X509.ClientCAFile)
	k.StaticPodPath = fs.Path(k.StaticPodPath)
	k.ContainerRuntimeEndpoint = criEndpoint
	if k.CgroupRoot == "" {
		k.CgroupRoot, _ = cpugroup.Parent(fs.Path("/"))
	}
	if k.PodLogsDir == "" {
		k.PodLogsDir = fs.Path(PodLogsDir)
	}
	if k.VolumePluginDir == "" {
		// The kubelet creates its FlexVolume plugin directory.
		k.VolumePluginDir = fs.Path(VolumePluginDir)
	}
	return yaml.Marshal(k)
}
