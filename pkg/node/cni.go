package node

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/kubeboot/kubeboot/pkg/fsys"
)

// CNIConfList renders the node's CNI configuration: a bridge with
// host-local addresses from the node's pod CIDR and portmap for hostPorts.
// Traffic leaving the pod network is masqueraded by one rule set that the
// network agent installs for the whole pod network, not per pod. containerd
// brings up the pod's loopback interface itself (use_internal_loopback), so
// no loopback plugin runs.
func CNIConfList(fs fsys.FS, podCIDR string) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       CNINetwork(fs),
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": BridgeName, "isGateway": true, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": podCIDR}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": fs.Path(CNIDataDir + "/networks"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// FirstNodeCIDR is the pod CIDR the controller-manager's range allocator
// gives the first node: the first /24 (IPv4) or /64 (IPv6) of the first
// pod subnet, its default node mask sizes.
func FirstNodeCIDR(podSubnet string) (string, error) {
	first := strings.Split(podSubnet, ",")[0]
	_, n, err := net.ParseCIDR(strings.TrimSpace(first))
	if err != nil {
		return "", fmt.Errorf("pod subnet %q: %w", podSubnet, err)
	}
	ones, bits := n.Mask.Size()
	size := 24
	if bits == 128 {
		size = 64
	}
	if ones > size {
		size = ones
	}
	return (&net.IPNet{IP: n.IP, Mask: net.CIDRMask(size, bits)}).String(), nil
}
