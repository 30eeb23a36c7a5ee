//go:build kubeboot_helpers

package helpers

import (
	_ "embed"
	"sync"
)

// Written by `go run ./hack/helpers` (make build).
var (
	//go:embed bin/manifest.json
	manifest []byte
	//go:embed bin/helpers.pack
	pack string
)

// The pack's pages are released only once it is known to be mapped from
// the executable (looked up at the first release, not in every process's
// start).
var (
	packReleaser = sync.OnceValue(func() func(string) { return releaser(pack) })
	embedded     = &bundle{manifest: manifest, pack: pack, release: func(part string) {
		if r := packReleaser(); r != nil {
			r(part)
		}
	}}
)
