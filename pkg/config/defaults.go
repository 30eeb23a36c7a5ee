package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"k8s.io/klog/v2"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubeboot/kubeboot/internal/base/version"
)

// ManagedCRISocket is the CRI socket of the containerd kubeboot runs
// itself (a node path, under the root prefix); it is the default. Any
// other socket (--cri-socket) is a runtime the operator runs.
const ManagedCRISocket = "unix:///run/kubeboot/containerd/containerd.sock"

// DefaultCRISocket is the socket written into default files.
const DefaultCRISocket = ManagedCRISocket

// kubeadm's defaults of the node paths its documents name.
const (
	DefaultCertificatesDir = kubeadmv1.DefaultCertificatesDir
	DefaultEtcdDataDir     = kubeadmv1.DefaultEtcdDataDir
)

// DefaultPodSubnet is the pod network when none is given: kubeboot
// brings its own pod networking, which needs one.
const DefaultPodSubnet = "10.244.0.0/16"

// Host is what dynamic defaults need to know about the machine. Tests fill
// it in; commands get it from DetectHost.
type Host struct {
	Hostname  string
	DefaultIP string // address of the interface holding the default route
	// DefaultIPv4 and DefaultIPv6 are the addresses of the interface of
	// each family's default route (main table).
	DefaultIPv4, DefaultIPv6 string
	// Siblings maps each global address of the host to the other global
	// addresses of its interface: a dual-stack node's second address is
	// on the interface of its first (flannel requires it).
	Siblings map[string][]string
}

// DetectHost reads the hostname and the default-route address. A missing
// default route leaves DefaultIP empty; validation then asks for
// --apiserver-advertise-address.
func DetectHost() Host {
	h := Host{}
	if name, err := os.Hostname(); err == nil {
		h.Hostname = strings.ToLower(name)
	}
	if ip, err := utilnet.ChooseHostInterface(); err == nil {
		h.DefaultIP = ip.String()
	}
	h.DefaultIPv4, h.DefaultIPv6 = defaultRouteAddr(netlink.FAMILY_V4), defaultRouteAddr(netlink.FAMILY_V6)
	h.Siblings = siblings()
	if h.DefaultIP == "" {
		// ChooseHostInterface passes over a default route without a
		// gateway (an on-link IPv6 one).
		h.DefaultIP = h.DefaultIPv4
		if h.DefaultIP == "" {
			h.DefaultIP = h.DefaultIPv6
		}
	}
	return h
}

// usable says whether an address may be a node's: global, and neither
// tentative, failed nor deprecated.
func usable(a netlink.Addr) bool {
	return a.IP.IsGlobalUnicast() && a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED|unix.IFA_F_DEPRECATED) == 0
}

// siblings maps each usable address to the other usable addresses of its
// interface.
func siblings() map[string][]string {
	links, err := netlink.LinkList()
	if err != nil {
		return nil
	}
	out := map[string][]string{}
	for _, l := range links {
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			continue
		}
		var ips []string
		for _, a := range addrs {
			if usable(a) {
				ips = append(ips, a.IP.String())
			}
		}
		for _, ip := range ips {
			for _, o := range ips {
				if o != ip {
					out[ip] = append(out[ip], o)
				}
			}
		}
	}
	return out
}

// defaultRouteAddr is the first usable address of the family on the
// interface of the family's default route in the main table (not a VPN's
// table of its own); "" without one.
func defaultRouteAddr(family int) string {
	routes, err := netlink.RouteList(nil, family)
	if err != nil {
		return ""
	}
	for _, r := range routes {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		link, err := netlink.LinkByIndex(r.LinkIndex)
		if err != nil {
			continue
		}
		addrs, err := netlink.AddrList(link, family)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if usable(a) {
				return a.IP.String()
			}
		}
	}
	return ""
}

