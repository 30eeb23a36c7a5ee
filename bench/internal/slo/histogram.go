// Package slo holds the arithmetic of SIG-scalability's SLOs for benchmarks
// that read them with client-go rather than Prometheus and clusterloader2:
// API call latency from the API servers' apiserver_request_duration_seconds
// histograms (scraped at both ends of a window, subtracted, summed over
// servers), and pod startup latency from the receive times of a pod watch.
// It talks to no cluster: callers fetch /metrics and run the watch.
package slo

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Key names a row of the API call latency table: upstream's grouping
// (resource, subresource, verb, scope), plus the API group so that, say,
// core and events.k8s.io events stay apart. Group is "" for the core group.
// dry_run, version and component are summed over.
type Key struct {
	Group, Resource, Subresource, Verb, Scope string
}

// Name is the resource as kubectl writes it, with the subresource:
// "pods", "deployments.apps/scale".
func (k Key) Name() string {
	n := k.Resource
	if k.Group != "" {
		n += "." + k.Group
	}
	if k.Subresource != "" {
		n += "/" + k.Subresource
	}
	return n
}

func (k Key) String() string { return k.Verb + " " + k.Name() + " (" + k.Scope + ")" }

// Bucket is one cumulative bucket: Count observations took at most Le seconds.
type Bucket struct{ Le, Count float64 }

// Histogram is one latency histogram. Buckets holds the finite bounds in
// ascending order; the +Inf bucket is Count.
type Histogram struct {
	Count, Sum float64
	Buckets    []Bucket
}

// Histograms are latency histograms by key: one server's totals, or what
// several served during a window.
type Histograms map[Key]Histogram

// Scrape is what one API server's /metrics said at one moment.
type Scrape struct {
	// Started is process_start_time_seconds, 0 if absent. A change means
	// a restart even when the counters have since grown past their old values.
	Started    float64
	Histograms Histograms
}

const latencyMetric = "apiserver_request_duration_seconds"

// ParseScrape reads the text exposition format of an API server's /metrics.
func ParseScrape(r io.Reader) (Scrape, error) {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return Scrape{}, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	s := Scrape{Histograms: Histograms{}}
	if f, ok := families["process_start_time_seconds"]; ok && len(f.GetMetric()) > 0 {
		s.Started = f.GetMetric()[0].GetGauge().GetValue()
	}
	f, ok := families[latencyMetric]
	if !ok {
		return s, nil
	}
	for _, m := range f.GetMetric() {
		var k Key
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "group":
				k.Group = l.GetValue()
			case "resource":
				k.Resource = l.GetValue()
			case "subresource":
				k.Subresource = l.GetValue()
			case "verb":
				k.Verb = l.GetValue()
			case "scope":
				k.Scope = l.GetValue()
			}
		}
		ph := m.GetHistogram()
		h := Histogram{Count: float64(ph.GetSampleCount()) + ph.GetSampleCountFloat(), Sum: ph.GetSampleSum()}
		for _, b := range ph.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), +1) {
				h.Buckets = append(h.Buckets, Bucket{b.GetUpperBound(), float64(b.GetCumulativeCount()) + b.GetCumulativeCountFloat()})
			}
		}
		sort.Slice(h.Buckets, func(i, j int) bool { return h.Buckets[i].Le < h.Buckets[j].Le })
		s.Histograms[k] = add(s.Histograms[k], h, 1)
	}
	return s, nil
}

// ErrRestarted marks a server whose counters went back between two scrapes.
var ErrRestarted = errors.New("the server restarted during the window")

