// Package pki owns the cluster's certificates: the list of them as data
// (name, file, CA, subject, usages, SANs), and generation, loading,
// validation of existing files, expiry and renewal, all driven by that one
// list. Files sit where kubeadm puts them, under the certificates dir.
package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"strings"

	certutil "k8s.io/client-go/util/cert"
	netutils "k8s.io/utils/net"

	"github.com/kubeboot/kubeboot/pkg/config"
)

// Spec describes one certificate kubeboot manages.
type Spec struct {
	// Name is kubeadm's name for it: the phase name and the argument of
	// `certs renew`.
	Name string
	// LongName is the help text.
	LongName string
	// BaseName is the file name without extension, relative to the
	// certificates dir ("etcd/server").
	BaseName string
	// CAName is the Name of the signing CA; empty for a CA.
	CAName       string
	CommonName   string
	Organization []string
	Usages       []x509.ExtKeyUsage
	// CommonNameIsNodeName replaces CommonName with the node name.
	CommonNameIsNodeName bool
	// AltNames computes the SANs from the configuration; nil for none.
	AltNames func(*config.Config) (certutil.AltNames, error)
}

// IsCA reports whether the spec is a certificate authority.
func (s Spec) IsCA() bool { return s.CAName == "" }

// subjectCN returns the common name for a configuration.
func (s Spec) subjectCN(c *config.Config) string {
	if s.CommonNameIsNodeName {
		return c.Init.NodeRegistration.Name
	}
	return s.CommonName
}

// Certificates is an ordered list: every CA comes before the certificates
// it signs, so that one pass over it can generate everything.
type Certificates []Spec

