// Package helpers carries the programs a node runs once per pod — the runc
// shim (containerd-shim-runc-v2), the pod sandbox's pause and the CNI
// plugins — as small static binaries built from their upstream main
// packages (`go run ./hack/helpers`, which `make build` runs) and embedded
// in kubeboot, zstd-compressed. They import nothing of Kubernetes: a shim
// or a plugin exec costs a few milliseconds, where an exec of the whole
// kubeboot binary costs ~20 ms and a pause process built from it holds
// ~6 MB.
//
// Install writes them under the root prefix into a directory named by the
// digest of the whole set, with the links its manifest names (two
// programs of one binary, each run by its own name), the way k3s and k0s
// unpack their bundled binaries, and points a `current` link at it; every
// start of the node daemon verifies them by hash again and rewrites any
// that differ.
//
// A binary built without them (a plain `go build`, `go test`) compiles
// and runs everything but a node: Load returns ErrNotBuilt.
package helpers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

// Names of the helpers.
const (
	Shim       = "containerd-shim-runc-v2"
	Pause      = "pause"
	TestServer = "test-server"
	CoreDNS    = "coredns"
	// The storage add-on's: rancher's provisioner, built from its module,
	// and the setup/teardown command of its helper pods.
	LocalPathProvisioner = "local-path-provisioner"
	LocalPathHelper      = "local-path-helper"
	// The metrics add-on's: sigs.k8s.io/metrics-server, built from its
	// module.
	MetricsServer = "metrics-server"
	// The pod network's engines, run by the node daemon on every node:
	// flannel (the overlay, each node's lease, the CNI configuration) and
	// kube-router's network policy controller. Both are one binary,
	// NetworkEngines, which runs the one it is named as (Links).
	Flannel        = "flannel"
	KubeRouter     = "kube-router"
	NetworkEngines = "network-engines"
)

// Links are the names that Install makes links to another helper, each a
// program of that binary that runs as its name: the processes of one
// file share the pages of the code they have in common (docs/design.md
// §11g), and ps still names each. hack/helpers writes them into the
// manifest.
func Links() map[string]string {
	return map[string]string{Flannel: NetworkEngines, KubeRouter: NetworkEngines}
}

// ImageOnly are the helpers that only images are made of and that no
// node needs on disk before its first pods: Install leaves them in the
// binary, and a node's image import streams them from it (OpenSized),
// off the path to its containerd and CoreDNS.
var ImageOnly = []string{LocalPathProvisioner, LocalPathHelper, MetricsServer}

// CNIPlugins are the CNI plugins containerd execs for every pod.
var CNIPlugins = []string{"bridge", "host-local", "portmap"}

// The embedded files: the list of the helpers and their digests, and the
// pack of their compressed bytes, one after the other.
const (
	ManifestFile = "manifest.json"
	PackFile     = "helpers.pack"
)

// Entry is one helper: its file name, the sha256 and size of the
// uncompressed binary, and where its compressed bytes are in the pack.
type Entry struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Package is the Go package it was built from.
	Package    string `json:"package"`
	Offset     int64  `json:"offset"`
	Compressed int64  `json:"compressed"`
}

// bundle is what a binary carries.
type bundle struct {
	manifest []byte
	pack     string
	// release, when set, hands the pages of a part of pack back to the
	// kernel once it has been read: the embedded pack is mapped from the
	// executable, and pages a process has read count as its memory until
	// the kernel needs them (the node daemon reads ~32 MiB of it for the
	// add-ons' images). Decoding runs in the reader's goroutine
	// (WithDecoderConcurrency(1)), so nothing reads the part after Close.
	release func(part string)
}

// Manifest lists the helpers a kubeboot binary carries.
type Manifest struct {
	Helpers []Entry `json:"helpers"`
	// Links are names installed as links to a helper (Links at the build).
	Links map[string]string `json:"links,omitempty"`
}

// ErrNotBuilt says the binary carries no helpers.
var ErrNotBuilt = errors.New("this kubeboot binary was built without its helpers (the runc shim, pause and the CNI plugins): build it with `make build`")

// Digest names the set: the sha256 of every helper's name and digest and
// of every link's name and target.
func (m *Manifest) Digest() string {
	lines := make([]string, 0, len(m.Helpers))
	for _, e := range m.Helpers {
		lines = append(lines, e.Name+" "+e.SHA256+"\n")
	}
	for name, target := range m.Links {
		lines = append(lines, name+" -> "+target+"\n")
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "")))
	return hex.EncodeToString(sum[:])
}

