package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/test/nethost"
	"github.com/kubeboot/kubeboot/test/testimage"
)

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
	if err := testimage.WriteDockerSave(docker, "example.test/docker-save:v1", pause); err != nil {
		t.Fatal(err)
	}
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
