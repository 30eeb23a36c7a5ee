// Package flannel is kubeboot's pod network engine on a node: upstream
// flannel (github.com/flannel-io/flannel, pinned in go.mod) with its kube
// subnet manager (each node's subnet is its Node's spec.podCIDRs, which
// the controller-manager allocates), the backends k3s offers (vxlan,
// host-gw, wireguard) and its iptables traffic manager (masquerading of
// pod traffic that leaves the pod network, FORWARD rules for it), put
// together as flannel's own main does. What differs from flanneld:
//
//   - it takes its settings as flags from the node's spec, not from a
//     ConfigMap and environment, and keeps its files under the node's
//     root prefix (several nodes share a machine in tests);
//   - it waits for the node's kubeconfig and pod CIDR before it starts,
//     rather than exiting and relying on a restart;
//   - it writes the node's CNI configuration itself (package cni: a
//     bridge at the lease's MTU with host-local addresses from the
//     lease), where flannel's CNI plugin would read subnet.env at every
//     pod's start and delegate to the same bridge plugin; it writes it
//     first as soon as the Node has its pod CIDR, so the node is Ready
//     before the lease (writeEarlyCNIConf);
//   - it answers /readyz once the lease, the rules and the CNI
//     configuration are in place.
//
// It runs from the network engines' helper (cmd/network-engines), and
// alone from cmd/flannel (dev mode).
package flannel

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/flannel-io/flannel/pkg/backend"
	_ "github.com/flannel-io/flannel/pkg/backend/hostgw"
	_ "github.com/flannel-io/flannel/pkg/backend/vxlan"
	_ "github.com/flannel-io/flannel/pkg/backend/wireguard"
	"github.com/flannel-io/flannel/pkg/ip"
	"github.com/flannel-io/flannel/pkg/ipmatch"
	"github.com/flannel-io/flannel/pkg/subnet/kube"
	"github.com/flannel-io/flannel/pkg/trafficmngr/iptables"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubeboot/kubeboot/internal/network/cni"
	"github.com/kubeboot/kubeboot/internal/network/engine"
	"github.com/kubeboot/kubeboot/internal/network/healthz"
	"github.com/kubeboot/kubeboot/internal/network/nodewait"
)

type options struct {
	kubeconfig, nodeName, nodeIP string
	podSubnets, backend          string
	stateDir                     string
	cniConf, cniNetwork          string
	cniBridge, cniDataDir        string
	readyz                       string
	masqResync, forwardResync    int
	mtuOverhead                  int
	earlyConf                    []byte // the CNI configuration written with the pod CIDR, if any
}

