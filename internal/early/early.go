// Package early runs the test server, the program of kubeboot's
// test-server image, before the rest of the binary initialises. Go
// initialises packages in import-path order as far as dependencies allow,
// and this package depends on nothing of Kubernetes, so its init runs
// before k8s.io's packages build their schemes: such a process costs
// ~20 ms of CPU at start, against ~90 ms and ~14 MB of package-init
// allocations for one that initialises the whole binary
// (GODEBUG=inittrace=1, smaps). Everything else returns here and goes
// through main. What runs once per pod (pause, the runc shim, the CNI
// plugins) is not here: those are small binaries of their own (package
// helpers).
package early

import (
	"github.com/kubeboot/kubeboot/internal/early/dispatch"
	"github.com/kubeboot/kubeboot/internal/testserver"
)

// Programs maps the names dispatched here to their entry points.
func Programs() map[string]func(args []string) int {
	return map[string]func([]string) int{
		"test-server": testserver.Main,
	}
}

func init() { dispatch.Run(Programs()) }
