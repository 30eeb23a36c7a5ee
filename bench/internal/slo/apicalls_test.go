package slo

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	const out Class = -1
	for _, tc := range []struct {
		verb, resource, subresource, scope string
		want                               Class
	}{
		{"WATCH", "pods", "", "namespace", out},
		{"WATCHLIST", "pods", "", "cluster", out},
		{"CONNECT", "pods", "exec", "resource", out},
		{"GET", "pods", "log", "resource", out},
		{"POST", "pods", "portforward", "resource", out},
		{"GET", "services", "proxy", "resource", out},
		{"GET", "nodes", "attach", "resource", out},
		{"GET", "", "/readyz", "", out}, // outside the resource API
		{"GET", "pods", "", "resource", Get},
		{"LIST", "pods", "", "resource", Get}, // by metadata.name
		{"LIST", "pods", "", "namespace", NamespaceList},
		{"LIST", "nodes", "", "cluster", ClusterList},
		{"POST", "pods", "binding", "resource", Mutating},
		{"PATCH", "nodes", "status", "resource", Mutating},
		{"APPLY", "deployments", "", "resource", Mutating},
		{"DELETECOLLECTION", "pods", "", "namespace", Mutating},
	} {
		k := Key{Resource: tc.resource, Subresource: tc.subresource, Verb: tc.verb, Scope: tc.scope}
		t.Run(k.String(), func(t *testing.T) {
			got, ok := Classify(k)
			if !ok {
				got = out
			}
			if got != tc.want {
				t.Errorf("got %v (%v), want %v", got, ok, tc.want)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	var (
		getPod     = Key{Resource: "pods", Verb: "GET", Scope: "resource"}
		listNodes  = Key{Resource: "nodes", Verb: "LIST", Scope: "cluster"}
		patchNode  = Key{Resource: "nodes", Subresource: "status", Verb: "PATCH", Scope: "resource"}
		watchPods  = Key{Resource: "pods", Verb: "WATCH", Scope: "namespace"}
		getPodLogs = Key{Resource: "pods", Subresource: "log", Verb: "GET", Scope: "resource"}
		idle       = Key{Resource: "secrets", Verb: "GET", Scope: "resource"}
	)
	r := Evaluate(Histograms{
		postPods:   hist(99, 100, 100, 100, 100, 1), // p99 0.1 s
		patchNode:  hist(0, 90, 100, 100, 100, 1),   // p99 within (1, 5]: too slow for mutating
		getPod:     hist(50, 100, 100, 100, 100, 1), // p99 0.982 s
		listDeploy: hist(0, 0, 100, 100, 100, 1),    // p99 4.96 s
		listNodes:  hist(0, 0, 0, 100, 100, 1),      // p99 29.75 s
		watchPods:  hist(0, 0, 0, 0, 100, 1),        // filtered
		getPodLogs: hist(0, 0, 0, 0, 100, 1),        // filtered
		idle:       hist(0, 0, 0, 0, 0, 0),          // no calls: no row
	})
	var order []Key
	for _, row := range r.Rows {
		order = append(order, row.Key)
	}
	wantOrder := []Key{listNodes, listDeploy, patchNode, getPod, postPods}
	if len(order) != len(wantOrder) {
		t.Fatalf("rows %v, want %v", order, wantOrder)
	}
	for i := range order {
		if order[i] != wantOrder[i] {
			t.Fatalf("rows %v, want %v", order, wantOrder)
		}
	}
	if p := r.Rows[1].P99; p < 4959*time.Millisecond || p > 4961*time.Millisecond {
		t.Errorf("namespace LIST p99 = %v, want 4.96s", p)
	}
	if w := r.Rows[2].Within; w != 0.9 {
		t.Errorf("PATCH nodes/status within 1 s: %v, want 0.9", w)
	}
	for _, tc := range []struct {
		class     Class
		count     float64
		within    float64
		worst     Key
		met       bool
		threshold time.Duration
	}{
		{Mutating, 200, 0.95, patchNode, false, time.Second},
		{Get, 100, 1, getPod, true, time.Second},
		{NamespaceList, 100, 1, listDeploy, true, 5 * time.Second},
		{ClusterList, 100, 1, listNodes, true, 30 * time.Second},
	} {
		c := r.Classes[tc.class]
		if c.Class != tc.class || c.Count != tc.count || c.Within != tc.within || c.Worst.Key != tc.worst || c.Met != tc.met || c.Class.Threshold() != tc.threshold {
			t.Errorf("%v: got %+v", tc.class, c)
		}
	}
	if r.Met() {
		t.Error("Met() with a slow PATCH")
	}

	var out bytes.Buffer
	r.Print(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1+5+1+4 {
		t.Fatalf("got %d lines:\n%s", len(lines), out.String())
	}
	if f := strings.Fields(lines[1]); f[0] != "LIST" || f[1] != "nodes" || f[len(f)-1] != "yes" {
		t.Errorf("first row: %q", lines[1])
	}
	for _, want := range []string{"mutating ≤ 1s", "PATCH nodes/status", "NO", "cluster LIST ≤ 30s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