// DualStackNodeIP gives a node of a dual-stack cluster its address of
// each family, as kubeadm's users give it (nodeRegistration
// kubeletExtraArgs node-ip: "<IPv4>,<IPv6>"): the advertised address (or
// the one node-ip names) first, then the host's address of the other
// family on the same interface (flannel carries both families over one),
// else on the interface of that family's default route. A node-ip of both
// families is kept; one of a single family is completed; a single-stack
// pod network needs none. init (cluster.Init) and join call it on the
// node's own registration.
func DualStackNodeIP(reg *kubeadmv1.NodeRegistrationOptions, advertise, podSubnet string, h Host) error {
	if !DualStack(podSubnet) {
		return nil
	}
	idx := -1
	for i, a := range reg.KubeletExtraArgs {
		if a.Name == "node-ip" {
			idx = i
		}
	}
	first := advertise
	if idx >= 0 {
		given := reg.KubeletExtraArgs[idx].Value
		if DualStack(given) {
			return nil
		}
		first = strings.TrimSpace(strings.Split(given, ",")[0])
	}
	if first == "" {
		return nil
	}
	want6 := !strings.Contains(first, ":")
	family := map[bool]string{true: "IPv6", false: "IPv4"}[want6]
	other := ""
	for _, s := range h.Siblings[first] {
		if strings.Contains(s, ":") == want6 {
			other = s
			break
		}
	}
	if other == "" {
		other = map[bool]string{true: h.DefaultIPv6, false: h.DefaultIPv4}[want6]
	}
	if other == "" {
		return fmt.Errorf("the pod network is dual-stack (%s) but this host has no %s address, neither beside %s nor on a default route: give the node's addresses of both families (nodeRegistration.kubeletExtraArgs node-ip: %s,<%s>)", podSubnet, family, first, first, family)
	}
	arg := kubeadmv1.Arg{Name: "node-ip", Value: first + "," + other}
	if idx >= 0 {
		reg.KubeletExtraArgs[idx] = arg
	} else {
		reg.KubeletExtraArgs = append(reg.KubeletExtraArgs, arg)
	}
	return nil
}

// DualStack reports whether a subnet list ("v4,v6") has both families.
func DualStack(subnets string) bool {
	var v4, v6 bool
	for _, s := range strings.Split(subnets, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if strings.Contains(s, ":") {
			v6 = true
		} else {
			v4 = true
		}
	}
	return v4 && v6
}

// EnsureInit makes sure the configuration has the documents `init` needs,
// creating empty ones where the file had none (kubeadm accepts a file with
// only a ClusterConfiguration, for instance).
func (c *Config) EnsureInit() {
	if c.Init == nil {
		c.Init = &kubeadmv1.InitConfiguration{}
	}
	if c.Cluster == nil {
		c.Cluster = &kubeadmv1.ClusterConfiguration{}
	}
}

// DefaultInit applies kubeadm's static v1beta4 defaults and the dynamic
// ones (node name, advertise address, bootstrap token) to the Init and
// Cluster documents, creating them if missing.
func (c *Config) DefaultInit(h Host) error {
	c.EnsureInit()
	if c.Cluster.KubernetesVersion == "" {
		c.Cluster.KubernetesVersion = version.Kubernetes
	}
	kubeadmv1.SetObjectDefaults_InitConfiguration(c.Init)
	kubeadmv1.SetObjectDefaults_ClusterConfiguration(c.Cluster)
	if c.Cluster.Networking.PodSubnet == "" {
		c.Cluster.Networking.PodSubnet = DefaultPodSubnet
	}
	if c.Init.NodeRegistration.Name == "" {
		c.Init.NodeRegistration.Name = h.Hostname
	}
	c.Init.NodeRegistration.CRISocket = defaultCRISocket(c.Init.NodeRegistration.CRISocket)
	if c.Init.LocalAPIEndpoint.AdvertiseAddress == "" {
		c.Init.LocalAPIEndpoint.AdvertiseAddress = h.DefaultIP
	}
	for i := range c.Init.BootstrapTokens {
		if c.Init.BootstrapTokens[i].Token != nil {
			continue
		}
		tok, err := bootstraputil.GenerateBootstrapToken()
		if err != nil {
			return fmt.Errorf("generating a bootstrap token: %w", err)
		}
		bts, err := bootstraptokenv1.NewBootstrapTokenString(tok)
		if err != nil {
			return err
		}
		c.Init.BootstrapTokens[i].Token = bts
	}
	return nil
}