// List returns the certificates for a configuration, in generation order,
// the same order and names as kubeadm. With external etcd the etcd CA and
// its certificates are the etcd operator's business and are left out. A
// nil configuration gives the full list.
func List(c *config.Config) Certificates {
	l := Certificates{
		{Name: "ca", LongName: "self-signed Kubernetes CA to provision identities for other Kubernetes components", BaseName: "ca", CommonName: "kubernetes"},
		{Name: "apiserver", LongName: "certificate for serving the Kubernetes API", BaseName: "apiserver", CAName: "ca",
			CommonName: "kube-apiserver", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, AltNames: apiServerAltNames},
		{Name: "apiserver-kubelet-client", LongName: "certificate for the API server to connect to kubelet", BaseName: "apiserver-kubelet-client", CAName: "ca",
			CommonName: "kube-apiserver-kubelet-client", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{Name: "front-proxy-ca", LongName: "self-signed CA to provision identities for front proxy", BaseName: "front-proxy-ca", CommonName: "front-proxy-ca"},
		{Name: "front-proxy-client", LongName: "certificate for the front proxy client", BaseName: "front-proxy-client", CAName: "front-proxy-ca",
			CommonName: "front-proxy-client", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	}
	if c == nil || c.Cluster == nil || c.Cluster.Etcd.External == nil {
		l = append(l,
			Spec{Name: "etcd-ca", LongName: "self-signed CA to provision identities for etcd", BaseName: "etcd/ca", CommonName: "etcd-ca"},
			Spec{Name: "etcd-server", LongName: "certificate for serving etcd", BaseName: "etcd/server", CAName: "etcd-ca",
				CommonNameIsNodeName: true, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, AltNames: etcdServerAltNames},
			Spec{Name: "etcd-peer", LongName: "certificate for etcd nodes to communicate with each other", BaseName: "etcd/peer", CAName: "etcd-ca",
				CommonNameIsNodeName: true, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, AltNames: etcdPeerAltNames},
			Spec{Name: "etcd-healthcheck-client", LongName: "certificate for liveness probes to healthcheck etcd", BaseName: "etcd/healthcheck-client", CAName: "etcd-ca",
				CommonName: "kube-etcd-healthcheck-client", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
			Spec{Name: "apiserver-etcd-client", LongName: "certificate the apiserver uses to access etcd", BaseName: "apiserver-etcd-client", CAName: "etcd-ca",
				CommonName: "kube-apiserver-etcd-client", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		)
	}
	return l
}

// Get returns the spec with the given name.
func (l Certificates) Get(name string) (Spec, bool) {
	for _, s := range l {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names lists the names in order.
func (l Certificates) Names() []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = s.Name
	}
	return out
}

// Validate checks the ordering property the generator relies on: every
// certificate's CA exists and comes before it.
func (l Certificates) Validate() error {
	seen := map[string]bool{}
	for _, s := range l {
		if !s.IsCA() && !seen[s.CAName] {
			return fmt.Errorf("certificate %q is listed before its CA %q (or the CA is missing)", s.Name, s.CAName)
		}
		if seen[s.Name] {
			return fmt.Errorf("certificate %q is listed twice", s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// apiServerAltNames are kubeadm's SANs plus the loopback names, so that
// clients on the node itself (the node daemon, a local load balancer) can
// verify the server at localhost.
func apiServerAltNames(c *config.Config) (certutil.AltNames, error) {
	adv := netutils.ParseIPSloppy(c.Init.LocalAPIEndpoint.AdvertiseAddress)
	if adv == nil {
		return certutil.AltNames{}, fmt.Errorf("advertise address %q is not an IP address", c.Init.LocalAPIEndpoint.AdvertiseAddress)
	}
	vip, err := APIServerVirtualIP(c.Cluster.Networking.ServiceSubnet)
	if err != nil {
		return certutil.AltNames{}, err
	}
	alt := certutil.AltNames{IPs: []net.IP{vip, adv, net.IPv4(127, 0, 0, 1), net.IPv6loopback}}
	if n := c.Init.NodeRegistration.Name; n != "" {
		alt.DNSNames = append(alt.DNSNames, n)
	}
	alt.DNSNames = append(alt.DNSNames, "kubernetes", "kubernetes.default", "kubernetes.default.svc")
	if d := c.Cluster.Networking.DNSDomain; d != "" {
		alt.DNSNames = append(alt.DNSNames, "kubernetes.default.svc."+d)
	}
	alt.DNSNames = append(alt.DNSNames, "localhost")
	if ep := c.Cluster.ControlPlaneEndpoint; ep != "" {
		host := ep
		if h, _, err := net.SplitHostPort(ep); err == nil {
			host = h
		}
		addSAN(&alt, host)
	}
	for _, s := range c.Cluster.APIServer.CertSANs {
		addSAN(&alt, s)
	}
	return dedup(alt), nil
}

func etcdServerAltNames(c *config.Config) (certutil.AltNames, error) {
	var extra []string
	if c.Cluster.Etcd.Local != nil {
		extra = c.Cluster.Etcd.Local.ServerCertSANs
	}
	return etcdAltNames(c, extra)
}

func etcdPeerAltNames(c *config.Config) (certutil.AltNames, error) {
	var extra []string
	if c.Cluster.Etcd.Local != nil {
		extra = c.Cluster.Etcd.Local.PeerCertSANs
	}
	return etcdAltNames(c, extra)
}

func etcdAltNames(c *config.Config, extra []string) (certutil.AltNames, error) {
	adv := netutils.ParseIPSloppy(c.Init.LocalAPIEndpoint.AdvertiseAddress)
	if adv == nil {
		return certutil.AltNames{}, fmt.Errorf("advertise address %q is not an IP address", c.Init.LocalAPIEndpoint.AdvertiseAddress)
	}
	alt := certutil.AltNames{IPs: []net.IP{adv, net.IPv4(127, 0, 0, 1), net.IPv6loopback}}
	if n := c.Init.NodeRegistration.Name; n != "" {
		alt.DNSNames = append(alt.DNSNames, n)
	}
	alt.DNSNames = append(alt.DNSNames, "localhost")
	for _, s := range extra {
		addSAN(&alt, s)
	}
	return dedup(alt), nil
}

func addSAN(alt *certutil.AltNames, s string) {
	if ip := netutils.ParseIPSloppy(s); ip != nil {
		alt.IPs = append(alt.IPs, ip)
	} else {
		alt.DNSNames = append(alt.DNSNames, s)
	}
}

func dedup(alt certutil.AltNames) certutil.AltNames {
	var out certutil.AltNames
	seen := map[string]bool{}
	for _, d := range alt.DNSNames {
		if !seen[d] {
			seen[d] = true
			out.DNSNames = append(out.DNSNames, d)
		}
	}
	for _, ip := range alt.IPs {
		if k := ip.String(); !seen[k] {
			seen[k] = true
			out.IPs = append(out.IPs, ip)
		}
	}
	return out
}

// APIServerVirtualIP is the first address of the (first) service CIDR:
// the ClusterIP of the "kubernetes" Service.
func APIServerVirtualIP(serviceSubnet string) (net.IP, error) {
	cidrs, err := netutils.ParseCIDRs(strings.Split(serviceSubnet, ","))
	if err != nil || len(cidrs) == 0 {
		return nil, fmt.Errorf("service subnet %q: %v", serviceSubnet, err)
	}
	ip, err := netutils.GetIndexedIP(cidrs[0], 1)
	if err != nil {
		return nil, fmt.Errorf("service subnet %q has no first address: %w", serviceSubnet, err)
	}
	return ip, nil
}
