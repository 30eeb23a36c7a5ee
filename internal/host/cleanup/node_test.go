package cleanup

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveCgroups runs against a fake cgroup tree of empty directories
// (a real kernel's cgroup directories hold only files rmdir ignores): one
// v1 hierarchy with a nested group, and a v2-style group at the root.
func TestRemoveCgroups(t *testing.T) {
	old := CgroupRoot
	CgroupRoot = t.TempDir()
	defer func() { CgroupRoot = old }()
	for _, d := range []string{"cpu/kubeboot-1/control-plane", "cpu/kubeboot-1/node", "pids/other", "kubeboot-1/node"} {
		if err := os.MkdirAll(filepath.Join(CgroupRoot, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if n := RemoveCgroups("kubeboot-1", io.Discard); n != 5 {
		t.Fatalf("removed %d cgroups, want 5", n)
	}
	for _, gone := range []string{"cpu/kubeboot-1", "kubeboot-1"} {
		if _, err := os.Stat(filepath.Join(CgroupRoot, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", gone, err)
		}
	}
	if _, err := os.Stat(filepath.Join(CgroupRoot, "pids/other")); err != nil {
		t.Errorf("another cgroup was removed: %v", err)
	}
	if n := RemoveCgroups("kubeboot-1", io.Discard); n != 0 {
		t.Fatalf("a second call removed %d cgroups", n)
	}
}
