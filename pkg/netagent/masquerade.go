package netagent

import (
	"fmt"
	"net"
	"strings"

	"github.com/coreos/go-iptables/iptables"
)

// ChainPrefix starts the name of every iptables chain kubeboot makes;
// reset removes them by it.
const ChainPrefix = "KUBEBOOT-"

// MasqueradeChain is the nat chain that masquerades pod traffic leaving
// the pod network.
const MasqueradeChain = ChainPrefix + "MASQ"

// EnsureMasquerade installs one masquerade rule set for the cluster's pod
// subnets (comma-separated, IPv4 and IPv6): traffic from a pod to anything
// outside the pod network (and not multicast) leaves with the node's
// address. The bridge plugin could do it per pod (ipMasq), but that costs
// a chain and five iptables calls for every pod started, each slower as
// the table grows; one rule per subnet does the same for all of them.
// It is idempotent.
func EnsureMasquerade(podSubnets string) error {
	for _, s := range strings.Split(podSubnets, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		ip, _, err := net.ParseCIDR(s)
		if err != nil {
			return fmt.Errorf("pod subnet %q: %w", s, err)
		}
		proto, multicast := iptables.ProtocolIPv4, "224.0.0.0/4"
		if ip.To4() == nil {
			proto, multicast = iptables.ProtocolIPv6, "ff00::/8"
		}
		ipt, err := iptables.NewWithProtocol(proto)
		if err != nil {
			return err
		}
		if exists, err := ipt.ChainExists("nat", MasqueradeChain); err != nil {
			return err
		} else if !exists {
			if err := ipt.NewChain("nat", MasqueradeChain); err != nil {
				return err
			}
		}
		for _, rule := range [][]string{
			{"-d", s, "-j", "RETURN"},
			{"-d", multicast, "-j", "RETURN"},
			{"-j", "MASQUERADE"},
		} {
			if err := ipt.AppendUnique("nat", MasqueradeChain, rule...); err != nil {
				return err
			}
		}
		if err := ipt.AppendUnique("nat", "POSTROUTING", "-s", s,
			"-m", "comment", "--comment", "kubeboot: masquerade pod traffic leaving the pod network",
			"-j", MasqueradeChain); err != nil {
			return err
		}
	}
	return nil
}
