package images

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"runtime"
	"sort"
	"time"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Image is one image kubeboot builds from a file it carries: the image's
// only file is File, at /<File>, and the entrypoint runs it.
type Image struct {
	Name string
	// File is the image's one file, a helper's name.
	File       string
	Entrypoint []string
}

// The Files of the images: small helpers of their own (package helpers).
const (
	PauseFile      = "pause"
	CoreDNSFile    = "coredns"
	TestServerFile = "test-server"

	LocalPathProvisionerFile = "local-path-provisioner"
	LocalPathHelperFile      = "local-path-helper"
	MetricsServerFile        = "metrics-server"
)

// All lists the images every node carries: Node's, then AddOns'.
func All() []Image { return append(Node(), AddOns()...) }

// Sandbox is pause's image, every pod's sandbox: what a node needs
// before its first pod.
func Sandbox() Image { return Image{Name: Pause, File: PauseFile, Entrypoint: []string{"/pause"}} }

// Node lists the images on the path to a node's first pods and CoreDNS,
// Sandbox first.
func Node() []Image {
	return []Image{
		Sandbox(),
		{Name: CoreDNS, File: CoreDNSFile, Entrypoint: []string{"/coredns"}},
		{Name: TestServer, File: TestServerFile, Entrypoint: []string{"/test-server"}},
	}
}

// AddOns lists the images of the add-ons beyond CoreDNS, which a node
// imports after Node's, off the path to CoreDNS.
func AddOns() []Image {
	return []Image{
		{Name: LocalPathProvisioner, File: LocalPathProvisionerFile, Entrypoint: []string{"/local-path-provisioner"}},
		{Name: LocalPathHelper, File: LocalPathHelperFile, Entrypoint: []string{"/local-path-helper"}},
		{Name: MetricsServer, File: MetricsServerFile, Entrypoint: []string{"/metrics-server"}},
	}
}

// Names lists the names of images, in order.
func Names(imgs []Image) []string {
	var names []string
	for _, img := range imgs {
		names = append(names, img.Name)
	}
	return names
}

// FilesOf lists the distinct Files of images, sorted.
func FilesOf(images []Image) []string { return filesOf(images) }

// Files maps each File of the images to the host file it is made of.
type Files map[string]string

// fixed timestamp: the same files always yield the same image digests.
var epoch = time.Unix(0, 0).UTC()

// writeLayer writes the layer tar (the file at /<name>) to w.
func writeLayer(w io.Writer, name string, bin *os.File) error {
	st, err := bin.Stat()
	if err != nil {
		return err
	}
	if _, err := bin.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return writeLayerFrom(w, name, bin, st.Size())
}

// writeLayerFrom writes the layer tar of the file at /<name>, size bytes
// read from r, to w.
func writeLayerFrom(w io.Writer, name string, r io.Reader, size int64) error {
	tw := tar.NewWriter(w)
	hdr := &tar.Header{Name: name, Mode: 0o755, Size: size, ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, r, size); err != nil {
		return err
	}
	return tw.Close()
}

// Opener opens the file of an image (a helper's name) and tells its size.
type Opener func(file string) (io.ReadCloser, int64, error)

// Open opens the files of files.
func (files Files) Open(file string) (io.ReadCloser, int64, error) {
	p, ok := files[file]
	if !ok {
		return nil, 0, fmt.Errorf("no file for %s", file)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// counter counts what is written through it, and hashes it when h is set.
type counter struct {
	h hash.Hash
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	if c.h == nil {
		return len(p), nil
	}
	return c.h.Write(p)
}

// blob is a config or manifest of a built image.
type blob struct {
	desc ocispec.Descriptor
	data []byte
}

// built is what the images are made of, once their layers are known.
type built struct {
	blobs []blob // configs and manifests
	// manifests are the images' manifests, in the order of the images,
	// named by their annotations.
	manifests []ocispec.Descriptor
}

// describe makes the images' configs and manifests, given the descriptor
// of each File's layer.
func describe(images []Image, layers map[string]ocispec.Descriptor) (built, error) {
	var b built
	plat := ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"}
	for _, img := range images {
		layer, ok := layers[img.File]
		if !ok {
			return b, fmt.Errorf("no file for image %s (%s)", img.Name, img.File)
		}
		cfg, err := json.Marshal(ocispec.Image{
			Created: &epoch, Platform: plat,
			Config: ocispec.ImageConfig{Entrypoint: img.Entrypoint, Env: []string{"PATH=/"}, WorkingDir: "/"},
			RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layer.Digest}},
		})
		if err != nil {
			return b, err
		}
		cfgDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))}
		man, err := json.Marshal(ocispec.Manifest{
			Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
			Config: cfgDesc, Layers: []ocispec.Descriptor{layer},
		})
		if err != nil {
			return b, err
		}
		manDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(man), Size: int64(len(man))}
		b.blobs = append(b.blobs, blob{cfgDesc, cfg}, blob{manDesc, man})
		manDesc.Platform = &plat
		manDesc.Annotations = map[string]string{
			ctrimages.AnnotationImageName: img.Name,
			ocispec.AnnotationRefName:     img.Name,
		}
		b.manifests = append(b.manifests, manDesc)
	}
	return b, nil
}

// filesOf lists the distinct Files of images, sorted.
func filesOf(images []Image) []string {
	seen := map[string]bool{}
	var out []string
	for _, img := range images {
		if !seen[img.File] {
			seen[img.File] = true
			out = append(out, img.File)
		}
	}
	sort.Strings(out)
	return out
}

// WriteArchive writes an OCI image layout tarball holding every image of
// images; images made of the same File share its layer. containerd and
// other OCI tools read it.
func WriteArchive(w io.Writer, files Files, images []Image) error {
	open := map[string]*os.File{}
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	// First pass: each layer's digest, which the configs and manifests name.
	layers := map[string]ocispec.Descriptor{}
	for _, name := range filesOf(images) {
		f, err := os.Open(files[name])
		if err != nil {
			return fmt.Errorf("image file %s: %w", name, err)
		}
		open[name] = f
		c := &counter{h: sha256.New()}
		if err := writeLayer(c, name, f); err != nil {
			return err
		}
		layers[name] = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.NewDigest(digest.SHA256, c.h), Size: c.n}
	}
	b, err := describe(images, layers)
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	file := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blobPath := func(d digest.Digest) string { return "blobs/" + d.Algorithm().String() + "/" + d.Encoded() }
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return err
	}
	if err := file(ocispec.ImageLayoutFile, layout); err != nil {
		return err
	}
	// The layers, streamed a second time.
	for _, name := range filesOf(images) {
		l := layers[name]
		if err := tw.WriteHeader(&tar.Header{Name: blobPath(l.Digest), Mode: 0o644, Size: l.Size, ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if err := writeLayer(tw, name, open[name]); err != nil {
			return err
		}
	}
	for _, bl := range b.blobs {
		if err := file(blobPath(bl.desc.Digest), bl.data); err != nil {
			return err
		}
	}
	idx, err := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: b.manifests})
	if err != nil {
		return err
	}
	if err := file(ocispec.ImageIndexFile, idx); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing the image archive: %w", err)
	}
	return nil
}