// Main runs flannel with its flags (without the program name) and
// returns its exit code.
func Main(args []string) int {
	o := options{}
	fs := flag.NewFlagSet("flannel", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the node's identity")
	fs.StringVar(&o.nodeName, "node-name", "", "the node's name")
	fs.StringVar(&o.nodeIP, "node-ip", "", "the node's address(es), comma-separated: the interface that holds the first carries the overlay")
	fs.StringVar(&o.podSubnets, "pod-subnets", "", "the cluster's pod network, comma-separated CIDRs (one per family)")
	fs.StringVar(&o.backend, "backend", "vxlan", "flannel backend: vxlan, host-gw or wireguard")
	fs.StringVar(&o.stateDir, "state-dir", "/run/flannel", "directory of flannel's net-conf.json, subnet.env and WireGuard key")
	fs.StringVar(&o.cniConf, "cni-conf", "/etc/cni/net.d/10-kubeboot.conflist", "the node's CNI configuration file, written once the node has its pod CIDR and again with the lease")
	fs.StringVar(&o.cniNetwork, "cni-network", "kubeboot", "the CNI network's name")
	fs.StringVar(&o.cniBridge, "cni-bridge", "cni0", "the bridge pods attach to")
	fs.StringVar(&o.cniDataDir, "cni-data-dir", "/var/lib/cni/networks", "host-local's directory")
	fs.StringVar(&o.readyz, "readyz", "127.0.0.1:20245", "address of /readyz (empty: none)")
	// k3s's periods (pkg/agent/flannel), not flanneld's 5 s: each check
	// is an iptables command per rule, under the xtables lock that
	// kube-proxy and kube-router take too.
	fs.IntVar(&o.masqResync, "iptables-resync", 60, "seconds between checks of flannel's masquerading rules")
	fs.IntVar(&o.forwardResync, "iptables-forward-resync", 50, "seconds between checks of flannel's FORWARD rules")
	fs.IntVar(&o.mtuOverhead, "mtu-overhead", -1, "what the backend takes off the node interface's MTU for the pods, to write the CNI configuration as soon as the node has its pod CIDR (-1: once flannel holds the lease)")
	return engine.Main(fs, args, o.run)
}

// ipv6Underlay is what an outer IPv6 header takes beyond an IPv4 one.
const ipv6Underlay = 20

// withMTU sets the link MTU in flannel's backend configuration (VXLAN's
// "MTU", the underlay's, of which flannel takes its overhead).
func withMTU(backend json.RawMessage, mtu int) (json.RawMessage, error) {
	c := map[string]any{}
	if len(backend) > 0 {
		if err := json.Unmarshal(backend, &c); err != nil {
			return nil, fmt.Errorf("flannel's backend configuration: %w", err)
		}
	}
	c["MTU"] = mtu
	return json.Marshal(c)
}

// netConf is flannel's net-conf.json for the cluster's pod network.
func netConf(podSubnets, backendType string) ([]byte, error) {
	c := map[string]any{"Backend": map[string]any{"Type": backendType}}
	if backendType == "wireguard" {
		// As k3s's wireguard-native: peers behind NAT keep their
		// mapping alive.
		c["Backend"] = map[string]any{"Type": backendType, "PersistentKeepaliveInterval": 25}
	}
	v4, v6, err := families(podSubnets)
	if err != nil {
		return nil, err
	}
	c["EnableIPv4"], c["EnableIPv6"] = v4 != "", v6 != ""
	if v4 != "" {
		c["Network"] = v4
	}
	if v6 != "" {
		c["IPv6Network"] = v6
	}
	return json.MarshalIndent(c, "", "  ")
}

// families splits the pod network (one CIDR, or one of each family) into
// its IPv4 and its IPv6 subnet.
func families(podSubnets string) (v4, v6 string, err error) {
	v4, v6, err = cni.CIDRsByFamily(strings.Split(podSubnets, ","))
	if err != nil {
		return "", "", fmt.Errorf("pod subnets %q: %w", podSubnets, err)
	}
	return v4, v6, nil
}

// overlayAddr is the node address whose interface carries the overlay,
// as flannel's --iface=<address>: the IPv4 one when the pod network has
// IPv4 and the node has one, else the IPv6 one.
func overlayAddr(v4, v6 string, ipv4Pods bool) string {
	if v4 == "" || !ipv4Pods {
		return v6
	}
	return v4
}

func (o *options) run(ctx context.Context) error {
	if o.nodeName == "" || o.kubeconfig == "" || o.podSubnets == "" {
		return errors.New("--node-name, --kubeconfig and --pod-subnets are required")
	}
	var ready atomic.Bool
	if o.readyz != "" {
		healthz.Serve(ctx, o.readyz, &ready)
	}
	if err := os.MkdirAll(o.stateDir, 0o700); err != nil {
		return err
	}
	conf, err := netConf(o.podSubnets, o.backend)
	if err != nil {
		return err
	}
	netConfPath := filepath.Join(o.stateDir, "net-conf.json")
	if err := os.WriteFile(netConfPath, conf, 0o644); err != nil {
		return err
	}
	// flannel's kube subnet manager refuses a node without a pod CIDR.
	var podCIDRs []string
	if _, err := nodewait.Wait(ctx, o.kubeconfig, o.nodeName, "node "+o.nodeName+"'s pod CIDR", func(n *corev1.Node) error {
		if n.Spec.PodCIDR == "" {
			return fmt.Errorf("node %s has no pod CIDR yet", o.nodeName)
		}
		podCIDRs = n.Spec.PodCIDRs
		if len(podCIDRs) == 0 {
			podCIDRs = []string{n.Spec.PodCIDR}
		}
		return nil
	}); err != nil {
		return err
	}
	o.writeEarlyCNIConf(podCIDRs)
	// The kube subnet manager reads the node's name from the environment,
	// the wireguard backend its key file.
	os.Setenv("NODE_NAME", o.nodeName)
	os.Setenv("WIREGUARD_KEY_FILE", filepath.Join(o.stateDir, "wgkey"))
	sm, err := kube.NewSubnetManager(ctx, "", o.kubeconfig, "flannel.alpha.coreos.com", netConfPath, false)
	if err != nil {
		return fmt.Errorf("subnet manager: %w", err)
	}
	config, err := sm.GetNetworkConfig(ctx)
	if err != nil {
		return err
	}
	stack, err := ipmatch.GetIPFamily(config.EnableIPv4, config.EnableIPv6)
	if err != nil {
		return err
	}
	v4, v6 := o.nodeAddrs()
	byAddr := overlayAddr(v4, v6, config.EnableIPv4)
	ext, err := ipmatch.LookupExtIface(byAddr, "", "", stack, ipmatch.PublicIPOpts{PublicIP: v4, PublicIPv6: v6})
	if err != nil {
		return fmt.Errorf("the interface of %s: %w", byAddr, err)
	}
	if config.EnableIPv6 && config.BackendType == "vxlan" {
		// flannel takes VXLAN's 50 bytes off the link's MTU, what an IPv4
		// underlay needs, and carries IPv6 pods over the node's IPv6
		// address, where they need 70: told of a link 20 bytes narrower,
		// its devices and the pods' MTU leave room for an outer IPv6
		// header, and no packet needs fragmenting or a too-big round trip.
		// The subnet manager hands this config to the backend again when
		// it recreates a device.
		if config.Backend, err = withMTU(config.Backend, ext.Iface.MTU-ipv6Underlay); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	be, err := backend.NewManager(ctx, sm, ext).GetBackend(config.BackendType)
	if err != nil {
		return err
	}
	bn, err := be.RegisterNetwork(ctx, &wg, config)
	if err != nil {
		return fmt.Errorf("registering the network: %w", err)
	}
	tm := &iptables.IPTablesManager{}
	if err := tm.Init(ctx); err != nil {
		return err
	}
	l := bn.Lease()
	var prevNet, prevSubnet ip.IP4Net
	// No previous network or lease to recycle rules of (flanneld reads
	// them from subnet.env): an IPv6 one is zero with its big.Int set, as
	// flanneld's, or the comparison with it panics.
	zero6 := func() ip.IP6Net { return ip.IP6Net{IP: (*ip.IP6)(big.NewInt(0))} }
	prevNet6, prevSubnet6 := zero6(), zero6()
	if err := tm.SetupAndEnsureMasqRules(ctx, config.Network, prevSubnet, prevNet, config.IPv6Network, prevSubnet6, prevNet6, l, o.masqResync, false); err != nil {
		return fmt.Errorf("masquerading rules: %w", err)
	}
	// A FORWARD chain whose policy is DROP (Docker's) lets pod traffic
	// through.
	tm.SetupAndEnsureForwardRules(ctx, config.Network, config.IPv6Network, o.forwardResync)
	if err := sm.HandleSubnetFile(filepath.Join(o.stateDir, "subnet.env"), config, true, l.Subnet, l.IPv6Subnet, bn.MTU()); err != nil {
		return fmt.Errorf("subnet file: %w", err)
	}
	var subnets []string
	if config.EnableIPv4 {
		subnets = append(subnets, l.Subnet.String())
	}
	if config.EnableIPv6 {
		subnets = append(subnets, l.IPv6Subnet.String())
	}
	b, err := cni.ConfList(cni.Conf{Network: o.cniNetwork, Bridge: o.cniBridge, Subnets: subnets, MTU: bn.MTU(), DataDir: o.cniDataDir})
	if err != nil {
		return err
	}
	if changed, err := cni.Write(o.cniConf, b); err != nil {
		return err
	} else if changed && o.earlyConf != nil {
		klog.Warningf("the lease's CNI configuration differs from the one written with the pod CIDR; rewrote %s", o.cniConf)
	}
	klog.Infof("lease %s, MTU %d on %s (%s backend); wrote %s", strings.Join(subnets, ","), bn.MTU(), ext.Iface.Name, config.BackendType, o.cniConf)
	ready.Store(true)
	wg.Add(1)
	go func() {
		defer wg.Done()
		bn.Run(ctx)
	}()
	if err := sm.CompleteLease(ctx, l, &wg); err != nil {
		klog.Errorf("completing the lease: %v", err)
		if strings.EqualFold(err.Error(), "interrupted") {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// writeEarlyCNIConf writes the node's CNI configuration the moment its pod
// CIDR is known, as init writes the first node's before the runtime
// starts: the kube subnet manager's lease is the Node's pod CIDRs, and the
// pods' MTU is the node interface's less the backend's overhead
// (--mtu-overhead, the figure RegisterNetwork arrives at), so the kubelet reports the node Ready without
// waiting for the subnet manager's first sync (flannel polls it each
// second), the backend's device and the traffic rules. A pod started
// meanwhile gets the same addresses and MTU; its traffic to other nodes
// flows once the backend has their routes, as any pod's does. Nothing is
// written when the interface cannot be found or the overhead is not
// given: the lease writes it then.
func (o *options) writeEarlyCNIConf(podCIDRs []string) {
	net4, net6, err := families(o.podSubnets)
	if err != nil {
		return
	}
	// One per family the network has, IPv4 first and in canonical form,
	// as the lease's.
	s4, s6, _ := cni.CIDRsByFamily(podCIDRs)
	if net4 == "" {
		s4 = ""
	}
	if net6 == "" {
		s6 = ""
	}
	subnets := cni.Ordered(s4, s6)
	if len(subnets) == 0 || o.mtuOverhead < 0 {
		return
	}
	v4, v6 := o.nodeAddrs()
	mtu := cni.PodMTU(overlayAddr(v4, v6, net4 != ""), o.mtuOverhead)
	if mtu <= 0 {
		return
	}
	b, err := cni.ConfList(cni.Conf{Network: o.cniNetwork, Bridge: o.cniBridge, Subnets: subnets, MTU: mtu, DataDir: o.cniDataDir})
	if err == nil {
		_, err = cni.Write(o.cniConf, b)
	}
	if err != nil {
		klog.Warningf("the CNI configuration for pod CIDR %s: %v", strings.Join(subnets, ","), err)
		return
	}
	o.earlyConf = b
	klog.Infof("pod CIDR %s, MTU %d: wrote %s ahead of the lease", strings.Join(subnets, ","), mtu, o.cniConf)
}

// nodeAddrs are the node's first IPv4 and first IPv6 address of --node-ip.
func (o *options) nodeAddrs() (v4, v6 string) {
	v4, v6, _ = cni.AddrsByFamily(strings.Split(o.nodeIP, ","))
	return v4, v6
}
