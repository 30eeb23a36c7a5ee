package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/kubeboot/kubeboot/pkg/config"
)

// The CLI maps its flags onto kubeboot's configuration types; pkg/config
// and the lifecycle API know nothing of flags.

// addInitConfigFlags declares init's configuration flags, as kubeadm's.
func addInitConfigFlags(fs *pflag.FlagSet, f *config.InitFlags) {
	fs.StringVar(&f.ConfigFile, config.FlagConfig, "", "Path to a kubeadm v1beta4 configuration file (InitConfiguration, ClusterConfiguration, KubeletConfiguration, KubeProxyConfiguration)")
	fs.StringVar(&f.AdvertiseAddress, config.FlagAdvertiseAddress, "", "The IP address the API server advertises it is listening on (default: the address of the default-route interface)")
	fs.Int32Var(&f.BindPort, config.FlagBindPort, 6443, "Port for the API server to bind to")
	fs.StringVar(&f.ControlPlaneEndpoint, config.FlagControlPlaneEndpoint, "", "A stable IP address or DNS name (with optional port) for the control plane; every kubeconfig kubeboot writes uses it")
	fs.StringVar(&f.PodNetworkCIDR, config.FlagPodNetworkCIDR, config.DefaultPodSubnet, "The range of IP addresses for the pod network; node pod CIDRs are allocated from it")
	fs.StringVar(&f.ServiceCIDR, config.FlagServiceCIDR, "10.96.0.0/12", "The range of IP addresses for service VIPs")
	fs.StringVar(&f.ServiceDNSDomain, config.FlagServiceDNSDomain, "cluster.local", "The DNS domain of services")
	fs.StringVar(&f.NodeName, config.FlagNodeName, "", "The node's name (default: the hostname)")
	fs.StringVar(&f.CertDir, config.FlagCertDir, config.DefaultCertificatesDir, "Where certificates are stored (under --root)")
	fs.StringVar(&f.KubernetesVersion, config.FlagKubernetesVersion, "", "The Kubernetes version of the control plane; kubeboot runs the one it embeds")
	fs.StringSliceVar(&f.CertSANs, config.FlagCertSANs, nil, "Extra Subject Alternative Names (IPs or DNS names) for the API server certificate")
	fs.StringVar(&f.Token, config.FlagToken, "", "The bootstrap token, of the form [a-z0-9]{6}.[a-z0-9]{16} (default: generated)")
	fs.DurationVar(&f.TokenTTL, config.FlagTokenTTL, 24*time.Hour, "How long the bootstrap token is valid; 0 means it never expires")
	fs.StringVar(&f.CRISocket, config.FlagCRISocket, "", "The CRI socket of a container runtime you run; by default kubeboot runs containerd itself")
	fs.StringVar(&f.CertificateKey, config.FlagCertificateKey, "", "The key that encrypts the control-plane certificates in the kubeadm-certs Secret (64 hex characters)")
}

// addJoinConfigFlags declares join's configuration flags, as kubeadm's.
func addJoinConfigFlags(fs *pflag.FlagSet, f *config.JoinFlags) {
	fs.StringVar(&f.ConfigFile, config.FlagConfig, "", "Path to a kubeadm v1beta4 JoinConfiguration file")
	fs.StringVar(&f.NodeName, config.FlagNodeName, "", "The node's name (default: the hostname)")
	fs.StringVar(&f.CRISocket, config.FlagCRISocket, "", "The CRI socket of a container runtime you run; by default kubeboot runs containerd itself")
	fs.StringVar(&f.Token, config.FlagToken, "", "Use this token for both discovery-token and tls-bootstrap-token when those values are not provided")
	fs.StringVar(&f.DiscoveryToken, config.FlagDiscoveryToken, "", "The token to validate cluster information fetched from the API server")
	fs.StringSliceVar(&f.CACertHashes, config.FlagDiscoveryCAHash, nil, "For token-based discovery, validate that the root CA public key matches this hash (format: \"sha256:<hex>\"); may be repeated")
	fs.BoolVar(&f.UnsafeSkipCA, config.FlagDiscoverySkipCAHash, false, "For token-based discovery, allow joining without --discovery-token-ca-cert-hash pinning (unsafe: trusts whatever CA the endpoint presents)")
	fs.StringVar(&f.DiscoveryFile, config.FlagDiscoveryFile, "", "For file-based discovery, a file or an HTTPS URL from which to load cluster information")
	fs.StringVar(&f.TLSBootstrapToken, config.FlagTLSBootstrapToken, "", "The token used to temporarily authenticate with the control plane while joining the node")
	fs.BoolVar(&f.ControlPlane, config.FlagControlPlane, false, "Create a new control plane instance on this node")
	fs.StringVar(&f.AdvertiseAddress, config.FlagAdvertiseAddress, "", "With --control-plane, the IP address this node's API server advertises (default: the address of the default-route interface)")
	fs.Int32Var(&f.BindPort, config.FlagBindPort, 6443, "With --control-plane, the port this node's API server binds to")
	fs.StringVar(&f.CertificateKey, config.FlagCertificateKey, "", "With --control-plane, the key that decrypts the certificates in the kubeadm-certs Secret (printed by kubeboot init --upload-certs)")
}

// addLifecycleFlags declares init's and join's day-2 settings.
func addLifecycleFlags(fs *pflag.FlagSet, l *config.Lifecycle) {
	fs.DurationVar(&l.CertificateRenewBefore, "certificate-renew-before", config.DefaultCertificateRenewBefore, "The node daemon renews each certificate and kubeconfig of a control plane this long before it expires (or after two thirds of its validity, when that comes first), and restarts the components that read it only at start")
	fs.DurationVar(&l.EtcdSnapshotInterval, "etcd-snapshot-interval", config.DefaultEtcdSnapshotInterval, "How often the node daemon of a control plane with local etcd saves an etcd snapshot with the cluster's keys, as `kubeboot etcd snapshot save`; 0 turns it off")
	fs.IntVar(&l.EtcdSnapshotKeep, "etcd-snapshot-keep", config.DefaultEtcdSnapshotKeep, "How many scheduled etcd snapshots the node daemon keeps; older ones are removed")
	fs.StringVar(&l.EtcdSnapshotDir, "etcd-snapshot-dir", config.DefaultEtcdSnapshotDir, "Where the node daemon writes scheduled etcd snapshots (mode 0600, in a 0700 directory)")
}

// given names the flags set on the command line, in order of their names.
func given(fs *pflag.FlagSet) config.Given {
	var names config.Given
	fs.Visit(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}
