// Package early runs the small programs of the kubeboot binary before the
// rest of it initialises: the pod sandbox's pause process, the CNI plugins
// containerd execs for every pod, and the test server. Go initialises
// packages in import-path order as far as dependencies allow, and this
// package depends on nothing of Kubernetes, so its init runs before
// k8s.io's packages build their schemes: these processes start in a few
// milliseconds with a few MiB of memory instead of paying for the whole
// binary. Everything else returns here and goes through main.
package early

import (
	"os"
	"path/filepath"

	"github.com/kubeboot/kubeboot/internal/cni/upstream/bridge"
	"github.com/kubeboot/kubeboot/internal/cni/upstream/hostlocal"
	"github.com/kubeboot/kubeboot/internal/cni/upstream/loopback"
	"github.com/kubeboot/kubeboot/internal/cni/upstream/portmap"
	"github.com/kubeboot/kubeboot/internal/pause"
	"github.com/kubeboot/kubeboot/internal/testserver"
)

// Programs maps the names dispatched here to their entry points. CNI
// plugins read their arguments from the environment, as the CNI spec says.
func Programs() map[string]func(args []string) int {
	cni := func(main func()) func([]string) int {
		return func([]string) int { main(); return 0 }
	}
	return map[string]func([]string) int{
		"pause":       func([]string) int { return pause.Main() },
		"test-server": testserver.Main,
		"bridge":      cni(bridge.Main),
		"host-local":  cni(hostlocal.Main),
		"loopback":    cni(loopback.Main),
		"portmap":     cni(portmap.Main),
	}
}

func init() {
	progs := Programs()
	if run, ok := progs[filepath.Base(os.Args[0])]; ok {
		os.Exit(run(os.Args[1:]))
	}
	if len(os.Args) > 1 {
		if run, ok := progs[os.Args[1]]; ok {
			os.Args = os.Args[1:]
			os.Exit(run(os.Args[1:]))
		}
	}
}
