package e2e

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kubeboot/kubeboot/test/nethost"
	"github.com/kubeboot/kubeboot/test/testimage"
)

// TestRegistryMirror: a node made with --registry-mirror pulls an image
// named registry.k8s.io/... from a registry on the test host (an OCI
// distribution registry served by the test), with pull policy Always,
// so manifests keep their upstream names on an air-gapped site.
func TestRegistryMirror(t *testing.T) {
	requireE2E(t)
	h := newHost(t, "kbmirror", "10.218.0.2")

	// The registry, inside the host, recording what containerd asks for.
	var mu sync.Mutex
	var asked []string
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var ln net.Listener
	if err := h.InNetns(func() error {
		var err error
		ln, err = net.Listen("tcp", "10.218.0.2:5000")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		reg.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	// kubeboot's pause, as the only file of an image, pushed under the
	// name it has upstream.
	kb(t, h, "init", "--node-name", "m", "--single-node", "--skip-phases", "addon/coredns,addon/storage,addon/metrics-server",
		"--registry-mirror", "registry.k8s.io=http://10.218.0.2:5000")
	// A skipped add-on is absent.
	if out := kubectl(t, h, "get", "storageclass,deployment,configmap", "-A", "-o", "name"); strings.Contains(out, "local-path") {
		t.Errorf("--skip-phases addon/storage left the storage add-on in:\n%s", out)
	}
	if out := kubectl(t, h, "get", "apiservice,deployment,service", "-A", "-o", "name"); strings.Contains(out, "metrics") {
		t.Errorf("--skip-phases addon/metrics-server left the metrics add-on in:\n%s", out)
	}
	// Without metrics-server, the kubelets keep kubeadm's default.
	if kcfg, _ := os.ReadFile(filepath.Join(h.Root, "var/lib/kubelet/config.yaml")); strings.Contains(string(kcfg), "serverTLSBootstrap: true") {
		t.Errorf("--skip-phases addon/metrics-server still turned serverTLSBootstrap on")
	}
	prog, err := os.ReadFile(filepath.Join(h.Root, "var/lib/kubeboot/helpers/current/pause"))
	if err != nil {
		t.Fatal(err)
	}
	layer := testimage.OneFileLayer("pause", prog)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = []string{"/pause"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	dst, err := name.NewTag("10.218.0.2:5000/e2e/mirrored:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(dst, img, remote.WithTransport(&http.Transport{DialContext: h.DialContext})); err != nil {
		t.Fatalf("push %s: %v", dst, err)
	}

	hosts, err := os.ReadFile(filepath.Join(h.Root, "etc/kubernetes/kubeboot/containerd/certs.d/registry.k8s.io/hosts.toml"))
	if err != nil || !strings.Contains(string(hosts), `[host."http://10.218.0.2:5000"]`) {
		t.Fatalf("hosts.toml: %v\n%s", err, hosts)
	}
	mu.Lock()
	asked = nil
	mu.Unlock()
	start := time.Now()
	kubectl(t, h, "run", "mirrored", "--image", "registry.k8s.io/e2e/mirrored:v1", "--image-pull-policy", "Always", "--restart", "Never")
	kubectl(t, h, "wait", "--for=condition=Ready", "pod/mirrored", "--timeout=90s")
	t.Logf("a pod of registry.k8s.io/e2e/mirrored:v1 pulled through the mirror and ready in %s", time.Since(start).Round(time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	manifest := false
	for _, a := range asked {
		if _, uri, _ := strings.Cut(a, " "); strings.HasPrefix(uri, "/v2/e2e/mirrored/manifests/v1") && strings.Contains(uri, "ns=registry.k8s.io") {
			manifest = true
		}
	}
	if !manifest {
		t.Errorf("the mirror was not asked for the manifest on behalf of registry.k8s.io: %v", asked)
	}
	kubectl(t, h, "delete", "pod", "mirrored", "--wait=false")

	// A mirror beside a runtime of the operator's is refused before
	// anything is written.
	other := newHost(t, "kbmirror2", "10.218.0.3")
	out, err := nethost.Run(other.Kubeboot("init", "--node-name", "m2", "--cri-socket", "unix:///run/other.sock", "--registry-mirror", "registry.k8s.io=http://10.218.0.3:5000"))
	if err == nil || !strings.Contains(out, "--registry-mirror configures the containerd kubeboot carries") {
		t.Errorf("a mirror with --cri-socket: %v\n%s", err, out)
	}
	if files := listAll(other.Root); len(files) != 0 {
		t.Errorf("the refusal wrote %v", files)
	}
}
