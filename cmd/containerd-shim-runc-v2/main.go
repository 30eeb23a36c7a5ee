// Command containerd-shim-runc-v2 is containerd's runc shim: upstream's
// main (github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2,
// at the version go.mod pins), built by kubeboot as a helper, with one
// setting of its own: the Go scheduler's processors.
//
// containerd's shim manager starts the long-running shim with
// GOMAXPROCS=4, appended after the environment containerd gives it, so no
// configuration lowers it. A shim copies a pod's output and waits for its
// processes: its work is I/O, and every processor costs each shim its
// caches, its share of the GC's work buffers and the threads that run
// them, once per pod (docs/design.md §14, issue 46).
package main

import (
	"context"
	"runtime"

	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	"github.com/containerd/containerd/v2/pkg/shim"
)

// procs is the long-running shim's GOMAXPROCS (the short runs of `start`
// and `delete` have no GOMAXPROCS in their environment: upstream's
// setRuntime gives them 2). Fixed: the manager's appended value hides any
// GOMAXPROCS the operator gives the daemon.
const procs = 1

func main() {
	runtime.GOMAXPROCS(procs)
	shim.RunShim(context.Background(), manager.NewShimManager("io.containerd.runc.v2"))
}
