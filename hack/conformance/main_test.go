package main

import (
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	for out, ok := range map[string]bool{
		"FAILED: [It] x\nconformance: 426 passed, 7 failed, 0 skipped\n": false,
		"conformance: 11 passed, 0 failed, 1 skipped\n":                  true,
		"conformance: 0 passed, 0 failed, 0 skipped\n":                   false,
		"[conformance] build failed\n":                                   false,
	} {
		if err := verdict(out, "f", "s"); (err == nil) != ok {
			t.Errorf("verdict(%q) = %v", out, err)
		}
	}
}

func TestBySIG(t *testing.T) {
	report := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="Kubernetes e2e suite">
<testcase name="[SynchronizedBeforeSuite]" status="passed"></testcase>
<testcase name="[It] [sig-node] Pods should be submitted and removed [Conformance]" status="passed"></testcase>
<testcase name="[It] [sig-node] Secrets should be consumable via the environment [Conformance]" status="failed"></testcase>
<testcase name="[It] [sig-network] DNS should provide DNS for services [Conformance]" status="passed"></testcase>
<testcase name="[It] [sig-network] not selected" status="skipped"><skipped message="skipped"></skipped></testcase>
<testcase name="[It] [sig-apps] skipped at run time" status="skipped"><skipped message="skipped - needs two nodes"></skipped></testcase>
</testsuite></testsuites>`
	got, err := bySIG(strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]sigCounts{"node": {1, 1, 0}, "network": {1, 0, 0}, "apps": {0, 0, 1}}
	if len(got) != len(want) {
		t.Fatalf("bySIG = %v, want %v", got, want)
	}
	for s, w := range want {
		if got[s] == nil || *got[s] != w {
			t.Errorf("sig-%s: %+v, want %+v", s, got[s], w)
		}
	}
}
