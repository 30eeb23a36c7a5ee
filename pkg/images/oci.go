package images

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"runtime"
	"time"
)

// Image is one image kubeboot builds from its own binary: the binary is
// the image's only file, at /kubeboot, and the entrypoint picks the
// program.
type Image struct {
	Name       string
	Entrypoint []string
}

// All lists the images every node carries.
func All() []Image {
	return []Image{
		{Name: Pause, Entrypoint: []string{"/kubeboot", "pause"}},
		{Name: CoreDNS, Entrypoint: []string{"/kubeboot", "coredns"}},
		{Name: TestServer, Entrypoint: []string{"/kubeboot", "test-server"}},
	}
}

const (
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// fixed timestamp: the same binary always yields the same image digests.
var epoch = time.Unix(0, 0).UTC()

// writeLayer writes the layer tar (the binary at /kubeboot) to w.
func writeLayer(w io.Writer, bin *os.File, size int64) error {
	if _, err := bin.Seek(0, io.SeekStart); err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	hdr := &tar.Header{Name: "kubeboot", Mode: 0o755, Size: size, ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, bin, size); err != nil {
		return err
	}
	return tw.Close()
}

type counter struct {
	h hash.Hash
	n int64
}

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return c.h.Write(p) }

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// WriteArchive writes an OCI image layout tarball holding every image of
// images, all sharing one layer made of the binary at binPath. containerd
// (`ctr images import`) and other OCI tools read it.
func WriteArchive(w io.Writer, binPath string, images []Image) error {
	bin, err := os.Open(binPath)
	if err != nil {
		return err
	}
	defer bin.Close()
	st, err := bin.Stat()
	if err != nil {
		return err
	}
	// First pass: the layer's digest, which the configs and manifests name.
	c := &counter{h: sha256.New()}
	if err := writeLayer(c, bin, st.Size()); err != nil {
		return err
	}
	layer := descriptor{MediaType: mediaLayer, Digest: "sha256:" + hex.EncodeToString(c.h.Sum(nil)), Size: c.n}

	tw := tar.NewWriter(w)
	file := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blob := func(data []byte) (string, error) {
		d := digestOf(data)
		return d, file("blobs/sha256/"+d[len("sha256:"):], data)
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	if err := file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	// The layer, streamed a second time.
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/sha256/" + layer.Digest[len("sha256:"):], Mode: 0o644, Size: layer.Size, ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if err := writeLayer(tw, bin, st.Size()); err != nil {
		return err
	}
	plat := &platform{Architecture: runtime.GOARCH, OS: "linux"}
	var index struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}
	index.SchemaVersion, index.MediaType = 2, mediaIndex
	for _, img := range images {
		cfg, err := json.Marshal(map[string]any{
			"architecture": plat.Architecture, "os": plat.OS, "created": epoch.Format(time.RFC3339),
			"config": map[string]any{"Entrypoint": img.Entrypoint, "Env": []string{"PATH=/"}, "WorkingDir": "/"},
			"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layer.Digest}},
		})
		if err != nil {
			return err
		}
		cfgDigest, err := blob(cfg)
		if err != nil {
			return err
		}
		man, err := json.Marshal(map[string]any{
			"schemaVersion": 2, "mediaType": mediaManifest,
			"config": descriptor{MediaType: mediaConfig, Digest: cfgDigest, Size: int64(len(cfg))},
			"layers": []descriptor{layer},
		})
		if err != nil {
			return err
		}
		manDigest, err := blob(man)
		if err != nil {
			return err
		}
		index.Manifests = append(index.Manifests, descriptor{
			MediaType: mediaManifest, Digest: manDigest, Size: int64(len(man)), Platform: plat,
			Annotations: map[string]string{
				"io.containerd.image.name":          img.Name,
				"org.opencontainers.image.ref.name": img.Name,
			},
		})
	}
	idx, err := json.Marshal(index)
	if err != nil {
		return err
	}
	if err := file("index.json", idx); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing the image archive: %w", err)
	}
	return nil
}
