// Package kuberouter is kubeboot's NetworkPolicy engine on a node:
// kube-router's network policy controller (github.com/cloudnativelabs/
// kube-router/v2, pkg/controllers/netpol, at the version third_party/
// kube-router holds — see its README), put together
// as k3s embeds it — the firewall alone: kube-router's routing and service
// proxy are not linked (flannel routes, kube-proxy proxies). It enforces
// every NetworkPolicy on the pods of its node with iptables and ipsets.
//
// It answers /readyz once its first full sync of the policies to iptables
// has ended.
//
// It runs from the network engines' helper (cmd/network-engines), and
// alone from cmd/kube-router (dev mode).
package kuberouter

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/cloudnativelabs/kube-router/v2/pkg/svcip"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeboot/kubeboot/internal/network/engine"
	"github.com/kubeboot/kubeboot/internal/network/healthz"
	"github.com/kubeboot/kubeboot/internal/network/nodewait"
)

// netpolInformers are the shared informers the policy controller reads.
type netpolInformers struct{ pods, namespaces, policies cache.SharedIndexInformer }

func (i netpolInformers) Pods() cache.SharedIndexInformer            { return i.pods }
func (i netpolInformers) Namespaces() cache.SharedIndexInformer      { return i.namespaces }
func (i netpolInformers) NetworkPolicies() cache.SharedIndexInformer { return i.policies }

type opts struct {
	kubeconfig, nodeName, serviceSubnets, podSubnets, nodePortRange, readyz string
	syncPeriod, podEventInterval                                            time.Duration
}

// Main runs kube-router's network policy controller with its flags
// (without the program name) and returns its exit code.
func Main(args []string) int {
	o := opts{}
	fs := flag.NewFlagSet("kube-router", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the node's identity")
	fs.StringVar(&o.nodeName, "node-name", "", "the node's name")
	fs.StringVar(&o.serviceSubnets, "service-subnets", "10.96.0.0/12", "the Service network, comma-separated (one per family)")
	fs.StringVar(&o.podSubnets, "pod-subnets", "", "the pod network, comma-separated: its families are the ones policed")
	fs.StringVar(&o.nodePortRange, "service-node-port-range", "30000-32767", "the NodePort range")
	fs.StringVar(&o.readyz, "readyz", "127.0.0.1:20244", "address of /readyz (empty: none)")
	fs.DurationVar(&o.syncPeriod, "sync-period", 5*time.Minute, "period of full syncs of policies to iptables (changes apply at once)")
	fs.DurationVar(&o.podEventInterval, "pod-event-interval", time.Second, "pod changes that come within this of the last handed to the controller are handed over together once it has passed (0: each at once)")
	return engine.Main(fs, args, o.run)
}

func (o *opts) run(ctx context.Context) error {
	if o.kubeconfig == "" || o.nodeName == "" {
		return errors.New("--kubeconfig and --node-name are required")
	}
	var ready atomic.Bool
	if o.readyz != "" {
		healthz.Serve(ctx, o.readyz, &ready)
	}
	cfg := options.NewKubeRouterConfig()
	cfg.ClusterIPCIDRs = splitList(o.serviceSubnets)
	cfg.NodePortRange = strings.ReplaceAll(o.nodePortRange, "-", ":")
	cfg.HostnameOverride = o.nodeName
	cfg.RunFirewall, cfg.RunRouter, cfg.RunServiceProxy = true, false, false
	cfg.IPTablesSyncPeriod = o.syncPeriod
	for _, s := range splitList(o.podSubnets) {
		if strings.Contains(s, ":") {
			cfg.EnableIPv6 = true
		} else {
			cfg.EnableIPv4 = true
		}
	}
	if !cfg.EnableIPv4 && !cfg.EnableIPv6 {
		cfg.EnableIPv4 = true
	}
	// The node's name, for kube-router's own lookup of its Node.
	os.Setenv("NODE_NAME", o.nodeName)

	// kube-router's controller needs the node's IPs.
	client, err := nodewait.Wait(ctx, o.kubeconfig, o.nodeName, "node "+o.nodeName, func(n *corev1.Node) error {
		if len(n.Status.Addresses) == 0 {
			return fmt.Errorf("node %s has no address yet", o.nodeName)
		}
		return nil
	})
	if err != nil {
		return err
	}
	iptablesHandlers, ipsetHandlers, err := netpol.NewIPTablesHandlers(cfg)
	if err != nil {
		return fmt.Errorf("iptables and ipset (the ipset command and the kernel's ip_set): %w", err)
	}
	ranges, err := svcip.NewValidator(svcip.Config{
		ClusterIPCIDRs: cfg.ClusterIPCIDRs,
		EnableIPv4:     cfg.EnableIPv4,
		EnableIPv6:     cfg.EnableIPv6,
	})
	if err != nil {
		return fmt.Errorf("service subnets: %w", err)
	}

	f := informers.NewSharedInformerFactory(client, 0)
	policies := f.Networking().V1().NetworkPolicies().Informer()
	inf := netpolInformers{
		pods:       pacedInformer{f.Core().V1().Pods().Informer(), ctx, o.podEventInterval, podMatters(o.nodeName, policies.GetStore())},
		namespaces: f.Core().V1().Namespaces().Informer(),
		policies:   policies,
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	f.WaitForCacheSync(ctx.Done())

	// The controller adds its own event handlers to the informers. No
	// nftables interfaces: the iptables and ipset backend, as k3s runs it
	// (kube-router's nftables backend is experimental upstream).
	npc, err := netpol.NewNetworkPolicyController(client, cfg, inf, &sync.Mutex{}, nil, iptablesHandlers, ipsetHandlers, ranges, nil)
	if err != nil {
		return fmt.Errorf("network policy controller: %w", err)
	}
	// The controller reports the start of each full sync on this channel
	// (unbuffered: it must be drained). The first sync starts at once; a
	// second one asked for then starts when the first has ended: from
	// then on the policies are in iptables.
	health := make(chan *healthcheck.ControllerHeartbeat)
	var wg sync.WaitGroup
	wg.Add(1)
	go npc.Run(health, ctx.Done(), &wg)
	syncs := 0
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-health:
			syncs++
			switch syncs {
			case 1:
				npc.RequestFullSync()
			case 2:
				ready.Store(true)
				klog.Infof("network policies of node %s enforced (first full sync done)", o.nodeName)
			}
		}
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
