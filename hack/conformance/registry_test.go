package main

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestUpstreamName(t *testing.T) {
	for in, want := range map[string]string{
		"local.test/e2e/agnhost:2.66.1":                  "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
		"local.test/e2e/pause:3.10.2":                    "registry.k8s.io/pause:3.10.2",
		"local.test/e2e/nginx:1.27.0-2":                  "registry.k8s.io/e2e-test-images/nginx:1.27.0-2",
		"registry.k8s.io/e2e-test-images/agnhost:2.66.1": "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
	} {
		got, err := upstreamName(in)
		if err != nil || got != want {
			t.Errorf("upstreamName(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, err := upstreamName("local.test/e2e/agnhost:0.0-not-in-the-manifest"); err == nil {
		t.Errorf("an image the manifest lacks mapped to %q", got)
	}
}

func TestMirroredRegistries(t *testing.T) {
	list := filepath.Join(t.TempDir(), "list.txt")
	os.WriteFile(list, []byte("local.test/e2e/agnhost:2.66.1\nlocal.test/e2e/nginx:1.28.0-2\nlocal.test/e2e/busybox:1.37.0-2\n"), 0o644)
	got, err := mirroredRegistries(list)
	if want := []string{"registry.k8s.io"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("mirroredRegistries = %v, %v; want %v", got, err, want)
	}
}

func TestPullsFromTheAccessLog(t *testing.T) {
	dir := t.TempDir()
	r := &registry{log: filepath.Join(dir, "log")}
	os.WriteFile(r.log, []byte(`10.217.0.3 - - [01/Dec/2026:16:30:00 +0000] "HEAD /v2/e2e-test-images/agnhost/manifests/2.66.1?ns=registry.k8s.io HTTP/1.1" 200 0 "" "containerd/2.4.2"
10.217.0.3 - - [01/Dec/2026:16:30:00 +0000] "GET /v2/e2e-test-images/agnhost/manifests/sha256:0123?ns=registry.k8s.io HTTP/1.1" 200 500 "" "containerd/2.4.2"
10.217.0.4 - - [01/Dec/2026:16:30:01 +0000] "HEAD /v2/library/nginx/manifests/1.27.0-2?ns=docker.io HTTP/1.1" 200 0 "" "containerd/2.4.2"
10.217.0.2 - - [01/Dec/2026:16:29:00 +0000] "PUT /v2/library/nginx/manifests/1.27.0-2 HTTP/1.1" 201 0 "" "go-containerregistry"
`), 0o644)
	got, err := r.pulls()
	want := map[string]int{"registry.k8s.io/e2e-test-images/agnhost": 1, "docker.io/library/nginx": 1}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("pulls = %v, %v; want %v", got, err, want)
	}
}

func TestPushArchiveUnderUpstreamNames(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	local, _ := name.NewTag("local.test/e2e/pause:3.10.2")
	up, _ := name.NewTag("registry.k8s.io/pause:3.10.2")
	archive := filepath.Join(t.TempDir(), "pause.tar")
	if err := tarball.MultiRefWriteToFile(archive, map[name.Reference]v1.Image{local: img, up: img}); err != nil {
		t.Fatal(err)
	}
	if err := pushArchive(host, archive); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(host+"/pause:3.10.2", name.Insecure)
	got, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("the registry lacks %s: %v", ref, err)
	}
	if gd, _ := got.Digest(); gd != must(img.Digest()) {
		t.Errorf("pushed %s, registry serves %s", must(img.Digest()), gd)
	}
}

func must(h v1.Hash, err error) v1.Hash {
	if err != nil {
		panic(err)
	}
	return h
}