// Get returns the named helper's entry.
func (m *Manifest) Get(name string) (Entry, bool) {
	for _, e := range m.Helpers {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Load reads the manifest of the helpers this binary carries: parsed and
// checked once, as the image registry opens a helper per request. The
// manifest is shared: callers read it and do not change it.
func Load() (*Manifest, error) { return loadEmbedded() }

var loadEmbedded = sync.OnceValues(func() (*Manifest, error) { return load(embedded) })

func load(b *bundle) (*Manifest, error) {
	if b == nil || len(b.manifest) == 0 {
		return nil, ErrNotBuilt
	}
	m := &Manifest{}
	if err := json.Unmarshal(b.manifest, m); err != nil {
		return nil, fmt.Errorf("the helpers' manifest: %w", err)
	}
	if len(m.Helpers) == 0 {
		return nil, ErrNotBuilt
	}
	for _, e := range m.Helpers {
		if e.Offset < 0 || e.Compressed <= 0 || e.Compressed > int64(len(b.pack))-e.Offset {
			return nil, fmt.Errorf("the helpers' manifest places %s at bytes %d+%d of a %d-byte pack", e.Name, e.Offset, e.Compressed, len(b.pack))
		}
	}
	for name, target := range m.Links {
		if err := m.checkLink(name, target); err != nil {
			return nil, fmt.Errorf("the helpers' manifest links %q to %q: %w", name, target, err)
		}
	}
	return m, nil
}

// checkLink refuses a link Install could not make beside the helpers.
func (m *Manifest) checkLink(name, target string) error {
	switch {
	case name == "" || name == "." || name == ".." || name == Current || strings.ContainsRune(name, '/'):
		return errors.New("not a file name of the helpers' directory")
	case slices.ContainsFunc(m.Helpers, func(e Entry) bool { return e.Name == name }):
		return errors.New("a helper has that name")
	case slices.Contains(ImageOnly, target):
		return errors.New("that helper is left in the binary, for images only")
	}
	if _, ok := m.Get(target); !ok {
		return errors.New("the binary carries no such helper")
	}
	return nil
}

// Open returns the named helper's uncompressed bytes.
func Open(name string) (io.ReadCloser, error) {
	r, _, err := OpenSized(name)
	return r, err
}

// OpenSized returns the named helper's uncompressed bytes and their size.
func OpenSized(name string) (io.ReadCloser, int64, error) {
	m, err := Load()
	if err != nil {
		return nil, 0, err
	}
	e, ok := m.Get(name)
	if !ok {
		return nil, 0, fmt.Errorf("no helper named %q", name)
	}
	r, err := open(embedded, e)
	return r, e.Size, err
}

// open decompresses e's part of the pack; closing the reader releases
// the pages it read.
func open(b *bundle, e Entry) (io.ReadCloser, error) {
	part := b.pack[e.Offset : e.Offset+e.Compressed]
	d, err := zstd.NewReader(strings.NewReader(part), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	return readCloser{d.IOReadCloser(), func() {
		if b.release != nil {
			b.release(part)
		}
	}}, nil
}

type readCloser struct {
	io.ReadCloser
	release func()
}

func (r readCloser) Close() error {
	err := r.ReadCloser.Close()
	r.release()
	return err
}

// Current is the link, in the helpers' directory, to the directory of
// the running binary's helpers.
const Current = "current"

// Result says what Install did.
type Result struct {
	Dir        string   // the content-addressed directory
	Written    []string // helpers written (missing or not matching)
	Linked     []string // links made or pointed again at their helper
	Verified   int      // helpers already in place whose hash matched
	Removed    []string // directories of other helper sets removed
	Relinked   bool     // whether `current` was pointed at Dir
	Mismatched []string // helpers found with another hash (and rewritten)
}

// Install makes dir/<digest>/ hold every helper of this binary, each
// verified by its sha256, and the manifest's links beside them, points
// dir/current at it and removes the directories of other sets. logf is
// told of every helper it rewrites and every link it mends.
func Install(dir string, logf func(format string, args ...any)) (Result, error) {
	return install(embedded, dir, logf)
}

func install(files *bundle, dir string, logf func(format string, args ...any)) (Result, error) {
	m, err := load(files)
	if err != nil {
		return Result{}, err
	}
	digest := m.Digest()[:16]
	res := Result{Dir: filepath.Join(dir, digest)}
	_, err = os.Stat(res.Dir)
	existed := err == nil // links missing from it were removed: say so
	if err := os.MkdirAll(res.Dir, 0o755); err != nil {
		return res, err
	}
	for _, e := range m.Helpers {
		if slices.Contains(ImageOnly, e.Name) {
			continue
		}
		p := filepath.Join(res.Dir, e.Name)
		got, err := fsys.FileSHA256(p)
		switch {
		case err == nil && got == e.SHA256:
			res.Verified++
			continue
		case err == nil:
			logf("[helpers] %s has sha256 %s, not the %s this kubeboot carries: rewriting it", p, got, e.SHA256)
			res.Mismatched = append(res.Mismatched, e.Name)
		case !errors.Is(err, fs.ErrNotExist):
			return res, err
		}
		if err := write(files, e, p); err != nil {
			return res, fmt.Errorf("writing helper %s: %w", e.Name, err)
		}
		res.Written = append(res.Written, e.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Links)) {
		linked, err := fsys.Symlink(m.Links[name], filepath.Join(res.Dir, name))
		if err != nil {
			return res, err
		}
		if linked {
			if existed {
				logf("[helpers] %s did not link to %s: linking it again", filepath.Join(res.Dir, name), m.Links[name])
			}
			res.Linked = append(res.Linked, name)
		}
	}
	if res.Relinked, err = fsys.Symlink(digest, filepath.Join(dir, Current)); err != nil {
		return res, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return res, err
	}
	for _, d := range entries {
		if d.IsDir() && d.Name() != digest {
			if err := os.RemoveAll(filepath.Join(dir, d.Name())); err != nil {
				return res, err
			}
			res.Removed = append(res.Removed, d.Name())
		}
	}
	return res, nil
}

// write writes one helper to p through a temporary file, checking its
// hash before it takes the name.
func write(files *bundle, e Entry, p string) error {
	r, err := open(files, e)
	if err != nil {
		return err
	}
	defer r.Close()
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && (hex.EncodeToString(h.Sum(nil)) != e.SHA256 || n != e.Size) {
		err = fmt.Errorf("the embedded copy does not match its manifest (%d bytes, sha256 %x)", n, h.Sum(nil))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, p)
}

// Extract writes the named helper into dir and returns its path.
func Extract(name, dir string) (string, error) {
	m, err := Load()
	if err != nil {
		return "", err
	}
	e, ok := m.Get(name)
	if !ok {
		return "", fmt.Errorf("no helper named %q", name)
	}
	p := filepath.Join(dir, name)
	return p, write(embedded, e, p)
}

// Compress zstd-compresses a helper for embedding.
func Compress(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
