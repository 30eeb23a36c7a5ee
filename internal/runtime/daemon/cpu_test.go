package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/supervisor"
)

// fakeCgroups points package cpugroup at a cgroup v1 tree of plain files.
func fakeCgroups(t *testing.T) {
	t.Helper()
	old := cpugroup.Root
	cpugroup.Root = t.TempDir()
	t.Cleanup(func() { cpugroup.Root = old })
	if err := os.Mkdir(filepath.Join(cpugroup.Root, "cpu"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func weight(t *testing.T, b *bringUp, group string) int {
	t.Helper()
	w, err := b.groups.Weight(group)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestBringUpWaitsForTheAPIServer(t *testing.T) {
	fakeCgroups(t)
	var log []string
	b := newBringUp(fsys.NewRoot("/tmp/node-a"), func(f string, a ...any) { log = append(log, f) })
	if b.groups == nil {
		t.Fatalf("no groups: %v", log)
	}
	if w := weight(t, b, cpugroup.Node); w != cpugroup.Low {
		t.Fatalf("node side starts at %d, want %d", w, cpugroup.Low)
	}
	b.place(component.Spec{Name: component.APIServer}, 101)
	b.place(component.Spec{Name: component.Kubelet}, 102)
	for group, pid := range map[string]string{cpugroup.ControlPlane: "101", cpugroup.Node: "102"} {
		if got, _ := os.ReadFile(filepath.Join(b.groups.Dir(group), "cgroup.procs")); string(got) != pid {
			t.Errorf("%s holds %q, want %s", group, got, pid)
		}
	}
	b.specs([]component.Spec{{Name: component.Etcd}, {Name: component.APIServer}, {Name: component.Kubelet}})
	b.check([]supervisor.Status{{Name: component.APIServer, Ready: false}, {Name: component.Kubelet, Ready: true}})
	if w := weight(t, b, cpugroup.Node); w != cpugroup.Low {
		t.Fatalf("node side at %d before the API server is ready", w)
	}
	b.check([]supervisor.Status{{Name: component.APIServer, Ready: true}})
	if w := weight(t, b, cpugroup.Node); w != cpugroup.Normal {
		t.Fatalf("node side at %d once the API server is ready, want %d", w, cpugroup.Normal)
	}
	if !strings.Contains(strings.Join(log, "\n"), "full CPU weight") {
		t.Errorf("the end of the bring-up was not logged: %v", log)
	}
}

func TestBringUpOnAWorker(t *testing.T) {
	fakeCgroups(t)
	b := newBringUp(fsys.NewRoot("/tmp/node-b"), func(string, ...any) {})
	b.specs([]component.Spec{{Name: component.Containerd}, {Name: component.Kubelet}})
	if w := weight(t, b, cpugroup.Node); w != cpugroup.Normal {
		t.Fatalf("a worker's node side is at %d, want %d", w, cpugroup.Normal)
	}
}

func TestBringUpWithoutCgroups(t *testing.T) {
	old := cpugroup.Root
	cpugroup.Root = filepath.Join(t.TempDir(), "missing", "and-unwritable\x00")
	defer func() { cpugroup.Root = old }()
	var log []string
	b := newBringUp(fsys.NewRoot("/tmp/node-c"), func(f string, a ...any) { log = append(log, f) })
	b.place(component.Spec{Name: component.Kubelet}, 1)
	b.check([]supervisor.Status{{Name: component.APIServer, Ready: true}})
	if b.groups != nil || len(log) != 1 || !strings.Contains(log[0], "not used") {
		t.Fatalf("groups %v, log %v", b.groups, log)
	}
}

func TestComponentEnv(t *testing.T) {
	env := ComponentEnv([]string{"HOME=/root", "AWS_SECRET_ACCESS_KEY=x", "http_proxy=http://p", "GOGC=50", "KUBEBOOT_SETTLE_GOGC=off", "PATH=/home/me/bin", "GOMAXPROCS=2"})
	want := []string{"PATH=/home/me/bin", "GOGC=50", "KUBEBOOT_SETTLE_GOGC=off", "GOMAXPROCS=2"}
	if strings.Join(env, " ") != strings.Join(want, " ") {
		t.Errorf("component environment %v, want %v", env, want)
	}
	if env := ComponentEnv([]string{"HOME=/root"}); len(env) != 1 || env[0] != componentPath {
		t.Errorf("without a PATH: %v, want [%s]", env, componentPath)
	}
}
