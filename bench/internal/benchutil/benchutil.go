// Package benchutil holds what kubeboot's benchmarks share: the binary,
// medians, trace-line parsing, readiness polling from inside a host, and
// the proportional set size of a host's processes.
package benchutil

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubeboot/kubeboot/test/nethost"
)

// Binary returns the kubeboot binary to measure.
func Binary() (string, error) {
	b := os.Getenv("KUBEBOOT_BINARY")
	if b == "" {
		b, _ = filepath.Abs("_output/kubeboot")
	}
	if _, err := os.Stat(b); err != nil {
		return "", fmt.Errorf("kubeboot binary %s: %v (run `make build` first, or set KUBEBOOT_BINARY)", b, err)
	}
	return b, nil
}

// Median of durations.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// Percentile of durations (p in 0..100), nearest rank.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

var afterRe = regexp.MustCompile(`after ([0-9.]+(?:ms|s|µs))`)

// After finds the first output line containing marker and returns the
// duration printed after "after" on it.
func After(out, marker string) (time.Duration, bool) {
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(l, marker) {
			continue
		}
		if m := afterRe.FindStringSubmatch(l); m != nil {
			d, err := time.ParseDuration(m[1])
			return d, err == nil
		}
	}
	return 0, false
}

// PollReady polls url from inside the host until it answers 200, and
// returns how long after start that was (0 if ctx ended first).
func PollReady(ctx context.Context, h *nethost.Host, url string, start time.Time) time.Duration {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		DialContext:       h.DialContext,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // readiness only
		DisableKeepAlives: true,
	}}
	for ctx.Err() == nil {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(start)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}

// ProcPSS is one process's proportional set size.
type ProcPSS struct {
	PID  int
	Name string
	KiB  int64
}

// PSS reads Pss from /proc/<pid>/smaps_rollup for each pid.
func PSS(pids []int) ([]ProcPSS, int64) {
	var out []ProcPSS
	var total int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			continue
		}
		var kib int64
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) >= 2 && f[0] == "Pss:" {
				kib, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
		out = append(out, ProcPSS{PID: pid, Name: procName(pid), KiB: kib})
		total += kib
	}
	sort.Slice(out, func(i, j int) bool { return out[i].KiB > out[j].KiB })
	return out, total
}

func procName(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "?"
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	name := filepath.Base(args[0])
	if name == "kubeboot" && len(args) > 1 {
		for _, a := range args[1:] {
			if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "/") {
				return "kubeboot " + a
			}
		}
	}
	return name
}
