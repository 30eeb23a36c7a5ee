// Package kubectli18n loads kubectl's message catalogs only in a process
// that runs kubectl.
//
// kubectl's packages translate their help texts in package variables, so
// the first translation happens while the binary's packages initialise,
// and upstream then parses the whole catalog. In the single binary every
// component (the API server, the kubelet, the pause process of each pod)
// links those packages and would pay that: about 16 ms of start-up and
// 4 MB of allocations per process. Importing this package first (it must
// be initialised before any package that calls i18n.T) hands upstream a
// loader that does nothing unless the process is kubectl.
package kubectli18n

import (
	"os"
	"path/filepath"

	"k8s.io/kubectl/pkg/util/i18n"
)

func init() {
	if err := i18n.SetLoadTranslationsFunc(load); err != nil {
		panic(err)
	}
}

func load() error {
	if !IsKubectl(os.Args) {
		return nil
	}
	return i18n.LoadTranslations("kubectl", nil)
}

// IsKubectl tells whether args (a process's os.Args) run kubectl: by
// argv[0], or as `kubeboot kubectl ...`.
func IsKubectl(args []string) bool {
	if len(args) == 0 {
		return false
	}
	return filepath.Base(args[0]) == "kubectl" || (len(args) > 1 && args[1] == "kubectl")
}
