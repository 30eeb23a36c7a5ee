package node

import (
	"errors"
	"io"
	"os"
	"path"
	"slices"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/helpers"
	"github.com/kubeboot/kubeboot/internal/host/images"
)

// ImageOpener opens the files kubeboot's images are made of on the node
// under fs: a helper written under HelpersDir (verified there), or else,
// as helpers.ImageOnly always and on a node whose runtime is the
// operator's (no helpers written), from the binary. Only the node daemon
// opens them, and it is the kubeboot binary, with its helpers.
func ImageOpener(fs fsys.FS) images.Opener {
	return func(file string) (io.ReadCloser, int64, error) {
		if !slices.Contains(helpers.ImageOnly, file) {
			r, size, err := images.Files{file: fs.Path(path.Join(HelpersDir, file))}.Open(file)
			if !errors.Is(err, os.ErrNotExist) {
				return r, size, err
			}
		}
		return helpers.OpenSized(file)
	}
}
