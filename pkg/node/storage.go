package node

import (
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/kubeboot/kubeboot/pkg/fsys"
)

// StorageDir is the host path of the directory that holds the storage
// add-on's volumes on the node named name, as the provisioner's pods and
// the kubelet see it: the same on every node of the cluster.
func StorageDir(name string) string { return path.Join(StorageRoot, name) }

// EnsureStorageDir makes the node's volume directory, StorageDir(name)
// under the root prefix. Under a root prefix other than /, the host path
// StorageDir(name) is made a link to it, so that a node's volumes are
// under its own root even where several nodes share a machine (reset
// removes the link with the rest: see StorageLink). It returns the
// directory.
func EnsureStorageDir(fs fsys.FS, name string) (string, error) {
	dir := fs.Path(StorageDir(name))
	if fs.DryRun() {
		return dir, nil
	}
	if err := fs.MkdirAll(StorageDir(name), 0o711); err != nil {
		return dir, err
	}
	link := StorageLink(fs, name)
	if link == "" {
		return dir, nil
	}
	switch target, err := os.Readlink(link); {
	case err == nil && target == dir:
		return dir, nil
	case err == nil:
		return dir, fmt.Errorf("%s links to %s: another node named %s on this machine keeps its volumes there; give this node another name", link, target, name)
	case !os.IsNotExist(err):
		if _, serr := os.Lstat(link); serr == nil {
			return dir, fmt.Errorf("%s is there and is not a link: the volumes of a node named %s with --root / are there; give this node another name", link, name)
		}
		return dir, err
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o711); err != nil {
		return dir, err
	}
	return dir, os.Symlink(dir, link)
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
