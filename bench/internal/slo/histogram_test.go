package slo

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// series writes one histogram in the exposition format, over the bounds
// 0.1, 1, 5 and 30 (a few of the real ones; the code takes any).
func series(labels string, b01, b1, b5, b30, count int, sum float64) string {
	var s strings.Builder
	for _, b := range []struct {
		le string
		n  int
	}{{"0.1", b01}, {"1", b1}, {"5", b5}, {"30", b30}, {"+Inf", count}} {
		fmt.Fprintf(&s, "apiserver_request_duration_seconds_bucket{%s,le=%q} %d\n", labels, b.le, b.n)
	}
	fmt.Fprintf(&s, "apiserver_request_duration_seconds_sum{%s} %g\n", labels, sum)
	fmt.Fprintf(&s, "apiserver_request_duration_seconds_count{%s} %d\n", labels, count)
	return s.String()
}

const header = "# TYPE apiserver_request_duration_seconds histogram\n"

func hist(b01, b1, b5, b30, count, sum float64) Histogram {
	return Histogram{Count: count, Sum: sum, Buckets: []Bucket{{0.1, b01}, {1, b1}, {5, b5}, {30, b30}}}
}

func parse(t *testing.T, text string) Scrape {
	t.Helper()
	s, err := ParseScrape(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	postPods   = Key{Resource: "pods", Verb: "POST", Scope: "resource"}
	listDeploy = Key{Group: "apps", Resource: "deployments", Verb: "LIST", Scope: "namespace"}
)

func TestParseScrape(t *testing.T) {
	text := "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.7e9\n" + header +
		// Two series apart only by labels that are summed over.
		series(`component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"`, 3, 4, 4, 4, 4, 0.5) +
		series(`component="apiserver",dry_run="All",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"`, 1, 1, 1, 1, 1, 0.01) +
		series(`component="apiserver",dry_run="",group="apps",resource="deployments",scope="namespace",subresource="",verb="LIST",version="v1"`, 0, 2, 3, 3, 3, 4) +
		"# TYPE apiserver_request_total counter\napiserver_request_total{verb=\"POST\"} 9\n"
	got := parse(t, text)
	want := Scrape{Started: 1.7e9, Histograms: Histograms{
		postPods:   hist(4, 5, 5, 5, 5, 0.51),
		listDeploy: hist(0, 2, 3, 3, 3, 4),
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if n := listDeploy.Name(); n != "deployments.apps" {
		t.Errorf("Name() = %q", n)
	}
}

func TestDelta(t *testing.T) {
	pods := `group="",resource="pods",scope="resource",subresource="",verb="POST"`
	deploy := `group="apps",resource="deployments",scope="namespace",subresource="",verb="LIST"`
	start := "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 100\n"
	before := start + header + series(pods, 1, 2, 2, 2, 2, 0.5)
	for _, tc := range []struct {
		name, after string
		want        Histograms // nil: a restart
	}{
		{"calls added, a series new", start + header + series(pods, 5, 9, 10, 10, 10, 3) + series(deploy, 0, 1, 1, 1, 1, 0.3),
			Histograms{postPods: hist(4, 7, 8, 8, 8, 2.5), listDeploy: hist(0, 1, 1, 1, 1, 0.3)}},
		{"nothing served: no row", start + header + series(pods, 1, 2, 2, 2, 2, 0.5), Histograms{}},
		{"count fell", start + header + series(pods, 1, 1, 1, 1, 1, 0.1), nil},
		{"a bucket fell", start + header + series(pods, 0, 2, 2, 2, 3, 0.9), nil},
		{"series vanished", start + header + series(deploy, 0, 1, 1, 1, 1, 0.3), nil},
		{"new start time, counts grown", "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 200\n" +
			header + series(pods, 5, 9, 10, 10, 10, 3), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Delta(parse(t, before), parse(t, tc.after))
			if tc.want == nil {
				if !errors.Is(err, ErrRestarted) {
					t.Fatalf("got %v, %v; want ErrRestarted", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDeltaServers(t *testing.T) {
	pods := `group="",resource="pods",scope="resource",subresource="",verb="POST"`
	s := func(n int) Scrape { return parse(t, header+series(pods, n, n, n, n, n, float64(n))) }
	before := map[string]Scrape{"cp1": s(1), "cp2": s(10), "cp3": s(5), "cp4": s(1)}
	after := map[string]Scrape{"cp1": s(3), "cp2": s(2), "cp3": s(9), "cp5": s(1)}
	got, dropped := DeltaServers(before, after)
	if want := (Histograms{postPods: hist(6, 6, 6, 6, 6, 6)}); !reflect.DeepEqual(got, want) {
		t.Errorf("sum: got %+v, want %+v", got, want)
	}
	names := []string{"cp2", "cp4", "cp5"} // restarted, no end scrape, no start scrape
	if len(dropped) != len(names) || !errors.Is(dropped[0], ErrRestarted) {
		t.Fatalf("dropped: %v", dropped)
	}
	for i, name := range names {
		if !strings.HasPrefix(dropped[i].Error(), "API server "+name+":") {
			t.Errorf("dropped[%d] = %v, want %s named", i, dropped[i], name)
		}
	}
}

func TestQuantile(t *testing.T) {
	// 10 calls ≤ 0.1 s, 40 in (0.1, 1], 40 in (1, 5], 10 in (5, 30].
	h := hist(10, 50, 90, 100, 100, 0)
	slow := hist(10, 50, 90, 100, 120, 0) // 20 more beyond 30 s
	for _, tc := range []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		{"first bucket starts at 0", h, 0.05, 0.05},
		{"inside a bucket", h, 0.3, 0.55},
		{"at a bound", h, 0.5, 1},
		{"p90 at the 5 s bound", h, 0.9, 5},
		{"last finite bucket", h, 0.95, 17.5},
		{"+Inf: highest finite bound", slow, 0.99, 30},
		{"no calls", Histogram{Buckets: h.Buckets}, 0.5, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.h.Quantile(tc.q)
			if math.IsNaN(tc.want) != math.IsNaN(got) || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}
