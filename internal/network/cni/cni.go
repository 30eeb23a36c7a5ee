// Package cni renders a node's CNI configuration: a bridge with host-local
// addresses from the node's pod subnets (one per IP family) at the pod
// network's MTU, and portmap for hostPorts. It imports nothing of
// Kubernetes: the pod network engine (package flannel, in the network
// engines' helper binary) writes the file once it holds the node's lease.
package cni

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// Conf is what a node's configuration holds.
type Conf struct {
	// Network names the CNI network (the CNI library caches results
	// under it).
	Network string
	// Bridge is the bridge every pod of the node attaches to.
	Bridge string
	// Subnets are the node's pod subnets, at most one per family.
	Subnets []string
	// MTU is the pods' interface MTU; 0 leaves the plugin's default.
	MTU int
	// DataDir is host-local's directory of allocations.
	DataDir string
}

// ConfList renders c as a CNI configuration list. Traffic leaving the pod
// network is masqueraded by the engine's rules for the whole network, not
// per pod (no ipMasq). containerd brings up the pod's loopback itself
// (use_internal_loopback), so no loopback plugin runs.
func ConfList(c Conf) ([]byte, error) {
	if len(c.Subnets) == 0 {
		return nil, fmt.Errorf("no pod subnet")
	}
	var ranges [][]map[string]string
	var routes []map[string]string
	for _, s := range c.Subnets {
		ip, _, err := net.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("pod subnet %q: %w", s, err)
		}
		ranges = append(ranges, []map[string]string{{"subnet": s}})
		dst := "0.0.0.0/0"
		if ip.To4() == nil {
			dst = "::/0"
		}
		routes = append(routes, map[string]string{"dst": dst})
	}
	bridge := map[string]any{
		"type": "bridge", "bridge": c.Bridge, "isGateway": true, "hairpinMode": true,
		"ipam": map[string]any{"type": "host-local", "ranges": ranges, "routes": routes, "dataDir": c.DataDir},
	}
	if c.MTU > 0 {
		bridge["mtu"] = c.MTU
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       c.Network,
		"plugins":    []any{bridge, map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}}},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Write writes b to file unless it holds it already, through a temporary
// file and a rename: containerd watches the directory and must never read
// half a file. It reports whether it wrote.
func Write(file string, b []byte) (bool, error) {
	if cur, err := os.ReadFile(file); err == nil && string(cur) == string(b) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return false, err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, file)
}

// LinkMTU is the MTU of the interface that holds address ip; 0 when no
// interface of this network namespace holds it.
func LinkMTU(ip string) int {
	want := net.ParseIP(ip)
	ifaces, err := net.Interfaces()
	if err != nil || want == nil {
		return 0
	}
	for _, i := range ifaces {
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(want) {
				return i.MTU
			}
		}
	}
	return 0
}

// CIDRsByFamily returns the first IPv4 and the first IPv6 CIDR of list,
// each in canonical form (as its network, the form of flannel's lease),
// and "" for a family list lacks: a pod network, a Node's pod CIDRs.
// Blank entries are skipped; one that is not a CIDR is an error, reported
// after the others are read.
func CIDRsByFamily(list []string) (v4, v6 string, err error) {
	return byFamily(list, func(e string) (string, bool, error) {
		_, n, err := net.ParseCIDR(e)
		if err != nil {
			return "", false, err
		}
		return n.String(), n.IP.To4() != nil, nil
	})
}

// AddrsByFamily is CIDRsByFamily of IP addresses: a node's --node-ip.
func AddrsByFamily(list []string) (v4, v6 string, err error) {
	return byFamily(list, func(e string) (string, bool, error) {
		ip := net.ParseIP(e)
		if ip == nil {
			return "", false, fmt.Errorf("%q is not an IP address", e)
		}
		return ip.String(), ip.To4() != nil, nil
	})
}

func byFamily(list []string, parse func(string) (s string, is4 bool, err error)) (v4, v6 string, err error) {
	for _, e := range list {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		s, is4, perr := parse(e)
		switch {
		case perr != nil:
			if err == nil {
				err = perr
			}
		case is4 && v4 == "":
			v4 = s
		case !is4 && v6 == "":
			v6 = s
		}
	}
	return v4, v6, err
}

// Ordered lists one entry of each family as a node's configuration holds
// them, and flannel its lease: IPv4 first, a missing family left out.
func Ordered(v4, v6 string) []string {
	var l []string
	for _, s := range []string{v4, v6} {
		if s != "" {
			l = append(l, s)
		}
	}
	return l
}

// PodMTU is the pods' MTU on a node whose pod traffic leaves through the
// interface holding address ip: the link's MTU less the backend's
// overhead (flannel's own figure); 0 when no interface holds ip.
func PodMTU(ip string, overhead int) int {
	link := LinkMTU(ip)
	if link == 0 {
		return 0
	}
	return link - overhead
}
