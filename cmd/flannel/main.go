// Command flannel is the pod network engine (package flannel) alone, for
// dev mode's launch of it under a debugger; nodes run it from the network
// engines' helper (cmd/network-engines).
package main

import (
	"os"

	"github.com/kubeboot/kubeboot/internal/network/flannel"
	"github.com/kubeboot/kubeboot/internal/programs/settle"
)

func main() {
	os.Exit(settle.Main(flannel.Main)(os.Args[1:]))
}
