// Package settle lowers a long-running component's memory once it is up.
package settle

import (
	"os"
	"runtime/debug"
	"strconv"
	"time"
)

// Long-running components settle their memory once they are up: the Go
// runtime's default target (GOGC=100) lets a heap grow to twice what is
// live, and a component's start-up (building schemes, OpenAPI, caches)
// leaves that much behind. After settleAfter the component collects with
// a lower target and returns what it no longer uses to the OS. Under load
// this costs some GC CPU; on this 2-core machine it took about 90 MiB
// off an idle single-node cluster (bench/node).
//
// An operator's own GOGC, in the component's environment, wins; so does
// KUBEBOOT_SETTLE_GOGC (a percentage, or "off").
const (
	settleAfter = 20 * time.Second
	settleGOGC  = 50
)

// Main wraps a component's entry point (see the package's constants).
func Main(m func(args []string) int) func(args []string) int {
	return func(args []string) int {
		Start()
		return m(args)
	}
}

// Start settles the process's memory settleAfter from now, unless its
// environment says otherwise: for a long-running process that is not a
// component's main (the node daemon).
func Start() {
	if percent, ok := settlePercent(os.LookupEnv); ok {
		go func() {
			time.Sleep(settleAfter)
			debug.SetGCPercent(percent)
			debug.FreeOSMemory()
		}()
	}
}

// settlePercent is the GOGC a component settles to, and whether it does.
func settlePercent(lookup func(string) (string, bool)) (int, bool) {
	if _, set := lookup("GOGC"); set {
		return 0, false
	}
	v, set := lookup("KUBEBOOT_SETTLE_GOGC")
	if !set {
		return settleGOGC, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}
