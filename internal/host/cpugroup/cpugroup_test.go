package cpugroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	if got := Name("/"); got != "kubeboot" {
		t.Errorf("Name(/) = %q", got)
	}
	a, b := Name("/tmp/a/root"), Name("/tmp/b/root")
	if a == b || !strings.HasPrefix(a, "kubeboot-") {
		t.Errorf("Name gives %q and %q for two roots", a, b)
	}
	if Name("/tmp/a/root/") != a {
		t.Errorf("Name depends on a trailing slash")
	}
}

func TestWeightConversion(t *testing.T) {
	for _, c := range []struct{ shares, weight int }{{2, 1}, {1024, 39}, {64, 3}, {262144, 10000}} {
		if got := WeightV2(c.shares); got != c.weight {
			t.Errorf("WeightV2(%d) = %d, want %d", c.shares, got, c.weight)
		}
	}
	for _, w := range []int{1, 3, 39, 100, 10000} {
		if got := WeightV2(SharesV1(w)); got != w {
			t.Errorf("WeightV2(SharesV1(%d)) = %d", w, got)
		}
	}
}

// TestGroupsV1 runs against a fake cgroup v1 tree: the files a kernel
// would have are plain files here.
func TestGroupsV1(t *testing.T) {
	old := Root
	Root = t.TempDir()
	defer func() { Root = old }()
	if err := os.Mkdir(filepath.Join(Root, "cpu"), 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := Open("/")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(Root, "cpu", "kubeboot", Node); g.Dir(Node) != want {
		t.Fatalf("Dir(node) = %s, want %s", g.Dir(Node), want)
	}
	if err := g.SetWeight(Node, Low); err != nil {
		t.Fatal(err)
	}
	if w, err := g.Weight(Node); err != nil || w != Low {
		t.Fatalf("Weight(node) = %d, %v", w, err)
	}
	if err := g.Add(ControlPlane, 1234); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(g.Dir(ControlPlane), "cgroup.procs")); string(b) != "1234" {
		t.Fatalf("cgroup.procs = %q", b)
	}
}

func TestParent(t *testing.T) {
	old := Root
	Root = t.TempDir()
	defer func() { Root = old }()
	for _, d := range []string{"cpu", "memory", "pids", "unified"} {
		if err := os.Mkdir(filepath.Join(Root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("cpu", filepath.Join(Root, "cpu,cpuacct")); err != nil {
		t.Fatal(err)
	}
	name, dirs := Parent("/tmp/a/root")
	if name != "/"+Name("/tmp/a/root") {
		t.Errorf("parent %q", name)
	}
	if len(dirs) != 4 {
		t.Fatalf("v1: %d dirs, want one per hierarchy (links skipped): %v", len(dirs), dirs)
	}
	for _, d := range dirs {
		if filepath.Base(d) != Name("/tmp/a/root") {
			t.Errorf("dir %s", d)
		}
	}
	if err := os.WriteFile(filepath.Join(Root, "cgroup.controllers"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, dirs := Parent("/"); len(dirs) != 1 || dirs[0] != filepath.Join(Root, "kubeboot") {
		t.Errorf("v2: %v", dirs)
	}
}

// TestEnableControllersV2: on a cgroup v2 machine without systemd, the
// kubelet's controllers that the kernel has are enabled in the root's and
// the node parent's subtree (the kubelet refused a root without hugetlb).
func TestEnableControllersV2(t *testing.T) {
	old := Root
	Root = t.TempDir()
	defer func() { Root = old }()
	if err := os.WriteFile(filepath.Join(Root, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids rdma misc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("/"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{Root, filepath.Join(Root, "kubeboot")} {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), "+cpu +cpuset +hugetlb +memory +pids"; got != want {
			t.Errorf("%s/cgroup.subtree_control = %q, want %q", d, got, want)
		}
	}
}

func TestSlice(t *testing.T) {
	if got := Slice("/"); got != "kubeboot.slice" {
		t.Errorf("Slice(/) = %q", got)
	}
	if got := Slice("/tmp/a"); !strings.HasPrefix(got, "kubeboot_") || !strings.HasSuffix(got, ".slice") || strings.Contains(got, "-") {
		t.Errorf("Slice(/tmp/a) = %q", got)
	}
}
