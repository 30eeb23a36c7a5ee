// Package cni runs the CNI plugins containerd execs for every pod (bridge,
// host-local, loopback, portmap) before the rest of the binary
// initialises; see package early. It is apart from early because the
// plugins' own dependencies (netlink, nftables) would hold back the
// pause process and the test server, which need none of them.
package cni

import (
	"github.com/kubeboot/kubeboot/internal/cni/upstream/bridge"
	"github.com/kubeboot/kubeboot/internal/cni/upstream/hostlocal"
	"github.com/kubeboot/kubeboot/internal/cni/upstream/loopback"
	"github.com/kubeboot/kubeboot/internal/cni/upstream/portmap"
	"github.com/kubeboot/kubeboot/internal/early/dispatch"
)

// Programs maps the plugin names to their entry points. CNI plugins read
// their arguments from the environment, as the CNI spec says.
func Programs() map[string]func(args []string) int {
	cni := func(main func()) func([]string) int {
		return func([]string) int { main(); return 0 }
	}
	return map[string]func([]string) int{
		"bridge":     cni(bridge.Main),
		"host-local": cni(hostlocal.Main),
		"loopback":   cni(loopback.Main),
		"portmap":    cni(portmap.Main),
	}
}

func init() { dispatch.Run(Programs()) }
