package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// TestRegistryServer pulls every image from the registry with another
// implementation's client (go-containerregistry), which checks each
// blob's digest and size and each layer's diffID, and finds the digests
// an archive (and so an import) of the same files has.
func TestRegistryServer(t *testing.T) {
	dir := t.TempDir()
	src := Files{}
	for _, img := range All() {
		src[img.File] = filepath.Join(dir, img.File)
		os.WriteFile(src[img.File], []byte("#!/bin/true\nnot really "+img.File+"\n"+strings.Repeat("x", 70000)), 0o755)
	}
	var opened atomic.Int32
	srv := httptest.NewServer(NewServer(func(file string) (io.ReadCloser, int64, error) {
		opened.Add(1)
		return src.Open(file)
	}, All()))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	var archive bytes.Buffer
	if err := WriteArchive(&archive, src, All()); err != nil {
		t.Fatal(err)
	}
	var index struct{ Manifests []struct{ Digest string } }
	tr := tar.NewReader(&archive)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatal("no index.json in the archive")
		}
		if h.Name == "index.json" {
			json.NewDecoder(tr).Decode(&index)
			break
		}
	}
	for i, img := range All() {
		ref, err := name.ParseReference(strings.Replace(img.Name, Registry, host, 1), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		pulled, err := remote.Image(ref)
		if err != nil {
			t.Fatalf("%s: %v", img.Name, err)
		}
		// Fast: validate reads a layer's bytes as gzip's, and kubeboot's
		// are plain tar; they are read below, where remote checks their
		// digest and size.
		if err := validate.Image(pulled, validate.Fast); err != nil {
			t.Errorf("%s: %v", img.Name, err)
		}
		layers, err := pulled.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: %d layers, %v", img.Name, len(layers), err)
		}
		rc, err := layers[0].Compressed()
		if err != nil {
			t.Fatal(err)
		}
		lr := tar.NewReader(rc)
		if h, err := lr.Next(); err != nil || h.Name != img.File {
			t.Errorf("%s: layer entry %+v, %v", img.Name, h, err)
		}
		got, _ := io.ReadAll(lr)
		want, _ := os.ReadFile(src[img.File])
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the layer's file differs from %s", img.Name, img.File)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Errorf("%s: the layer's digest or size: %v", img.Name, err)
		}
		rc.Close()
		if diff, _ := layers[0].DiffID(); diff.String() != mustDigest(layers[0].Digest()) {
			t.Errorf("%s: diffID %s is not the layer's digest", img.Name, diff)
		}
		d, _ := pulled.Digest()
		if d.String() != index.Manifests[i].Digest {
			t.Errorf("%s: manifest %s, the archive's %s", img.Name, d, index.Manifests[i].Digest)
		}
		// By digest too.
		if _, err := remote.Image(ref.Context().Digest(d.String())); err != nil {
			t.Errorf("%s by digest: %v", img.Name, err)
		}
	}
	// Each file read twice: once for its layer's digest, once streamed;
	// the digest is kept.
	if n := opened.Load(); n != int32(2*len(All())) {
		t.Errorf("the images' files were opened %d times for %d images, want %d", n, len(All()), 2*len(All()))
	}

	do := func(method, path string, hdr ...string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	tag := strings.SplitN(CoreDNS, ":", 2)[1]
	head := do("HEAD", "/v2/coredns/manifests/"+tag)
	if head.StatusCode != 200 || head.Header.Get("Docker-Content-Digest") != index.Manifests[1].Digest || head.ContentLength <= 0 {
		t.Errorf("HEAD of a manifest: %d, digest %q, length %d", head.StatusCode, head.Header.Get("Docker-Content-Digest"), head.ContentLength)
	}
	// A resumed download (containerd's Range: bytes=N-) gets it whole.
	var man struct{ Layers []struct{ Digest string } }
	resp, _ := http.Get(srv.URL + "/v2/coredns/manifests/" + tag)
	json.NewDecoder(resp.Body).Decode(&man)
	resp.Body.Close()
	if r := do("GET", "/v2/coredns/blobs/"+man.Layers[0].Digest, "Range", "bytes=100-"); r.StatusCode != 200 {
		t.Errorf("a ranged layer GET: %d", r.StatusCode)
	}
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/v2/", 200},
		{"PUT", "/v2/coredns/manifests/" + tag, 405},
		{"DELETE", "/v2/coredns/blobs/" + man.Layers[0].Digest, 405},
		{"GET", "/v2/coredns/manifests/v0.0.0", 404},
		{"GET", "/v2/nginx/manifests/" + tag, 404},
		{"GET", "/v2/pause/blobs/" + man.Layers[0].Digest, 404}, // another image's layer
		{"GET", "/v2/_catalog", 404},
		{"GET", "/", 404},
	} {
		if r := do(c.method, c.path); r.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, r.StatusCode, c.want)
		}
	}
}

func mustDigest(h interface{ String() string }, err error) string {
	if err != nil {
		return err.Error()
	}
	return h.String()
}
