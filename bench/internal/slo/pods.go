package slo

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodStartupThreshold is the pod startup SLO: create→running within 5 s at
// p99 (and so at p50 and p90), image pulls excluded.
const PodStartupThreshold = 5 * time.Second

// PodTracker follows pods through a watch as clusterloader2's
// pod_startup_latency.go does. Times are receive times, stamped by the
// caller in the watch handler before any queueing: CreationTimestamp has
// one-second granularity. The zero value is ready; it is safe for
// concurrent use.
type PodTracker struct {
	mu   sync.Mutex
	pods map[string]*podTimes
}

type podTimes struct {
	created, scheduled, running time.Time
	// lateRunning: the earliest sighting already had phase Running, so the
	// pod's startup happened out of sight.
	lateScheduled, lateRunning bool
}

// Observe records one watch event of a pod. key names the pod (namespace/name,
// or its UID). created is the earliest time seen, scheduled the earliest with
// nodeName set, running the earliest with phase Running: earliest, not
// first delivered, so events handed over out of order count the same.
func (t *PodTracker) Observe(key string, at time.Time, phase corev1.PodPhase, nodeName string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pods == nil {
		t.pods = map[string]*podTimes{}
	}
	scheduled, running := nodeName != "", phase == corev1.PodRunning
	p := t.pods[key]
	if p == nil || at.Before(p.created) {
		if p == nil {
			p = &podTimes{}
			t.pods[key] = p
		}
		p.created, p.lateScheduled, p.lateRunning = at, scheduled, running
	}
	if scheduled && (p.scheduled.IsZero() || at.Before(p.scheduled)) {
		p.scheduled = at
	}
	if running && (p.running.IsZero() || at.Before(p.running)) {
		p.running = at
	}
}

// Percentiles summarizes exact samples by nearest rank: Pq is the smallest
// sample with at least q% of the samples at or below it (clusterloader2's
// NewLatencyMetric takes the same index).
type Percentiles struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

// Summarize computes Percentiles; samples is left unchanged.
func Summarize(samples []time.Duration) Percentiles {
	s := slices.Clone(samples)
	slices.Sort(s)
	p := Percentiles{N: len(s)}
	if p.N == 0 {
		return p
	}
	rank := func(q int) time.Duration { return s[(p.N*q+99)/100-1] } // ⌈n·q/100⌉-th
	p.P50, p.P90, p.P99, p.Max = rank(50), rank(90), rank(99), s[p.N-1]
	return p
}

func (p Percentiles) String() string {
	if p.N == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %s  p90 %s  p99 %s  max %s  (%d pods)", dur(p.P50), dur(p.P90), dur(p.P99), dur(p.Max), p.N)
}

// PodStartup is the pod startup latency of the pods a tracker saw.
type PodStartup struct {
	Pods       int
	ToSchedule Percentiles // created → scheduled
	ToRunning  Percentiles // created → running: the SLO
	// Late pods were first seen already Running (the watch started after
	// them, or missed events): upstream would count 0 s; they are left out.
	// Pods first seen already scheduled are left out of ToSchedule alike.
	Late int
	// NotRunning pods were never seen Running.
	NotRunning int
}

// Met says whether the SLO holds: some pods measured, p99 within 5 s.
func (s PodStartup) Met() bool { return s.ToRunning.N > 0 && s.ToRunning.P99 <= PodStartupThreshold }

// Result computes the latencies of every pod seen so far.
func (t *PodTracker) Result() PodStartup {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := PodStartup{Pods: len(t.pods)}
	var toSchedule, toRunning []time.Duration
	for _, p := range t.pods {
		if !p.scheduled.IsZero() && !p.lateScheduled {
			toSchedule = append(toSchedule, p.scheduled.Sub(p.created))
		}
		switch {
		case p.running.IsZero():
			r.NotRunning++
		case p.lateRunning:
			r.Late++
		default:
			toRunning = append(toRunning, p.running.Sub(p.created))
		}
	}
	r.ToSchedule, r.ToRunning = Summarize(toSchedule), Summarize(toRunning)
	return r
}

// Print writes the two latencies and the SLO's verdict.
func (s PodStartup) Print(w io.Writer) {
	fmt.Fprintf(w, "pod startup, create → running: %s; SLO p99 ≤ %s met: %s\n", s.ToRunning, PodStartupThreshold, yes(s.Met()))
	fmt.Fprintf(w, "             create → scheduled: %s\n", s.ToSchedule)
	if s.Late > 0 || s.NotRunning > 0 {
		fmt.Fprintf(w, "             of %d pods seen: %d first seen already Running (left out), %d never Running\n", s.Pods, s.Late, s.NotRunning)
	}
}
