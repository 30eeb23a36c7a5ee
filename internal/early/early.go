// Package early runs the small programs of the kubeboot binary before the
// rest of it initialises: the pod sandbox's pause process and the test
// server here, the CNI plugins containerd execs for every pod in package
// early/cni. Go initialises packages in import-path order as far as
// dependencies allow, and these packages depend on nothing of Kubernetes,
// so their init runs before k8s.io's packages build their schemes. The
// ~400 packages whose import paths sort before this one still initialise
// first: such a process costs ~20 ms of CPU at start (a pause process
// then holds ~7 MB of private memory), against ~90 ms and ~14 MB of
// package-init allocations for one that initialises the whole binary
// (GODEBUG=inittrace=1, smaps). Everything else returns here and goes
// through main.
package early

import (
	"github.com/kubeboot/kubeboot/internal/early/dispatch"
	"github.com/kubeboot/kubeboot/internal/pause"
	"github.com/kubeboot/kubeboot/internal/testserver"
)

// Programs maps the names dispatched here to their entry points.
func Programs() map[string]func(args []string) int {
	return map[string]func([]string) int{
		"pause":       func([]string) int { return pause.Main() },
		"test-server": testserver.Main,
	}
}

func init() { dispatch.Run(Programs()) }
