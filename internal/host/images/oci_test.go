package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteArchive(t *testing.T) {
	dir := t.TempDir()
	content := map[string][]byte{
		CoreDNSFile:    []byte("#!/bin/true\nnot really CoreDNS\n"),
		PauseFile:      []byte("#!/bin/true\nnot really pause\n"),
		TestServerFile: []byte("#!/bin/true\nnot really the test server\n"),

		LocalPathProvisionerFile: []byte("#!/bin/true\nnot really the provisioner\n"),
		LocalPathHelperFile:      []byte("#!/bin/true\nnot really its helper\n"),
		MetricsServerFile:        []byte("#!/bin/true\nnot really metrics-server\n"),
	}
	src := Files{}
	for name, b := range content {
		src[name] = filepath.Join(dir, name)
		os.WriteFile(src[name], b, 0o755)
	}
	var buf bytes.Buffer
	if err := WriteArchive(&buf, src, All()); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
	// Every blob is stored under its own digest.
	for name, b := range files {
		if d, ok := strings.CutPrefix(name, "blobs/sha256/"); ok && d != "" {
			sum := sha256.Sum256(b)
			if hex.EncodeToString(sum[:]) != d {
				t.Errorf("blob %s has digest %x", d, sum)
			}
		}
	}
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != len(All()) {
		t.Fatalf("%d manifests, want %d", len(index.Manifests), len(All()))
	}
	layerDigests := map[string]bool{}
	for i, m := range index.Manifests {
		if m.Annotations["io.containerd.image.name"] != All()[i].Name {
			t.Errorf("manifest %d is named %q", i, m.Annotations["io.containerd.image.name"])
		}
		var man struct {
			Layers []struct{ Digest string }
			Config struct{ Digest string }
		}
		json.Unmarshal(files["blobs/sha256/"+strings.TrimPrefix(m.Digest, "sha256:")], &man)
		if len(man.Layers) != 1 {
			t.Fatalf("manifest %d has %d layers", i, len(man.Layers))
		}
		layerDigests[man.Layers[0].Digest] = true
		layer := files["blobs/sha256/"+strings.TrimPrefix(man.Layers[0].Digest, "sha256:")]
		lr := tar.NewReader(bytes.NewReader(layer))
		h, err := lr.Next()
		if err != nil || h.Name != All()[i].File || h.Mode != 0o755 {
			t.Fatalf("layer entry %+v %v", h, err)
		}
		if b, _ := io.ReadAll(lr); !bytes.Equal(b, content[All()[i].File]) {
			t.Errorf("the layer's only file is not %s", All()[i].File)
		}
		if _, err := lr.Next(); err != io.EOF {
			t.Errorf("layer of %s has more than one file", All()[i].Name)
		}
		var cfg struct{ Config struct{ Entrypoint []string } }
		json.Unmarshal(files["blobs/sha256/"+strings.TrimPrefix(man.Config.Digest, "sha256:")], &cfg)
		if strings.Join(cfg.Config.Entrypoint, " ") != strings.Join(All()[i].Entrypoint, " ") {
			t.Errorf("entrypoint %v, want %v", cfg.Config.Entrypoint, All()[i].Entrypoint)
		}
	}
	// One layer per file.
	if len(layerDigests) != len(content) {
		t.Errorf("%d distinct layers, want %d", len(layerDigests), len(content))
	}
	// The same binary always yields the same archive (fixed timestamps).
	var again bytes.Buffer
	WriteArchive(&again, src, All())
	var first bytes.Buffer
	WriteArchive(&first, src, All())
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Error("archives of the same binary differ")
	}
}
