// Command network-engines is the pod network's two engines in one helper
// binary: flannel (package flannel) and kube-router's network policy
// controller (package kuberouter), each its own process, chosen by the
// name it is run as (the helpers' directory links flannel and kube-router
// to this file, so that ps names each).
//
// One file rather than two: both processes map the same pages of the code
// they share (client-go, the API types, the runtime), where two binaries
// each mapped their own copy. On an idle node the two engines hold 37.5
// MiB of PSS against 57.2 as two binaries (docs/design.md §14), and the
// kubeboot binary carries one file instead of two.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubeboot/kubeboot/internal/network/flannel"
	"github.com/kubeboot/kubeboot/internal/network/kuberouter"
	"github.com/kubeboot/kubeboot/internal/programs/settle"
)

// The names it runs as: helpers.Flannel and helpers.KubeRouter, which
// this program does not import (package helpers links zstd and, with the
// kubeboot_helpers tag, the whole pack); main_test.go checks they agree.
const (
	flannelName    = "flannel"
	kubeRouterName = "kube-router"
)

// engine is the program of the name the binary is run as.
func engine(name string) (func(args []string) int, bool) {
	switch name {
	case flannelName:
		return flannel.Main, true
	case kubeRouterName:
		return kuberouter.Main, true
	}
	return nil, false
}

func main() {
	name := filepath.Base(os.Args[0])
	m, ok := engine(name)
	if !ok {
		fmt.Fprintf(os.Stderr, "network-engines: run as %q; run it as %s or %s (a link of that name, or that argv[0])\n", name, flannelName, kubeRouterName)
		os.Exit(2)
	}
	os.Exit(settle.Main(m)(os.Args[1:]))
}
