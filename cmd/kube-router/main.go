// Command kube-router is the NetworkPolicy engine (package kuberouter)
// alone, for dev mode's launch of it under a debugger; nodes run it from
// the network engines' helper (cmd/network-engines).
package main

import (
	"os"

	"github.com/kubeboot/kubeboot/internal/network/kuberouter"
	"github.com/kubeboot/kubeboot/internal/programs/settle"
)

func main() {
	os.Exit(settle.Main(kuberouter.Main)(os.Args[1:]))
}
