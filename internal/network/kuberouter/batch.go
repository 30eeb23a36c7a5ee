package kuberouter

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// pacedInformer hands the events of its informer that pass relevant to
// the handlers added to it at most once every interval, all those that
// came meanwhile at once, in order. The policy controller answers every pod event of the
// cluster with a full sync of the node's iptables and ipsets (its
// handlers only ask for one; the sync reads the listers), and a second
// request during a sync runs another right after it: under a stream of
// pod changes anywhere in the cluster, each node synced back to back
// (bench/scale: kube-router took more CPU than the three API servers).
// Paced, a burst costs one sync per interval, a lone change none more
// than before (it is handed over at once), and the policies are the same
// once the last event is handed over.
type pacedInformer struct {
	cache.SharedIndexInformer
	ctx      context.Context
	interval time.Duration
	// relevant tells whether an event's object (the new one of an update)
	// can change what the handlers do; nil means every one can.
	relevant func(obj any) bool
}

func (p pacedInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return p.SharedIndexInformer.AddEventHandler(p.pace(h))
}

// AddEventHandlerWithResyncPeriod and AddEventHandlerWithOptions pace too,
// should a later kube-router register its handlers through them.
func (p pacedInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return p.SharedIndexInformer.AddEventHandlerWithResyncPeriod(p.pace(h), resync)
}

func (p pacedInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return p.SharedIndexInformer.AddEventHandlerWithOptions(p.pace(h), o)
}

func (p pacedInformer) pace(h cache.ResourceEventHandler) *pacer {
	pc := newPacer(p.ctx, h, p.interval)
	pc.relevant = p.relevant
	return pc
}

// podMatters tells whether a pod's change can change the node's rules:
// the sync reads every pod from the lister, but with no NetworkPolicy in
// the cluster it writes rules (chains that accept everything) for the
// node's own pods only — those whose status.hostIP is one of the node's
// addresses, which for a pod scheduled here is the node's (a pod of
// another node that still has an address this node took over is a case
// this lets through unsynced: its accept-all chain stays until the next
// sync of any kind). So a change to another node's pod, or to one not
// scheduled yet, matters only while some policy exists; once the first
// is made, its own event starts a full sync that reads every pod as it is
// then (an informer updates its store before it tells its handlers).
// Without this, every node synced for every pod change of the cluster.
func podMatters(nodeName string, policies cache.Store) func(obj any) bool {
	return func(obj any) bool {
		pod, ok := obj.(*corev1.Pod)
		if !ok { // a tombstone: hand it over
			return true
		}
		return pod.Spec.NodeName == nodeName || len(policies.ListKeys()) > 0
	}
}

// pacer is a handler that queues events and hands them to its handler,
// the first at once and those within interval of a handover together
// once it has passed.
type pacer struct {
	h        cache.ResourceEventHandler
	interval time.Duration
	relevant func(obj any) bool
	mu       sync.Mutex
	queue    []func()
	wake     chan struct{}
}

func newPacer(ctx context.Context, h cache.ResourceEventHandler, interval time.Duration) *pacer {
	p := &pacer{h: h, interval: interval, wake: make(chan struct{}, 1)}
	go p.run(ctx)
	return p
}

func (p *pacer) add(f func()) {
	p.mu.Lock()
	p.queue = append(p.queue, f)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pacer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		p.mu.Lock()
		batch := p.queue
		p.queue = nil
		p.mu.Unlock()
		for _, f := range batch {
			f()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.interval):
		}
	}
}

func (p *pacer) OnAdd(obj any, initial bool) {
	if p.matters(obj) {
		p.add(func() { p.h.OnAdd(obj, initial) })
	}
}

func (p *pacer) OnUpdate(old, obj any) {
	if p.matters(obj) {
		p.add(func() { p.h.OnUpdate(old, obj) })
	}
}

func (p *pacer) OnDelete(obj any) {
	if p.matters(obj) {
		p.add(func() { p.h.OnDelete(obj) })
	}
}

func (p *pacer) matters(obj any) bool { return p.relevant == nil || p.relevant(obj) }
