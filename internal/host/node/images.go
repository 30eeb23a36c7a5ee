package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/helpers"
	"github.com/kubeboot/kubeboot/internal/host/images"
)

// ImageOpener opens the files kubeboot's images are made of on the node
// under fs: a helper written under HelpersDir (verified there), or else,
// as helpers.ImageOnly always and on a node whose runtime is the
// operator's (no helpers written), from the binary. A process built
// without the helpers (a test binary) has the kubeboot executable exe,
// when set, extract the file.
func ImageOpener(fs fsys.FS, exe string) images.Opener {
	return func(file string) (io.ReadCloser, int64, error) {
		if !slices.Contains(helpers.ImageOnly, file) {
			r, size, err := images.Files{file: fs.Path(path.Join(HelpersDir, file))}.Open(file)
			if !errors.Is(err, os.ErrNotExist) {
				return r, size, err
			}
		}
		r, size, err := helpers.OpenSized(file)
		if !errors.Is(err, helpers.ErrNotBuilt) || exe == "" {
			return r, size, err
		}
		// The file goes with its directory once it is open.
		dir, err := os.MkdirTemp("", "kubeboot-image-file-")
		if err != nil {
			return nil, 0, err
		}
		defer os.RemoveAll(dir)
		if out, err := exec.Command(exe, "helpers", "extract", "--to", dir, file).CombinedOutput(); err != nil {
			return nil, 0, fmt.Errorf("%s helpers extract %s: %v: %s", exe, file, err, bytes.TrimSpace(out))
		}
		return images.Files{file: filepath.Join(dir, file)}.Open(file)
	}
}