// DefaultJoin applies kubeadm's defaults to the Join document.
func (c *Config) DefaultJoin(h Host) {
	if c.Join == nil {
		c.Join = &kubeadmv1.JoinConfiguration{}
	}
	kubeadmv1.SetObjectDefaults_JoinConfiguration(c.Join)
	if c.Join.NodeRegistration.Name == "" {
		c.Join.NodeRegistration.Name = h.Hostname
	}
	c.Join.NodeRegistration.CRISocket = defaultCRISocket(c.Join.NodeRegistration.CRISocket)
	if c.Join.ControlPlane != nil && c.Join.ControlPlane.LocalAPIEndpoint.AdvertiseAddress == "" {
		c.Join.ControlPlane.LocalAPIEndpoint.AdvertiseAddress = h.DefaultIP
	}
}

// DefaultReset applies kubeadm's defaults to the Reset document.
func (c *Config) DefaultReset() {
	if c.Reset == nil {
		c.Reset = &kubeadmv1.ResetConfiguration{}
	}
	kubeadmv1.SetObjectDefaults_ResetConfiguration(c.Reset)
}

// placeholderToken is what kubeadm prints in default files.
const placeholderToken = "abcdef.0123456789abcdef"

// InitDefaults returns the documents `config print init-defaults` prints:
// complete and valid, with kubeadm's placeholders for what only the
// machine knows.
func InitDefaults() (*Config, error) {
	c := &Config{}
	c.EnsureInit()
	bts, err := bootstraptokenv1.NewBootstrapTokenString(placeholderToken)
	if err != nil {
		return nil, err
	}
	c.Init.BootstrapTokens = []bootstraptokenv1.BootstrapToken{{Token: bts}}
	if err := c.DefaultInit(Host{Hostname: "node", DefaultIP: "1.2.3.4"}); err != nil {
		return nil, err
	}
	return c, nil
}

// JoinDefaults returns the documents `config print join-defaults` prints.
func JoinDefaults() *Config {
	c := &Config{Join: &kubeadmv1.JoinConfiguration{
		Discovery: kubeadmv1.Discovery{
			BootstrapToken: &kubeadmv1.BootstrapTokenDiscovery{
				Token:                    placeholderToken,
				APIServerEndpoint:        "kube-apiserver:6443",
				UnsafeSkipCAVerification: true,
			},
			TLSBootstrapToken: placeholderToken,
		},
	}}
	c.DefaultJoin(Host{Hostname: "node"})
	return c
}

// ResetDefaults returns the documents `config print reset-defaults` prints.
func ResetDefaults() *Config {
	c := &Config{}
	c.DefaultReset()
	c.Reset.CRISocket = DefaultCRISocket
	return c
}

// defaultCRISocket defaults an empty CRI socket and, as kubeadm's
// SetNodeRegistrationDynamicDefaults does, prepends "unix://" to one
// given as a bare path, with kubeadm's warning. Unlike kubeadm, a socket
// with another scheme is left as it is, for validation to name that
// scheme rather than a mangled "unix://tcp://...".
func defaultCRISocket(s string) string {
	switch {
	case s == "":
		return DefaultCRISocket
	case !strings.Contains(s, "://"):
		klog.Warningf("Usage of CRI endpoints without URL scheme is deprecated and can cause kubelet errors "+
			"in the future. Automatically prepending scheme %q to the \"criSocket\" with value %q. "+
			"Please update your configuration!", kubeadmv1.DefaultContainerRuntimeURLScheme, s)
		return kubeadmv1.DefaultContainerRuntimeURLScheme + "://" + s
	}
	return s
}
