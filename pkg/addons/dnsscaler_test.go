package addons

import (
	"context"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestDNSWanted(t *testing.T) {
	node := func(name string, cordoned bool) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	}
	for _, tc := range []struct {
		nodes []*corev1.Node
		want  int32
	}{
		{nil, 1},
		{[]*corev1.Node{node("cp", false)}, 1},
		{[]*corev1.Node{node("cp", false), node("w", true)}, 1},
		{[]*corev1.Node{node("cp", false), node("w", false)}, 2},
		{[]*corev1.Node{node("cp", false), node("w1", false), node("w2", false)}, 2},
	} {
		if got, why := DNSWanted(tc.nodes); got != tc.want {
			t.Errorf("%d nodes: %d (%s), want %d", len(tc.nodes), got, why, tc.want)
		}
	}
}

// The scaler gives CoreDNS its second replica when a second schedulable
// node comes, once, and leaves a count set by hand alone.
func TestDNSScaler(t *testing.T) {
	c := fake.NewClientset()
	var mu sync.Mutex
	replicas := int32(InitDNSReplicas)
	var scaled []int32
	c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}, nil
	})
	c.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		sc := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		mu.Lock()
		defer mu.Unlock()
		replicas = sc.Spec.Replicas
		scaled = append(scaled, replicas)
		return true, sc, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mk := func(name string, cordoned bool) {
		t.Helper()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("cp", false)
	done := make(chan error)
	go func() { done <- (&DNSScaler{Client: c}).Run(ctx) }()
	got := func() int32 { mu.Lock(); defer mu.Unlock(); return replicas }
	time.Sleep(200 * time.Millisecond)
	if r := got(); r != 1 {
		t.Fatalf("one node: %d replicas", r)
	}
	mk("w1", true) // cordoned: CoreDNS cannot go there
	time.Sleep(200 * time.Millisecond)
	if r := got(); r != 1 {
		t.Fatalf("a cordoned second node: %d replicas", r)
	}
	w1, err := c.CoreV1().Nodes().Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w1.Spec.Unschedulable = false
	if _, err := c.CoreV1().Nodes().Update(ctx, w1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for got() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("two schedulable nodes: %d replicas", got())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Set by hand to 3: a third node leaves it so.
	mu.Lock()
	replicas = 3
	mu.Unlock()
	mk("w2", false)
	time.Sleep(200 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(scaled) != 1 || scaled[0] != 2 || replicas != 3 {
		t.Errorf("scaled to %v, now %d; want [2], 3", scaled, replicas)
	}
}
