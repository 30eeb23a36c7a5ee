package main

import "testing"

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
