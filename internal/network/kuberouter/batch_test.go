package kuberouter

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// recorder is a handler that records what it is handed and when.
type recorder struct {
	mu    sync.Mutex
	got   []string
	times []time.Time
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, s)
	r.times = append(r.times, time.Now())
}

func (r *recorder) OnAdd(obj any, _ bool) { r.note("add " + obj.(string)) }
func (r *recorder) OnUpdate(_, obj any)   { r.note("update " + obj.(string)) }
func (r *recorder) OnDelete(obj any)      { r.note("delete " + obj.(string)) }

func (r *recorder) wait(t *testing.T, n int) ([]string, []time.Time) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		r.mu.Lock()
		if len(r.got) >= n {
			defer r.mu.Unlock()
			return append([]string(nil), r.got...), append([]time.Time(nil), r.times...)
		}
		r.mu.Unlock()
	}
	t.Fatalf("handed %d events, want %d", len(r.got), n)
	return nil, nil
}

// TestPacer: a lone event is handed over at once; a burst after it waits
// for the interval and comes whole, in order; nothing is lost.
func TestPacer(t *testing.T) {
	// Long enough that "at once" (within half of it) holds on a loaded
	// machine.
	const interval = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &recorder{}
	var h cache.ResourceEventHandler = newPacer(ctx, r, interval)
	start := time.Now()
	h.OnAdd("a", false)
	if _, times := r.wait(t, 1); times[0].Sub(start) > interval/2 {
		t.Errorf("a lone event handed over after %s, want at once", times[0].Sub(start))
	}
	h.OnUpdate("a", "b")
	h.OnDelete("c")
	h.OnAdd("d", true)
	got, times := r.wait(t, 4)
	want := []string{"add a", "update b", "delete c", "add d"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("handed %q, want %q", got, want)
		}
	}
	if d := times[1].Sub(times[0]); d < interval-20*time.Millisecond {
		t.Errorf("the burst was handed over %s after the event before it, want at least %s", d, interval)
	}
	if d := times[3].Sub(times[1]); d > interval/2 {
		t.Errorf("the burst was handed over across %s, want at once", d)
	}
	time.Sleep(2 * interval)
	sent := time.Now()
	h.OnDelete("e")
	if got, times := r.wait(t, 5); got[4] != "delete e" || times[4].Sub(sent) > interval/2 {
		t.Errorf("after a quiet spell: %q handed over %s after it came, want at once", got[4], times[4].Sub(sent))
	}
}

// TestPodMatters: with no NetworkPolicy, only the node's own pods are
// handed over; with one, every pod; a tombstone always.
func TestPodMatters(t *testing.T) {
	policies := cache.NewStore(cache.MetaNamespaceKeyFunc)
	matters := podMatters("n1", policies)
	pod := func(node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: node}}
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod("n2")}
	for _, tc := range []struct {
		obj           any
		none, withOne bool
	}{
		{pod("n1"), true, true},
		{pod("n2"), false, true},
		{pod(""), false, true}, // not scheduled yet
		{tombstone, true, true},
	} {
		if got := matters(tc.obj); got != tc.none {
			t.Errorf("no policy: %#v matters %v, want %v", tc.obj, got, tc.none)
		}
	}
	if err := policies.Add(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny", Namespace: "ns"}}); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []any{pod("n1"), pod("n2"), pod(""), tombstone} {
		if !matters(obj) {
			t.Errorf("with a policy: %#v does not matter", obj)
		}
	}
}

// TestPacerDropsWhatDoesNotMatter: events whose object does not pass
// relevant never reach the handler; the others do, in order.
func TestPacerDropsWhatDoesNotMatter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &recorder{}
	p := newPacer(ctx, r, 10*time.Millisecond)
	p.relevant = func(obj any) bool { return obj.(string) != "other" }
	p.OnAdd("other", false)
	p.OnAdd("a", false)
	p.OnUpdate("a", "other")
	p.OnDelete("other")
	p.OnDelete("a")
	got, _ := r.wait(t, 2)
	time.Sleep(50 * time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	if want := []string{"add a", "delete a"}; len(r.got) != 2 || r.got[0] != want[0] || r.got[1] != want[1] {
		t.Errorf("handed %q, want %q (first seen %q)", r.got, want, got)
	}
}
