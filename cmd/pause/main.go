// Command pause is the pod sandbox's process, the only file of kubeboot's
// pause image: a small static binary that imports nothing of Kubernetes,
// so each pod's sandbox costs a few hundred KiB, not the whole kubeboot
// binary's start.
package main

import (
	"os"

	"github.com/kubeboot/kubeboot/internal/programs/pause"
)

func main() { os.Exit(pause.Main()) }
