// Command test-server is the only file of kubeboot's test-server image:
// the small HTTP server kubeboot's own tests and benchmarks run in pods
// (package testserver), a static binary that imports nothing of
// Kubernetes.
package main

import (
	"os"

	"github.com/kubeboot/kubeboot/internal/programs/testserver"
)

func main() { os.Exit(testserver.Main(os.Args[1:])) }
