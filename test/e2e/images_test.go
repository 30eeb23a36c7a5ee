package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/pkg/images"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// oneFileLayer is an uncompressed layer whose only file is an executable.
func oneFileLayer(name string, prog []byte) *bytes.Buffer {
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	lw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(prog)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)})
	lw.Write(prog)
	lw.Close()
	return &layer
}

// writeDockerSave writes, as `docker save` does, an archive of one image
// named ref whose only file is the program at bin, run as /app.
func writeDockerSave(t *testing.T, file, ref, bin string) {
	t.Helper()
	prog, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	layer := oneFileLayer("app", prog)
	sum := sha256.Sum256(layer.Bytes())
	diffID := "sha256:" + hex.EncodeToString(sum[:])
	cfg, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/app"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	cfgSum := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	layerName := hex.EncodeToString(sum[:]) + "/layer.tar"
	manifest, _ := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{ref}, "Layers": []string{layerName}}})
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, f := range []struct {
		name string
		data []byte
	}{{cfgName, cfg}, {layerName, layer.Bytes()}, {"manifest.json", manifest}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg})
		tw.Write(f.data)
	}
	tw.Close()
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runImage runs a pod of image (never pulled) and waits for it to run.
func runImage(t *testing.T, h *nethost.Host, name, image string) {
	t.Helper()
	kubectl(t, h, "run", name, "--image", image, "--image-pull-policy", "Never", "--restart", "Never")
	kubectl(t, h, "wait", "--for=condition=Ready", "pod/"+name, "--timeout=60s")
	kubectl(t, h, "delete", "pod", name, "--wait=false")
}

// testForeignImages: an operator's images, carried as archives, import
// into kubeboot's containerd (docker-save and OCI layout) and run as
// pods; what `images export` writes imports back.
func testForeignImages(t *testing.T, h *nethost.Host) {
	dir := t.TempDir()
	pause := filepath.Join(h.Root, "var/lib/kubeboot/helpers/current/pause")
	docker := filepath.Join(dir, "docker-save.tar")
	writeDockerSave(t, docker, "example.test/docker-save:v1", pause)
	oci := filepath.Join(dir, "oci.tar")
	f, _ := os.Create(oci)
	if err := images.WriteArchive(f, images.Files{"pause": pause}, []images.Image{{Name: "example.test/oci:v1", File: "pause", Entrypoint: []string{"/pause"}}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, archive := range []string{docker, oci} {
		start := time.Now()
		out := kb(t, h, "images", "import", archive)
		t.Logf("%s (%s)", strings.TrimSpace(out), time.Since(start).Round(time.Millisecond))
	}
	runImage(t, h, "from-docker-save", "example.test/docker-save:v1")
	runImage(t, h, "from-oci", "example.test/oci:v1")

	exported := filepath.Join(dir, "exported.tar")
	kb(t, h, "images", "export", "example.test/docker-save:v1", "example.test/oci:v1", "-o", exported)
	// Gone from containerd, then back from the exported archive.
	c, err := images.Connect(filepath.Join(h.Root, "run/kubeboot/containerd/containerd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, name := range []string{"example.test/docker-save:v1", "example.test/oci:v1"} {
		if err := c.ImageService().Delete(context.Background(), name); err != nil {
			t.Fatalf("deleting %s: %v", name, err)
		}
	}
	out := kb(t, h, "images", "import", exported)
	for _, name := range []string{"example.test/docker-save:v1", "example.test/oci:v1"} {
		if !strings.Contains(out, name) {
			t.Errorf("importing the exported archive: %s lacks %s", out, name)
		}
	}
	runImage(t, h, "from-export", "example.test/oci:v1")
	if _, err := nethost.Run(h.Kubeboot("images", "export", "example.test/missing:v1", "-o", filepath.Join(dir, "missing.tar"))); err == nil {
		t.Error("exporting an image containerd lacks succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.tar")); err == nil {
		t.Error("a failed export left its file")
	}
}