// Delta is what a server served between two scrapes. A counter that went
// back, a series that vanished or a new start time means the server
// restarted; Delta then returns an error wrapping ErrRestarted.
func Delta(before, after Scrape) (Histograms, error) {
	if before.Started != after.Started {
		return nil, fmt.Errorf("process_start_time_seconds went from %.0f to %.0f: %w", before.Started, after.Started, ErrRestarted)
	}
	for k, b := range before.Histograms {
		if _, ok := after.Histograms[k]; !ok && b.Count > 0 {
			return nil, fmt.Errorf("%s %s vanished (it counted %.0f calls): %w", latencyMetric, k, b.Count, ErrRestarted)
		}
	}
	d := Histograms{}
	for k, a := range after.Histograms {
		h := add(a, before.Histograms[k], -1)
		if h.Count < 0 {
			return nil, fmt.Errorf("%s %s fell from %.0f to %.0f calls: %w", latencyMetric, k, before.Histograms[k].Count, a.Count, ErrRestarted)
		}
		for _, b := range h.Buckets {
			if b.Count < 0 {
				return nil, fmt.Errorf("%s %s bucket le=%g fell: %w", latencyMetric, k, b.Le, ErrRestarted)
			}
		}
		if h.Count > 0 {
			d[k] = h
		}
	}
	return d, nil
}

// DeltaServers sums each server's Delta. A server with a scrape missing at
// either end, or that restarted, is left out of the sum; each such server
// gets one error naming it, for the caller to print.
func DeltaServers(before, after map[string]Scrape) (Histograms, []error) {
	var names []string
	for n := range after {
		names = append(names, n)
	}
	for n := range before {
		if _, ok := after[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var deltas []Histograms
	var dropped []error
	for _, n := range names {
		b, okb := before[n]
		a, oka := after[n]
		var err error
		switch {
		case !okb:
			err = errors.New("no scrape at the start of the window")
		case !oka:
			err = errors.New("no scrape at the end of the window")
		default:
			var d Histograms
			if d, err = Delta(b, a); err == nil {
				deltas = append(deltas, d)
				continue
			}
		}
		dropped = append(dropped, fmt.Errorf("API server %s: %w: left out of the sums", n, err))
	}
	return Sum(deltas...), dropped
}

// Sum adds histograms key by key, as sum by (...) does over servers.
func Sum(hs ...Histograms) Histograms {
	out := Histograms{}
	for _, h := range hs {
		for k, v := range h {
			out[k] = add(out[k], v, 1)
		}
	}
	return out
}

// add returns a + sign·b over the union of their bounds. Servers of one
// version share a layout; should two differ, a bound one of them lacks takes
// that histogram's count at its next lower bound, an undercount at worst.
func add(a, b Histogram, sign float64) Histogram {
	out := Histogram{Count: a.Count + sign*b.Count, Sum: a.Sum + sign*b.Sum}
	i, j := 0, 0
	for i < len(a.Buckets) || j < len(b.Buckets) {
		var le float64
		switch {
		case j == len(b.Buckets) || i < len(a.Buckets) && a.Buckets[i].Le < b.Buckets[j].Le:
			le = a.Buckets[i].Le
			i++
		case i == len(a.Buckets) || b.Buckets[j].Le < a.Buckets[i].Le:
			le = b.Buckets[j].Le
			j++
		default:
			le = a.Buckets[i].Le
			i, j = i+1, j+1
		}
		out.Buckets = append(out.Buckets, Bucket{le, a.At(le) + sign*b.At(le)})
	}
	return out
}

// At is the number of observations of at most le seconds, counting
// whole buckets only: exact when le is one of the bounds.
func (h Histogram) At(le float64) float64 {
	if math.IsInf(le, +1) {
		return h.Count
	}
	c := 0.0
	for _, b := range h.Buckets {
		if b.Le > le {
			break
		}
		c = b.Count
	}
	return c
}

// Quantile estimates the q-quantile in seconds as Prometheus's
// histogram_quantile does: linear interpolation inside the bucket holding
// rank q·Count, the first bucket starting at 0; a rank in the +Inf bucket
// gives the highest finite bound. NaN without observations.
func (h Histogram) Quantile(q float64) float64 {
	switch {
	case math.IsNaN(q) || h.Count <= 0 || len(h.Buckets) == 0:
		return math.NaN()
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(+1)
	}
	rank := q * h.Count
	start, below := 0.0, 0.0
	for _, b := range h.Buckets {
		if b.Count >= rank {
			if b.Count == below { // only when rank is 0
				return start
			}
			return start + (b.Le-start)*(rank-below)/(b.Count-below)
		}
		start, below = b.Le, b.Count
	}
	return start
}
