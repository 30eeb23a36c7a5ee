package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
)

// Resolver files of the host (not under the root prefix: they describe
// the machine, not kubeboot's state).
var (
	// HostResolvConf is the resolv.conf of the host's own processes.
	HostResolvConf = "/etc/resolv.conf"
	// SystemdResolvedUpstream is systemd-resolved's list of the upstream
	// servers it forwards to; /etc/resolv.conf names only its stub
	// (127.0.0.53) on such hosts. kubeadm hands this file to the kubelet.
	SystemdResolvedUpstream = "/run/systemd/resolve/resolv.conf"
)

// PodResolvConf is the node path of the resolv.conf kubeboot writes for
// pods with dnsPolicy Default when the host's names loopback servers: the
// host's, without them.
const PodResolvConf = ConfigDir + "/resolv.conf"

// ResolvConf is a parsed resolv.conf.
type ResolvConf struct {
	// Path is where it was read.
	Path string
	// Nameservers usable from a pod's network namespace, and the loopback
	// ones, which in a pod would name the pod itself.
	Nameservers, Loopback []string
	// Other holds the lines besides nameservers (search, options).
	Other []string
}

// ParseResolvConf reads the nameserver lines of a resolv.conf.
func ParseResolvConf(path string, data []byte) ResolvConf {
	r := ResolvConf{Path: path}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if IsLoopback(f[1]) {
				r.Loopback = append(r.Loopback, f[1])
			} else {
				r.Nameservers = append(r.Nameservers, f[1])
			}
			continue
		}
		if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, ";") {
			r.Other = append(r.Other, line)
		}
	}
	return r
}

// IsLoopback reports whether a nameserver address is a loopback (or
// unspecified) address: meaningless inside a pod's network namespace, and
// a forwarding loop for CoreDNS.
func IsLoopback(addr string) bool {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		addr = h
	}
	ip := net.ParseIP(strings.Trim(addr, "[]"))
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// Filtered is the resolv.conf without its loopback nameservers.
func (r ResolvConf) Filtered() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by kubeboot from %s, without its loopback nameservers %v,\n# which inside a pod would name the pod itself.\n", r.Path, r.Loopback)
	for _, n := range r.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", n)
	}
	for _, l := range r.Other {
		b.WriteString(l + "\n")
	}
	return b.Bytes()
}

// HostDNS is what the host's resolver configuration means for the pods of
// this node.
type HostDNS struct {
	// Source is the host file that pods with dnsPolicy Default take their
	// servers from.
	Source ResolvConf
	// KubeletResolvConf is the node path (or, when it is a host file left
	// as it is, the host path) the kubelet hands those pods.
	KubeletResolvConf string
	// Write, when set, is the content kubeboot writes at PodResolvConf.
	Write []byte
	// Note, when set, says why the decision differs from the configuration.
	Note string
}

// Warning says what the pods of this node cannot resolve, or "".
func (h HostDNS) Warning() string {
	if len(h.Source.Nameservers) > 0 || len(h.Source.Loopback) == 0 {
		return ""
	}
	return fmt.Sprintf("%s names only loopback nameservers %v (a local resolver such as systemd-resolved's stub or dnsmasq), which pods cannot reach: pods with dnsPolicy Default get no nameserver on this node",
		h.Source.Path, h.Source.Loopback)
}

