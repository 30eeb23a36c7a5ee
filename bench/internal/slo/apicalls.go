package slo

import (
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"
	"time"
)

// Class is an API call latency SLO: a set of calls and its p99 threshold
// (sig-scalability/slos/api_call_latency.md).
type Class int

const (
	Mutating      Class = iota // every verb but GET, LIST and the streaming ones: 1 s
	Get                        // GET, and LIST of one object by name (scope resource): 1 s
	NamespaceList              // LIST within a namespace: 5 s
	ClusterList                // LIST across the cluster: 30 s
)

// The thresholds are bucket bounds of apiserver_request_duration_seconds,
// so the share within them is read from a bucket, not interpolated.
var classes = [...]struct {
	name      string
	threshold time.Duration
}{
	Mutating:      {"mutating", 1 * time.Second},
	Get:           {"GET", 1 * time.Second},
	NamespaceList: {"namespace LIST", 5 * time.Second},
	ClusterList:   {"cluster LIST", 30 * time.Second},
}

func (c Class) String() string           { return classes[c].name }
func (c Class) Threshold() time.Duration { return classes[c].threshold }

// Classify says which SLO a call counts for, and false for the calls outside
// every SLO, filtered as clusterloader2's api_responsiveness_prometheus.go
// does: watches (long-running by design), CONNECT, and the streaming or
// proxying subresources. Calls to paths outside the resource API
// (/readyz, /openapi/v3: no resource, the path in subresource) are in no
// SLO, whose text is per resource and verb.
//
// A LIST by metadata.name has scope resource; the SLO text gives read-only
// calls of scope resource 1 s, so it counts with GET (clusterloader2's
// slow-call count would give it 5 s).
func Classify(k Key) (Class, bool) {
	if k.Resource == "" {
		return 0, false
	}
	switch k.Verb {
	case "WATCH", "WATCHLIST", "CONNECT":
		return 0, false
	}
	switch k.Subresource {
	case "log", "exec", "portforward", "attach", "proxy":
		return 0, false
	}
	switch {
	case k.Verb == "GET" || k.Verb == "LIST" && k.Scope == "resource":
		return Get, true
	case k.Verb == "LIST" && k.Scope == "cluster":
		return ClusterList, true
	case k.Verb == "LIST":
		return NamespaceList, true
	}
	return Mutating, true
}

// Row is one line of the API call latency table.
type Row struct {
	Key
	Class         Class
	Count         float64
	P50, P90, P99 time.Duration
	// Within is the share of calls that took at most the class's threshold.
	Within float64
}

// Met says whether the row's p99 is within its class's threshold.
func (r Row) Met() bool { return r.P99 <= r.Class.Threshold() }

// ClassSummary is one SLO over all its rows.
type ClassSummary struct {
	Class  Class
	Count  float64
	Within float64 // share of all the class's calls within the threshold
	Worst  Row     // the row with the highest p99; zero if Count is 0
	Met    bool    // every row's p99 within the threshold; true without calls
}

// Report is the API call latency SLOs over one window.
type Report struct {
	Rows    []Row          // by p99, highest first
	Classes []ClassSummary // indexed by Class
}

// Met says whether every class met its SLO.
func (r Report) Met() bool {
	for _, c := range r.Classes {
		if !c.Met {
			return false
		}
	}
	return true
}

// Evaluate builds the report from what the servers served during a window
// (DeltaServers), leaving out the calls no SLO covers.
func Evaluate(h Histograms) Report {
	var r Report
	var within [len(classes)]float64
	for k, v := range h {
		c, ok := Classify(k)
		if !ok || v.Count <= 0 {
			continue
		}
		in := v.At(c.Threshold().Seconds())
		within[c] += in
		r.Rows = append(r.Rows, Row{Key: k, Class: c, Count: v.Count,
			P50: seconds(v.Quantile(0.50)), P90: seconds(v.Quantile(0.90)), P99: seconds(v.Quantile(0.99)),
			Within: in / v.Count})
	}
	sort.Slice(r.Rows, func(i, j int) bool {
		a, b := r.Rows[i], r.Rows[j]
		if a.P99 != b.P99 {
			return a.P99 > b.P99
		}
		return a.Key.String() < b.Key.String()
	})
	for c := range Class(len(classes)) {
		s := ClassSummary{Class: c, Met: true}
		for _, row := range r.Rows {
			if row.Class != c {
				continue
			}
			if s.Count == 0 {
				s.Worst = row // rows are sorted: the first is the worst
			}
			s.Count += row.Count
			s.Met = s.Met && row.Met()
		}
		if s.Count > 0 {
			s.Within = within[c] / s.Count
		}
		r.Classes = append(r.Classes, s)
	}
	return r
}

func seconds(s float64) time.Duration {
	if math.IsNaN(s) {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// Print writes the table, one line per key, then one line per class.
func (r Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERB\tRESOURCE\tSCOPE\tCALLS\tP50\tP90\tP99\tWITHIN\tSLO\tMET")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Verb, row.Name(), row.Scope, row.Count,
			dur(row.P50), dur(row.P90), dur(row.P99), pct(row.Within), row.Class.Threshold(), yes(row.Met()))
	}
	tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLO\tCALLS\tWORST P99\tFOR\tWITHIN\tMET")
	for _, c := range r.Classes {
		if c.Count == 0 {
			fmt.Fprintf(tw, "%s ≤ %s\t0\t-\t\t-\t-\n", c.Class, c.Class.Threshold())
			continue
		}
		fmt.Fprintf(tw, "%s ≤ %s\t%.0f\t%s\t%s\t%s\t%s\n", c.Class, c.Class.Threshold(), c.Count,
			dur(c.Worst.P99), c.Worst.Verb+" "+c.Worst.Name(), pct(c.Within), yes(c.Met))
	}
	tw.Flush()
}

// dur keeps three significant digits or so: interpolated latencies carry no more.
func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}

func pct(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}
