package slo

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPodTracker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	const (
		pending = corev1.PodPending
		running = corev1.PodRunning
	)
	type event struct {
		pod   string
		at    time.Time
		phase corev1.PodPhase
		node  string
	}
	for _, tc := range []struct {
		name                  string
		events                []event // in delivery order
		toSchedule, toRunning []time.Duration
		late, notRunning      int
	}{
		{"in order", []event{
			{"a", s(0), pending, ""}, {"a", s(0.5), pending, "n1"}, {"a", s(2), running, "n1"}, {"a", s(3), running, "n1"},
			{"b", s(1), pending, ""}, {"b", s(1.2), pending, "n2"}, {"b", s(7), running, "n2"},
		}, []time.Duration{500 * time.Millisecond, 200 * time.Millisecond}, []time.Duration{2 * time.Second, 6 * time.Second}, 0, 0},
		{"out of order: running delivered first", []event{
			{"a", s(2), running, "n1"}, {"a", s(0.5), pending, "n1"}, {"a", s(0), pending, ""},
		}, []time.Duration{500 * time.Millisecond}, []time.Duration{2 * time.Second}, 0, 0},
		{"seen Running first: left out", []event{
			{"a", s(5), running, "n1"}, {"a", s(6), running, "n1"},
			{"b", s(0), pending, ""}, {"b", s(1), running, "n1"},
		}, []time.Duration{time.Second}, []time.Duration{time.Second}, 1, 0},
		{"first seen scheduled, never running", []event{
			{"a", s(0), pending, "n1"}, {"a", s(1), pending, "n1"},
			{"b", s(0), pending, ""},
		}, nil, nil, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr PodTracker
			pods := map[string]bool{}
			for _, e := range tc.events {
				tr.Observe(e.pod, e.at, e.phase, e.node)
				pods[e.pod] = true
			}
			got := tr.Result()
			want := PodStartup{Pods: len(pods), ToSchedule: Summarize(tc.toSchedule), ToRunning: Summarize(tc.toRunning),
				Late: tc.late, NotRunning: tc.notRunning}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestPodStartupMet(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		met     bool
	}{
		{"no pods", nil, false},
		{"p99 at 5 s", []time.Duration{time.Second, 5 * time.Second}, true},
		{"p99 above", []time.Duration{time.Second, 5*time.Second + 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := PodStartup{ToRunning: Summarize(tc.samples)}
			if s.Met() != tc.met {
				t.Errorf("Met() = %v, want %v", s.Met(), tc.met)
			}
			var out bytes.Buffer
			s.Print(&out)
			if !strings.Contains(out.String(), "met: "+yes(tc.met)) {
				t.Errorf("printed:\n%s", out.String())
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	many := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, v := range n {
			d = append(d, ms(v))
		}
		return d
	}
	var hundred []int
	for i := 100; i >= 1; i-- { // unsorted on purpose
		hundred = append(hundred, i)
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		want    Percentiles
	}{
		{"none", nil, Percentiles{}},
		{"one", many(7), Percentiles{N: 1, P50: ms(7), P90: ms(7), P99: ms(7), Max: ms(7)}},
		{"ten: p99 is the largest", many(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), Percentiles{N: 10, P50: ms(5), P90: ms(9), P99: ms(10), Max: ms(10)}},
		{"a hundred", many(hundred...), Percentiles{N: 100, P50: ms(50), P90: ms(90), P99: ms(99), Max: ms(100)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.samples...)
			if got := Summarize(tc.samples); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.samples) {
				t.Error("Summarize reordered its argument")
			}
		})
	}
}
