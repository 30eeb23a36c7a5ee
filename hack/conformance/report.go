package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// sigCounts are one SIG's specs in a JUnit report: passed, failed, and
// skipped at run time (specs the focus or skip left out are not counted).
type sigCounts struct{ passed, failed, skipped int }

var sigName = regexp.MustCompile(`\[sig-([a-z0-9-]+)\]`)

// bySIG reads ginkgo's JUnit report and counts its specs by SIG, as
// run.sh's own summary counts them overall.
func bySIG(r io.Reader) (map[string]*sigCounts, error) {
	var report struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Status  string `xml:"status,attr"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.NewDecoder(r).Decode(&report); err != nil {
		return nil, err
	}
	out := map[string]*sigCounts{}
	for _, c := range report.Cases {
		if !strings.HasPrefix(c.Name, "[It]") {
			continue
		}
		sig := "(none)"
		if m := sigName.FindStringSubmatch(c.Name); m != nil {
			sig = m[1]
		}
		n := out[sig]
		if n == nil {
			n = &sigCounts{}
		}
		switch c.Status {
		case "passed":
			n.passed++
		case "skipped":
			if c.Skipped == nil || c.Skipped.Message == "skipped" {
				continue // not selected
			}
			n.skipped++
		case "pending":
			continue
		default:
			n.failed++
		}
		out[sig] = n
	}
	return out, nil
}

// printBySIG prints the report's counts by SIG, one line each.
func printBySIG(junit string, w io.Writer) error {
	f, err := os.Open(junit)
	if err != nil {
		return err
	}
	defer f.Close()
	counts, err := bySIG(f)
	if err != nil {
		return fmt.Errorf("%s: %w", junit, err)
	}
	var sigs []string
	for s := range counts {
		sigs = append(sigs, s)
	}
	sort.Strings(sigs)
	for _, s := range sigs {
		c := counts[s]
		fmt.Fprintf(w, "[conformance] sig-%-16s %4d passed, %3d failed, %3d skipped\n", s, c.passed, c.failed, c.skipped)
	}
	return nil
}
