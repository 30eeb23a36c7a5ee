package images

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/images/archive"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubeboot/kubeboot/internal/base/poll"
)

// Namespace is containerd's namespace for the images the kubelet uses.
const Namespace = "k8s.io"

// Snapshotter is the snapshotter kubeboot's containerd unpacks into.
const Snapshotter = "overlayfs"

// Connect opens containerd's API at socket, in the kubelet's namespace.
// kubeboot drives images through containerd's own Go client, in process:
// no ctr, no re-implemented archive handling.
func Connect(socket string) (*containerd.Client, error) {
	c, err := containerd.New(socket, containerd.WithDefaultNamespace(Namespace), containerd.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connecting to containerd at %s: %w", socket, err)
	}
	return c, nil
}

// Import loads an image archive (a docker-save tarball or an OCI layout
// tarball) into the node's containerd and unpacks its images for this
// platform, as `ctr images import` does. It returns the images' names.
func Import(ctx context.Context, socket string, r io.Reader) ([]string, error) {
	c, err := Connect(socket)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, done, err := c.WithLease(ctx)
	if err != nil {
		return nil, err
	}
	defer done(ctx) //nolint:errcheck
	imgs, err := c.Import(ctx, r,
		containerd.WithAllPlatforms(false),
		containerd.WithImportPlatform(platforms.DefaultStrict()),
		// An image the archive does not name is kept by its digest, as
		// ctr's import does.
		containerd.WithDigestRef(archive.DigestTranslator("import")),
		containerd.WithSkipDigestRef(func(name string) bool { return name != "" }),
	)
	if err != nil {
		return nil, err
	}
	if len(imgs) == 0 {
		return nil, errors.New("the archive holds no image for " + platforms.DefaultString())
	}
	names := make([]string, 0, len(imgs))
	for _, img := range imgs {
		image := containerd.NewImageWithPlatform(c, img, platforms.DefaultStrict())
		if err := image.Unpack(ctx, Snapshotter); err != nil {
			return nil, fmt.Errorf("unpacking %s: %w", img.Name, err)
		}
		names = append(names, img.Name)
	}
	return names, nil
}

// Export writes the named images, for this platform, as one archive in
// the OCI layout with docker's manifest.json beside it, so that both
// `docker load` and Import read it back.
func Export(ctx context.Context, socket string, w io.Writer, names []string) error {
	c, err := Connect(socket)
	if err != nil {
		return err
	}
	defer c.Close()
	is := c.ImageService()
	opts := []archive.ExportOpt{archive.WithPlatform(platforms.DefaultStrict())}
	for _, name := range names {
		if _, err := is.Get(ctx, name); err != nil {
			if errdefs.IsNotFound(err) {
				return fmt.Errorf("image %q is not in the node's containerd", name)
			}
			return err
		}
		opts = append(opts, archive.WithImage(is, name))
	}
	return c.Export(ctx, w, opts...)
}

