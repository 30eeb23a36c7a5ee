package images

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Server serves kubeboot's images as a read-only registry (the OCI
// distribution API's pull side: manifests and blobs, GET and HEAD), built
// from the files they are made of at each request: nothing is stored. The
// node's containerd pulls kubeboot.local/... from it (its hosts.toml), so
// an image not imported yet, or deleted since, is pulled from the binary
// like any image from a registry, with the same digests as an import's.
type Server struct {
	// Logf, when set, tells each image a client pulls (resolves by its
	// tag: containerd's HEAD, another client's GET).
	Logf func(format string, args ...any)

	open   Opener
	images []Image
	// streams caps the layer streams at once: a layer of a file the
	// binary carries compressed costs its decompression.
	streams chan struct{}

	mu     sync.Mutex
	layers map[string]*layerOf // by File
}

// layerOf is the descriptor of one file's layer, hashed on first need:
// its own lock, so that hashing a large file holds up no other image.
type layerOf struct {
	mu   sync.Mutex
	desc *ocispec.Descriptor
}

// NewServer serves images, whose files open opens.
func NewServer(open Opener, images []Image) *Server {
	return &Server{open: open, images: images, streams: make(chan struct{}, 2), layers: map[string]*layerOf{}}
}

// layer is the descriptor of the layer of file: its digest takes one pass
// over the file, the first time, which ends with ctx.
func (s *Server) layer(ctx context.Context, file string) (ocispec.Descriptor, error) {
	s.mu.Lock()
	l, ok := s.layers[file]
	if !ok {
		l = &layerOf{}
		s.layers[file] = l
	}
	s.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.desc != nil {
		return *l.desc, nil
	}
	f, size, err := s.open(file)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer f.Close()
	c := &counter{h: sha256.New()}
	if err := writeLayerFrom(c, file, ctxReader{ctx, f}, size); err != nil {
		return ocispec.Descriptor{}, err
	}
	l.desc = &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.NewDigest(digest.SHA256, c.h), Size: c.n}
	return *l.desc, nil
}

// ctxReader stops reading once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// image is the image of the repository repo (kubeboot.local/<repo>).
func (s *Server) image(repo string) (Image, bool) {
	for _, img := range s.images {
		if r, _, _ := strings.Cut(strings.TrimPrefix(img.Name, Registry+"/"), ":"); r == repo {
			return img, true
		}
	}
	return Image{}, false
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "this registry is read-only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rest == "" {
		w.WriteHeader(http.StatusOK)
		return
	}
	kind, repo, ref := "", "", ""
	for _, k := range []string{"manifests", "blobs"} {
		if i := strings.LastIndex(rest, "/"+k+"/"); i > 0 {
			kind, repo, ref = k, rest[:i], rest[i+len(k)+2:]
			break
		}
	}
	img, ok := s.image(repo)
	if kind == "" || !ok {
		http.Error(w, "no such repository", http.StatusNotFound)
		return
	}
	layer, err := s.layer(r.Context(), img.File)
	if err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", img.Name, err), http.StatusInternalServerError)
		return
	}
	b, err := describe([]Image{img}, map[string]ocispec.Descriptor{img.File: layer})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	cfg, man := b.blobs[0], b.blobs[1]
	_, tag, _ := strings.Cut(strings.TrimPrefix(img.Name, Registry+"/"), ":")
	switch {
	case kind == "manifests" && (ref == tag || ref == man.desc.Digest.String()):
		if s.Logf != nil && ref == tag {
			s.Logf("serving %s to a pull (%s)", img.Name, r.UserAgent())
		}
		s.blob(w, r, man.desc, man.data)
	case kind == "blobs" && ref == cfg.desc.Digest.String():
		s.blob(w, r, cfg.desc, cfg.data)
	case kind == "blobs" && ref == man.desc.Digest.String():
		s.blob(w, r, man.desc, man.data)
	case kind == "blobs" && ref == layer.Digest.String():
		s.streamLayer(w, r, img.File, layer)
	default:
		http.Error(w, fmt.Sprintf("%s has no %s %q", repo, strings.TrimSuffix(kind, "s"), ref), http.StatusNotFound)
	}
}

func headers(w http.ResponseWriter, d ocispec.Descriptor) {
	w.Header().Set("Content-Type", d.MediaType)
	if d.MediaType == ocispec.MediaTypeImageLayer || d.MediaType == ocispec.MediaTypeImageConfig {
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.Header().Set("Content-Length", strconv.FormatInt(d.Size, 10))
	w.Header().Set("Docker-Content-Digest", d.Digest.String())
	w.Header().Set("Etag", `"`+d.Digest.String()+`"`)
}

// blob answers with data, whole: a Range is ignored, and a client that
// resumes (containerd does) skips what it has.
func (s *Server) blob(w http.ResponseWriter, r *http.Request, d ocispec.Descriptor, data []byte) {
	headers(w, d)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(data) //nolint:errcheck // the client went away
	}
}

// streamLayer writes the layer of file, made again from the file as it
// goes, whole (a Range is ignored).
func (s *Server) streamLayer(w http.ResponseWriter, r *http.Request, file string, d ocispec.Descriptor) {
	headers(w, d)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	case <-r.Context().Done():
		return
	}
	f, size, err := s.open(file)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 1<<20)
	if writeLayerFrom(bw, file, f, size) == nil {
		bw.Flush() //nolint:errcheck // the client went away
	}
}
