package burst

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// requestKey is one row of the API server's request counter.
type requestKey struct{ verb, resource, subresource string }

// apiRequests reads the API server's apiserver_request_total, summed over
// codes, components and scopes, by verb, resource and subresource.
func apiRequests(ctx context.Context, c kubernetes.Interface) (map[requestKey]float64, error) {
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return parseRequests(string(raw))
}

func parseRequests(text string) (map[requestKey]float64, error) {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	out := map[requestKey]float64{}
	f, ok := families["apiserver_request_total"]
	if !ok {
		return out, nil
	}
	for _, m := range f.GetMetric() {
		var k requestKey
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "verb":
				k.verb = l.GetValue()
			case "resource":
				k.resource = l.GetValue()
			case "subresource":
				k.subresource = l.GetValue()
			}
		}
		out[k] += m.GetCounter().GetValue()
	}
	return out, nil
}

// printRequests prints the requests served between two readings, per pod
// of n, writes first: what each pod costs the API server and etcd.
func printRequests(before, after map[requestKey]float64, n int) {
	type row struct {
		k     requestKey
		count float64
	}
	var rows []row
	var writes, total float64
	for k, v := range after {
		d := v - before[k]
		if d <= 0 {
			continue
		}
		rows = append(rows, row{k, d})
		total += d
		if isWrite(k.verb) {
			writes += d
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if wi, wj := isWrite(rows[i].k.verb), isWrite(rows[j].k.verb); wi != wj {
			return wi
		}
		return rows[i].count > rows[j].count
	})
	fmt.Printf("API requests meanwhile: %.0f (%.1f per pod), of which writes %.0f (%.1f per pod):\n", total, total/float64(n), writes, writes/float64(n))
	for _, r := range rows {
		if r.count/float64(n) < 0.1 {
			continue
		}
		name := r.k.resource
		if r.k.subresource != "" {
			name += "/" + r.k.subresource
		}
		fmt.Printf("  %-7s %-28s %5.0f  per pod %4.1f\n", r.k.verb, name, r.count, r.count/float64(n))
	}
}

func isWrite(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
		return true
	}
	return false
}
