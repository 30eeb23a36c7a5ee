package kuberouter

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/internal/network/engine/enginetest"
)

// third_party/kube-router holds upstream's files unmodified: each one
// has the hash UPSTREAM.sha256 took from the release's tag, and no file
// is there that the manifest does not name.
func TestKubeRouterCopyIsUpstreams(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "third_party", "kube-router")
	f, err := os.Open(filepath.Join(dir, "UPSTREAM.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("UPSTREAM.sha256: bad line %q", sc.Text())
		}
		want[name] = sum
	}
	if len(want) == 0 {
		t.Fatal("UPSTREAM.sha256 names no file")
	}
	for name, sum := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		h := sha256.Sum256(b)
		if got := hex.EncodeToString(h[:]); got != sum {
			t.Errorf("%s differs from upstream's (sha256 %s, upstream %s): third_party/kube-router must stay upstream's code (hack/third-party/kube-router.sh)", name, got, sum)
		}
	}
	for _, top := range []string{"internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(dir, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			if _, ok := want[filepath.ToSlash(rel)]; !ok {
				t.Errorf("%s is not upstream's (not in UPSTREAM.sha256)", rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Only kube-router's firewall is linked: its routing (BGP) and service
// proxy, which kubeboot does not run, stay out of the binary (and out of
// third_party/kube-router).
func TestOnlyTheFirewallIsLinked(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of the helper's dependencies")
	}
	// The binary nodes run it from, with flannel.
	out, err := exec.Command("go", "list", "-deps", "../../../cmd/network-engines").Output()
	if err != nil {
		t.Fatal(err)
	}
	var firewall bool
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/cloudnativelabs/kube-router/v2/pkg/controllers/") {
			if p == "github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol" {
				firewall = true
				continue
			}
			t.Errorf("linked: %s", p)
		}
		if strings.Contains(p, "gobgp") {
			t.Errorf("linked: %s", p)
		}
	}
	if !firewall {
		t.Error("the network policy controller is not linked")
	}
}

// Main hands its run the flags it parsed (a run on a copy of the options
// made before the parse said "--kubeconfig and --node-name are required"
// on every node), and a SIGTERM ends it.
func TestMainRunsWithItsFlags(t *testing.T) {
	enginetest.ServesReadyz(t, Main, "--kubeconfig="+filepath.Join(t.TempDir(), "none.conf"), "--node-name=n1", "--pod-subnets=10.244.0.0/16")
}
