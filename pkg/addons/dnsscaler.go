package addons

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// InitDNSReplicas is CoreDNS's replica count when init makes it: the
// cluster has one node then, and a second replica on the same node buys
// no availability for its cost (its process, shim and pause: ~34 MiB of
// PSS, and a second pod to start on the way to DNS Ready). DNSScaler
// gives it kubeadm's two once a second node can run it, as k3s keeps one.
const InitDNSReplicas = 1

// DNSScaler gives CoreDNS its second replica once the cluster has two
// schedulable nodes. It only ever scales from one to two: a count set by
// hand (other than one) is left alone, and nodes leaving do not scale it
// down, as kubeadm's two stay on a cluster that shrinks.
type DNSScaler struct {
	Client kubernetes.Interface
	Logf   func(format string, args ...any)
}

// DNSWanted is CoreDNS's replica count for these nodes: two once two are
// schedulable, else one.
func DNSWanted(nodes []*corev1.Node) (int32, string) {
	n := 0
	for _, node := range nodes {
		if !node.Spec.Unschedulable {
			n++
		}
	}
	if n >= 2 {
		return 2, fmt.Sprintf("%d schedulable nodes", n)
	}
	return 1, fmt.Sprintf("%d schedulable node", n)
}

// Run scales CoreDNS as nodes come, are cordoned or uncordoned, until ctx
// ends.
func (s *DNSScaler) Run(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(s.Client, 0)
	nodes := f.Core().V1().Nodes()
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	// Node status updates (every few seconds per node) change nothing
	// here; only a node's arrival or its schedulability does.
	h := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			c, ok2 := cur.(*corev1.Node)
			if ok1 && ok2 && o.Spec.Unschedulable != c.Spec.Unschedulable {
				poke()
			}
		},
	}
	if _, err := nodes.Informer().AddEventHandler(h); err != nil {
		return err
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	f.WaitForCacheSync(ctx.Done())
	poke()
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-retry:
		}
		retry = nil
		list, err := nodes.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		want, why := DNSWanted(list)
		if want < 2 {
			continue
		}
		if err := s.scaleUp(ctx, why); err != nil {
			s.logf("scaling coredns: %v (again in 5s)", err)
			retry = time.After(5 * time.Second)
		}
	}
}

// scaleUp gives CoreDNS two replicas if it has one; an absent CoreDNS
// (skipped at init, or not kubeboot's) is left absent.
func (s *DNSScaler) scaleUp(ctx context.Context, why string) error {
	deployments := s.Client.AppsV1().Deployments(metav1.NamespaceSystem)
	sc, err := deployments.GetScale(ctx, "coredns", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if sc.Spec.Replicas != InitDNSReplicas {
		return nil
	}
	sc.Spec.Replicas = 2
	if _, err := deployments.UpdateScale(ctx, "coredns", sc, metav1.UpdateOptions{}); err != nil {
		return err
	}
	s.logf("scaled coredns to 2: %s", why)
	return nil
}

func (s *DNSScaler) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}