// DetectHostDNS decides which resolv.conf the kubelet hands pods with
// dnsPolicy Default (CoreDNS among them): the KubeletConfiguration's
// resolvConf when the operator set one (loopback servers refused),
// systemd-resolved's upstream list where the host has one (as kubeadm
// does), else the host's resolv.conf; and when that names loopback
// servers, a copy of it without them, which kubeboot writes at
// PodResolvConf.
func DetectHostDNS(configured *string) (HostDNS, error) {
	if configured != nil {
		if *configured == "" {
			// The kubelet then gives such pods no servers at all.
			return HostDNS{Source: ResolvConf{Path: "the KubeletConfiguration's empty resolvConf"}}, nil
		}
		data, err := os.ReadFile(*configured)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// A cluster-wide setting made on another host: this one decides
			// for itself.
			h, err := DetectHostDNS(nil)
			h.Note = fmt.Sprintf("the cluster's KubeletConfiguration names resolvConf %s, which this host does not have: using %s", *configured, h.Source.Path)
			return h, err
		case err != nil:
			return HostDNS{}, fmt.Errorf("the KubeletConfiguration's resolvConf: %w", err)
		}
		r := ParseResolvConf(*configured, data)
		if len(r.Loopback) > 0 {
			return HostDNS{}, fmt.Errorf("the KubeletConfiguration's resolvConf %s names loopback nameservers %v: pods and CoreDNS cannot use them; name the servers your local resolver uses (for systemd-resolved: %s)", *configured, r.Loopback, SystemdResolvedUpstream)
		}
		return HostDNS{Source: r, KubeletResolvConf: *configured}, nil
	}
	path := SystemdResolvedUpstream
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		path = HostResolvConf
		data, err = os.ReadFile(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		empty := ResolvConf{Path: path}
		return HostDNS{Source: empty, KubeletResolvConf: PodResolvConf, Write: empty.Filtered()}, nil
	}
	if err != nil {
		return HostDNS{}, fmt.Errorf("reading the host's resolver configuration: %w", err)
	}
	r := ParseResolvConf(path, data)
	if len(r.Loopback) == 0 {
		return HostDNS{Source: r, KubeletResolvConf: path}, nil
	}
	return HostDNS{Source: r, KubeletResolvConf: PodResolvConf, Write: r.Filtered()}, nil
}

// Upstream is where CoreDNS forwards names outside the cluster.
type Upstream struct {
	// Forward is the Corefile's forward target: "/etc/resolv.conf" (the
	// CoreDNS pod's own, which the kubelet makes from its node's host
	// file), addresses, or "" for none.
	Forward string
	// Warning, when set, says why names outside the cluster do not resolve.
	Warning string
}

// DNSUpstream decides CoreDNS's forwarding. explicit is the operator's
// --dns-upstream when given (nil otherwise): addresses, a resolv.conf path
// read now, or "" for nowhere; loopback addresses are refused. Without it
// CoreDNS forwards to its pod's resolv.conf when the host's file has
// usable nameservers, and nowhere (with a warning) when it has none.
func DNSUpstream(explicit *string, host HostDNS) (Upstream, error) {
	if explicit == nil {
		if len(host.Source.Nameservers) == 0 {
			why := fmt.Sprintf("%s names no nameserver", host.Source.Path)
			if len(host.Source.Loopback) > 0 {
				why = fmt.Sprintf("%s names only loopback nameservers %v, which CoreDNS cannot forward to (it would reach itself)", host.Source.Path, host.Source.Loopback)
			}
			return Upstream{Warning: "CoreDNS answers cluster names only: " + why + ", so names outside the cluster will not resolve in pods. " +
				"Give CoreDNS upstream servers with --dns-upstream (addresses, or a resolv.conf that names them)"}, nil
		}
		return Upstream{Forward: "/etc/resolv.conf"}, nil
	}
	v := strings.TrimSpace(*explicit)
	if v == "" {
		return Upstream{}, nil
	}
	var addrs []string
	if strings.HasPrefix(v, "/") {
		data, err := os.ReadFile(v)
		if err != nil {
			return Upstream{}, fmt.Errorf("--dns-upstream: %w", err)
		}
		r := ParseResolvConf(v, data)
		if len(r.Loopback) > 0 {
			return Upstream{}, fmt.Errorf("--dns-upstream %s names loopback nameservers %v: CoreDNS would forward to itself; give the servers your local resolver uses (for systemd-resolved: %s)", v, r.Loopback, SystemdResolvedUpstream)
		}
		if len(r.Nameservers) == 0 {
			return Upstream{}, fmt.Errorf("--dns-upstream %s names no nameserver", v)
		}
		addrs = r.Nameservers
	} else {
		for _, a := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
			host := a
			if h, _, err := net.SplitHostPort(a); err == nil {
				host = h
			}
			if net.ParseIP(strings.Trim(host, "[]")) == nil {
				return Upstream{}, fmt.Errorf("--dns-upstream: %q is neither an IP address (with an optional port) nor an absolute resolv.conf path", a)
			}
			if IsLoopback(a) {
				return Upstream{}, fmt.Errorf("--dns-upstream %s is a loopback address: CoreDNS would forward to itself; give the servers your local resolver uses (for systemd-resolved: %s)", a, SystemdResolvedUpstream)
			}
			addrs = append(addrs, a)
		}
	}
	return Upstream{Forward: strings.Join(addrs, " ")}, nil
}
