//go:build kubeboot_helpers

package helpers

import _ "embed"

// Written by `go run ./hack/helpers` (make build).
var (
	//go:embed bin/manifest.json
	manifest []byte
	//go:embed bin/helpers.pack
	pack string
)

var embedded = &bundle{manifest: manifest, pack: pack, release: releaser(pack)}
