package node

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/remotes/docker"
	dockerconfig "github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/pelletier/go-toml/v2"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/images"
)

func TestParseMirrors(t *testing.T) {
	got, err := ParseMirrors([]string{
		"registry.k8s.io=http://10.0.0.5:5000/,https://mirror.example",
		"docker.io=https://hub.example",
		"registry.k8s.io=http://10.0.0.6:5000",
		"[fd00::5]:5000=http://[fd00::6]:5000",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Mirror{
		{"registry.k8s.io", []string{"http://10.0.0.5:5000", "https://mirror.example", "http://10.0.0.6:5000"}},
		{"docker.io", []string{"https://hub.example"}},
		{"[fd00::5]:5000", []string{"http://[fd00::6]:5000"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].Registry != want[i].Registry || strings.Join(got[i].Endpoints, " ") != strings.Join(want[i].Endpoints, " ") {
			t.Errorf("mirror %d: %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"registry.k8s.io", "=http://x", "registry.k8s.io=", "https://registry.k8s.io=http://x",
		"registry.k8s.io/path=http://x", "registry.k8s.io=10.0.0.5:5000", "registry.k8s.io=ftp://x", "reg:=http://x",
		"kubeboot.local=http://10.0.0.5:5000"} {
		if _, err := ParseMirrors([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The hosts.toml is one containerd reads: every mirror a host entry, in
// order, for pulls and resolution only.
func TestHostsTOML(t *testing.T) {
	m := Mirror{"registry.k8s.io", []string{"http://10.0.0.5:5000", "https://mirror.example"}}
	var doc struct {
		Server string
		Host   map[string]struct{ Capabilities []string }
	}
	text := HostsTOML(m)
	if err := toml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	if doc.Server != "" || len(doc.Host) != 2 || strings.Join(doc.Host["https://mirror.example"].Capabilities, ",") != "pull,resolve" {
		t.Errorf("parsed %+v from:\n%s", doc, text)
	}
	if strings.Index(text, "10.0.0.5") > strings.Index(text, "mirror.example") {
		t.Errorf("mirrors out of order:\n%s", text)
	}
}

// containerd's own reading of kubeboot.local's hosts.toml: the node's
// image-registry, in plain HTTP, is the one host it tries.
func TestImageRegistryHostsTOML(t *testing.T) {
	dir := t.TempDir()
	fs := fsys.NewRoot(dir)
	if err := WriteImageRegistry(fs); err != nil {
		t.Fatal(err)
	}
	hosts := dockerconfig.ConfigureHosts(context.Background(), dockerconfig.HostOptions{HostDir: dockerconfig.HostDirFromRoot(fs.Path(RegistryHostsDir))})
	got, err := hosts(images.Registry)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Scheme != "http" || got[0].Host != fmt.Sprintf("127.0.0.1:%d", ImageRegistryPort) || got[0].Path != "/v2" ||
		got[0].Capabilities != docker.HostCapabilityPull|docker.HostCapabilityResolve {
		t.Errorf("containerd reads %+v from:\n%s", got, ImageRegistryHostsTOML())
	}
}
