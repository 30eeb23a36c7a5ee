//go:build !kubeboot_helpers

package helpers

// embedded is nil: built without the kubeboot_helpers tag, the binary
// carries no helpers (see ErrNotBuilt).
var embedded *bundle
