//go:build kubeboot_helpers

package helpers

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"
)

// The binary's own pack (make test runs this with the build tag): every
// helper decompresses to its manifest's digest and size, and the pack is
// mapped from the executable, so its readers release its pages.
func TestEmbeddedPack(t *testing.T) {
	m, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if !fileMapped(embedded.pack) || packReleaser() == nil {
		t.Fatal("the embedded pack is not a read-only file mapping: its pages would stay with every reader")
	}
	for _, e := range m.Helpers {
		r, size, err := OpenSized(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, r)
		r.Close()
		if err != nil || n != size || n != e.Size || hex.EncodeToString(h.Sum(nil)) != e.SHA256 {
			t.Errorf("%s: %d bytes (%v), sha256 %x; manifest %d bytes, %s", e.Name, n, err, h.Sum(nil), e.Size, e.SHA256)
		}
	}
}
