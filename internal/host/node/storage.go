package node

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

// StorageDir is the host path of the directory that holds the storage
// add-on's volumes on the node named name, as the provisioner's pods and
// the kubelet see it: the same on every node of the cluster.
func StorageDir(name string) string { return path.Join(StorageRoot, name) }

// EnsureStorageDir makes the node's volume directory, StorageDir(name)
// under the root prefix. Under a root prefix other than /, the host path
// StorageDir(name) is made a link to it, so that a node's volumes are
// under its own root even where several nodes share a machine (reset
// removes the link with the rest: see StorageLink).
//
// A link there already that points into another root is another node's
// of the same name, and refused, while that node lives: live(root) says
// whether a node runs for root. A link whose target is gone, or whose
// node runs no more (its process killed, reset never run), is stale and
// replaced; stale is then its old target, for the caller to say so. It
// returns the directory.
func EnsureStorageDir(fs fsys.FS, name string, live func(root string) bool) (dir, stale string, err error) {
	dir = fs.Path(StorageDir(name))
	if fs.DryRun() {
		return dir, "", nil
	}
	if err := fs.MkdirAll(StorageDir(name), 0o711); err != nil {
		return dir, "", err
	}
	link := StorageLink(fs, name)
	if link == "" {
		return dir, "", nil
	}
	stale, err = ensureLink(link, dir, StorageDir(name), name, live)
	return dir, stale, err
}

// ensureLink makes link a link to dir, the directory nodePath under the
// node's root, as EnsureStorageDir says.
func ensureLink(link, dir, nodePath, name string, live func(root string) bool) (stale string, err error) {
	switch target, err := os.Readlink(link); {
	case err == nil && target == dir:
		return "", nil
	case err == nil:
		root, ok := strings.CutSuffix(target, nodePath)
		if _, serr := os.Stat(target); serr == nil && (!ok || live(root)) {
			return "", fmt.Errorf("%s links to %s: another node named %s on this machine keeps its volumes there; give this node another name", link, target, name)
		}
		if err := os.Remove(link); err != nil {
			return "", err
		}
		stale = target
	case !os.IsNotExist(err):
		if _, serr := os.Lstat(link); serr == nil {
			return "", fmt.Errorf("%s is there and is not a link: the volumes of a node named %s with --root / are there; give this node another name", link, name)
		}
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o711); err != nil {
		return stale, err
	}
	return stale, os.Symlink(dir, link)
}

// StorageLink is the host path EnsureStorageDir links to the node's
// volume directory: "" with the root prefix /, where the directory is
// that path.
func StorageLink(fs fsys.FS, name string) string {
	if fs.Path("/") == "/" || name == "" {
		return ""
	}
	return StorageDir(name)
}
