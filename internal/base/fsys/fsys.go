// Package fsys owns every file kubeboot reads or writes on a node: paths
// are node paths ("/etc/kubernetes/pki/ca.crt") resolved under one root
// prefix, writes are atomic (a reader never sees half a file), and a dry-run
// FS reports what it would write instead of writing it.
package fsys

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FS is the filesystem of one node as kubeboot sees it.
type FS interface {
	// Path maps a node path to the host path under the root prefix.
	Path(nodePath string) string
	ReadFile(nodePath string) ([]byte, error)
	// WriteFile writes atomically, creating missing parent directories
	// with mode 0755.
	WriteFile(nodePath string, data []byte, perm fs.FileMode) error
	// MkdirAll creates a directory; an existing one gets perm applied.
	MkdirAll(nodePath string, perm fs.FileMode) error
	// DryRun reports whether writes are only described.
	DryRun() bool
}

// Root is the real filesystem under a root prefix ("/" for the host itself).
type Root struct{ Dir string }

// NewRoot returns the filesystem under dir; an empty dir means "/".
func NewRoot(dir string) Root {
	if dir == "" {
		dir = "/"
	}
	return Root{Dir: filepath.Clean(dir)}
}

func (r Root) Path(nodePath string) string { return filepath.Join(r.Dir, nodePath) }

func (r Root) ReadFile(nodePath string) ([]byte, error) { return os.ReadFile(r.Path(nodePath)) }

func (r Root) DryRun() bool { return false }

func (r Root) MkdirAll(nodePath string, perm fs.FileMode) error {
	p := r.Path(nodePath)
	if err := os.MkdirAll(p, perm); err != nil {
		return err
	}
	return os.Chmod(p, perm)
}

func (r Root) WriteFile(nodePath string, data []byte, perm fs.FileMode) error {
	return WriteFileAtomic(r.Path(nodePath), data, perm)
}

// Symlink makes link a symbolic link to target, replacing whatever link
// was, atomically (a new link renamed over it), and creates link's
// directory. It reports whether it changed anything: a link that already
// points at target is left alone.
func Symlink(target, link string) (bool, error) {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return false, err
	}
	tmp := link + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return false, fmt.Errorf("linking %s: %w", link, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return false, err
	}
	return true, nil
}

// WriteFileAtomic writes data to a temporary file beside path, syncs it and
// renames it into place, so that path holds either the old or the new
// content and never a part of it.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	return nil
}

// DryRun reads from the real root but only describes writes on Out, and
// remembers what it would have written so that later reads in the same
// run see it (a dry-run of "certs" then "kubeconfig" signs with the CA the
// first phase would have made).
type DryRun struct {
	Root
	Out     io.Writer
	written map[string][]byte
}

// NewDryRun returns a dry-run filesystem over root.
func NewDryRun(root Root, out io.Writer) *DryRun {
	return &DryRun{Root: root, Out: out, written: map[string][]byte{}}
}

func (d *DryRun) DryRun() bool { return true }

func (d *DryRun) ReadFile(nodePath string) ([]byte, error) {
	if b, ok := d.written[nodePath]; ok {
		return b, nil
	}
	return d.Root.ReadFile(nodePath)
}

func (d *DryRun) WriteFile(nodePath string, data []byte, perm fs.FileMode) error {
	d.written[nodePath] = data
	fmt.Fprintf(d.Out, "[dryrun] Would write file %q (mode %04o, %d bytes)\n", d.Path(nodePath), perm, len(data))
	return nil
}

func (d *DryRun) MkdirAll(nodePath string, perm fs.FileMode) error {
	fmt.Fprintf(d.Out, "[dryrun] Would create directory %q (mode %04o)\n", d.Path(nodePath), perm)
	return nil
}

// Exists reports whether a node path exists; errors other than "does not
// exist" count as existing, so callers go on to read it and report the
// real error.
func Exists(f FS, nodePath string) bool {
	if d, ok := f.(*DryRun); ok {
		if _, ok := d.written[nodePath]; ok {
			return true
		}
	}
	_, err := os.Stat(f.Path(nodePath))
	return !errors.Is(err, fs.ErrNotExist)
}

// Tag names a node among the nodes of one machine, for what cannot sit
// under its root prefix: its cgroups, its CNI network. A node whose root
// prefix is "/" is "kubeboot"; a node under another prefix (several on one
// machine, in tests) is "kubeboot-" and 8 hex digits of the prefix's hash.
func Tag(rootPrefix string) string {
	rootPrefix = filepath.Clean(rootPrefix)
	if rootPrefix == "/" {
		return "kubeboot"
	}
	sum := sha256.Sum256([]byte(rootPrefix))
	return "kubeboot-" + hex.EncodeToString(sum[:4])
}

// FileSHA256 is the hex sha256 of a file's content, read as a stream.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
