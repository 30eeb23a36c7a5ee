// Package cni renders a node's CNI configuration: a bridge with host-local
// addresses from the node's pod subnets (one per IP family) at the pod
// network's MTU, and portmap for hostPorts. It imports nothing of
// Kubernetes: the pod network engine (cmd/flannel), a small binary of its
// own, writes the file once it holds the node's lease.
package cni

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
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
