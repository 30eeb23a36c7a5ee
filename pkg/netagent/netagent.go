// Package netagent is kubeboot's node network agent. It owns the three
// things a bridge-based pod network needs beyond the CNI plugins: the
// node's CNI configuration, written once the controller-manager has
// allocated the node a pod CIDR, a route to every other node's pod CIDR
// through that node's address, and the masquerading of pod traffic that
// leaves the pod network.
package netagent

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/node"
)

// Agent runs on one node.
type Agent struct {
	Client   kubernetes.Interface
	NodeName string
	// PodSubnets is the cluster's pod network (comma-separated CIDRs),
	// masqueraded when traffic leaves it; empty leaves masquerading alone.
	PodSubnets string
	FS         fsys.FS
	Logf       func(format string, args ...any)

	mu     sync.Mutex
	routes map[string]string // pod CIDR -> gateway we installed
}

// Run watches the nodes until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	a.routes = map[string]string{}
	if a.PodSubnets != "" {
		if err := EnsureMasquerade(a.PodSubnets); err != nil {
			return fmt.Errorf("masquerading the pod network %s: %w", a.PodSubnets, err)
		}
		a.Logf("masquerading traffic from %s that leaves it", a.PodSubnets)
	}
	f := informers.NewSharedInformerFactory(a.Client, 0)
	inf := f.Core().V1().Nodes().Informer()
	sync := func(any) { a.sync(inf.GetStore()) }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: sync, UpdateFunc: func(_, n any) { sync(n) }, DeleteFunc: sync,
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	a.Logf("watching nodes as %s", a.NodeName)
	<-ctx.Done()
	f.Shutdown()
	return nil
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func (a *Agent) sync(store cache.Store) {
	a.mu.Lock()
	defer a.mu.Unlock()
	want := map[string]string{}
	for _, obj := range store.List() {
		n, ok := obj.(*corev1.Node)
		if !ok || n.Spec.PodCIDR == "" {
			continue
		}
		if n.Name == a.NodeName {
			if err := a.writeCNIConfig(n.Spec.PodCIDR); err != nil {
				a.Logf("writing the CNI configuration: %v", err)
			}
			continue
		}
		if ip := internalIP(n); ip != "" {
			want[n.Spec.PodCIDR] = ip
		}
	}
	for cidr, gw := range want {
		if a.routes[cidr] == gw {
			continue
		}
		if err := replaceRoute(cidr, gw); err != nil {
			a.Logf("route %s via %s: %v", cidr, gw, err)
			continue
		}
		a.routes[cidr] = gw
		a.Logf("routing pod CIDR %s via %s", cidr, gw)
	}
	for cidr, gw := range a.routes {
		if _, ok := want[cidr]; !ok {
			if err := deleteRoute(cidr, gw); err != nil {
				a.Logf("removing route %s via %s: %v", cidr, gw, err)
			}
			delete(a.routes, cidr)
		}
	}
}

func (a *Agent) writeCNIConfig(podCIDR string) error {
	conf, err := node.CNIConfList(a.FS, podCIDR)
	if err != nil {
		return err
	}
	if cur, err := a.FS.ReadFile(node.CNIConfFile); err == nil && bytes.Equal(cur, conf) {
		return nil
	}
	if err := a.FS.WriteFile(node.CNIConfFile, conf, 0o644); err != nil {
		return err
	}
	a.Logf("wrote %s for pod CIDR %s", a.FS.Path(node.CNIConfFile), podCIDR)
	return nil
}

func parseRoute(cidr, gw string) (*netlink.Route, error) {
	_, dst, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(gw)
	if ip == nil {
		return nil, fmt.Errorf("bad gateway %q", gw)
	}
	return &netlink.Route{Dst: dst, Gw: ip}, nil
}

func replaceRoute(cidr, gw string) error {
	r, err := parseRoute(cidr, gw)
	if err != nil {
		return err
	}
	return netlink.RouteReplace(r)
}

func deleteRoute(cidr, gw string) error {
	r, err := parseRoute(cidr, gw)
	if err != nil {
		return err
	}
	return netlink.RouteDel(r)
}
