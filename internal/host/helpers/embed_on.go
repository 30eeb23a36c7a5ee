//go:build kubeboot_helpers

package helpers

import (
	"embed"
	"io/fs"
)

// bin is written by `go run ./hack/helpers` (make build).
//
//go:embed bin
var bin embed.FS

var embedded = func() fs.FS {
	sub, err := fs.Sub(bin, "bin")
	if err != nil {
		panic(err)
	}
	return sub
}()