// ImportBuilt builds kubeboot's images from files and writes them straight
// into containerd's content store, with no archive in between: each layer
// is streamed once and hashed once, by containerd as it takes it (an
// archive import hashes it first on the writing side to name it, then in
// containerd). Then it names the images and unpacks them. It returns how
// many layer bytes it streamed.
func ImportBuilt(ctx context.Context, socket string, open Opener, all []Image) (int64, error) {
	c, err := Connect(socket)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx, done, err := c.WithLease(ctx)
	if err != nil {
		return 0, err
	}
	// A run stopped midway (the daemon's) releases its lease all the same.
	defer done(context.WithoutCancel(ctx)) //nolint:errcheck
	cs := c.ContentStore()
	layers := map[string]ocispec.Descriptor{}
	var streamed int64
	for _, name := range filesOf(all) {
		d, err := writeLayerBlob(ctx, cs, name, open)
		if err != nil {
			return streamed, fmt.Errorf("image layer %s: %w", name, err)
		}
		layers[name] = d
		streamed += d.Size
	}
	b, err := describe(all, layers)
	if err != nil {
		return streamed, err
	}
	// A manifest's labels tell containerd's garbage collector which blobs
	// it holds, as an import or a pull sets them.
	gcLabels := map[string]map[string]string{}
	for i := 0; i < len(b.blobs); i += 2 {
		cfg, man := b.blobs[i], b.blobs[i+1]
		gcLabels[man.desc.Digest.String()] = map[string]string{
			"containerd.io/gc.ref.content.config": cfg.desc.Digest.String(),
			"containerd.io/gc.ref.content.l.0":    layers[all[i/2].File].Digest.String(),
		}
	}
	for _, bl := range b.blobs {
		if err := content.WriteBlob(ctx, cs, "kubeboot-"+bl.desc.Digest.String(), bytes.NewReader(bl.data), bl.desc,
			content.WithLabels(gcLabels[bl.desc.Digest.String()])); err != nil {
			return streamed, err
		}
	}
	is := c.ImageService()
	for i, img := range all {
		rec := images.Image{Name: img.Name, Target: b.manifests[i]}
		if _, err := is.Create(ctx, rec); errdefs.IsAlreadyExists(err) {
			_, err = is.Update(ctx, rec, "target")
			if err != nil {
				return streamed, err
			}
		} else if err != nil {
			return streamed, err
		}
		if err := containerd.NewImageWithPlatform(c, rec, platforms.DefaultStrict()).Unpack(ctx, Snapshotter); err != nil {
			return streamed, fmt.Errorf("unpacking %s: %w", img.Name, err)
		}
	}
	return streamed, nil
}

// writeLayerBlob streams the layer of the file name into the content
// store, and returns its descriptor, which containerd computed.
func writeLayerBlob(ctx context.Context, cs content.Store, name string, open Opener) (ocispec.Descriptor, error) {
	f, size, err := open(name)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer f.Close()
	w, err := content.OpenWriter(ctx, cs, content.WithRef("kubeboot-layer-"+name))
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer w.Close()
	// A previous, interrupted write of the same ref resumes here: start over.
	if err := w.Truncate(0); err != nil {
		return ocispec.Descriptor{}, err
	}
	// Whole megabytes per gRPC message, not the tar writer's 32 KiB.
	buf := bufio.NewWriterSize(w, 1<<20)
	n := &counter{}
	if err := writeLayerFrom(io.MultiWriter(buf, n), name, f, size); err != nil {
		return ocispec.Descriptor{}, err
	}
	if err := buf.Flush(); err != nil {
		return ocispec.Descriptor{}, err
	}
	dgst := w.Digest()
	if err := w.Commit(ctx, n.n, dgst); err != nil && !errdefs.IsAlreadyExists(err) {
		return ocispec.Descriptor{}, err
	}
	return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: dgst, Size: n.n}, nil
}

// Missing lists those of imgs the runtime at socket has no record of.
func Missing(ctx context.Context, socket string, imgs []Image) ([]Image, error) {
	c, err := Connect(socket)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return missing(ctx, c, imgs)
}

func missing(ctx context.Context, c *containerd.Client, imgs []Image) ([]Image, error) {
	var out []Image
	for _, img := range imgs {
		if _, err := c.ImageService().Get(ctx, img.Name); errdefs.IsNotFound(err) {
			out = append(out, img)
		} else if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// WaitPresent waits until the runtime at socket has every image of imgs,
// whoever brings them (an import, a pull).
func WaitPresent(ctx context.Context, socket string, imgs []Image) error {
	c, err := Connect(socket)
	if err != nil {
		return err
	}
	defer c.Close()
	err = poll.Until(ctx, 50*time.Millisecond, 0, nil, func(ctx context.Context) error {
		left, err := missing(ctx, c, imgs)
		if err == nil && len(left) > 0 {
			err = fmt.Errorf("%v not in the runtime yet", Names(left))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("waiting for kubeboot's images: %w (%w)", ctx.Err(), err)
	}
	return nil
}
