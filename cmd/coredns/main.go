// Command coredns is the only file of kubeboot's CoreDNS image: upstream
// CoreDNS (coremain) with the plugins a cluster's Corefile uses, each
// registering itself when imported, in upstream's directive order. A
// binary of its own rather than the kubeboot binary: its two replicas
// share ~45 MiB of pages, not ~200 MiB, and each starts without
// initialising Kubernetes' control-plane packages.
package main

import (
	"os"

	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"

	"github.com/kubeboot/kubeboot/internal/programs/settle"
)

func main() {
	os.Exit(settle.Main(func([]string) int {
		coremain.Run()
		return 0
	})(os.Args[1:]))
}
