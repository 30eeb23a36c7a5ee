// Command registry is the CNCF distribution registry (what operators run
// as registry:3), built from its Go module with the filesystem storage
// driver only: `registry serve CONFIG`. hack/conformance runs it on a test
// host as the mirror every node pulls the e2e test images through, under
// their upstream names.
//
// It is a module of its own so that distribution's dependencies (its cloud
// storage drivers, OpenTelemetry, redis) never move a version in
// kubeboot's module graph.
package main

import (
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	// RootCmd exits non-zero on its own when serve fails.
	registry.RootCmd.Execute() //nolint:errcheck
}
