package node

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/host"
	"github.com/kubeboot/kubeboot/internal/host/images"
)

// The configuration is TOML that names this node's paths where containerd
// reads them, the cgroup driver asked for, and kubeboot's sandbox image.
func TestContainerdConfigTOML(t *testing.T) {
	fs := fsys.NewRoot("/srv/node-a")
	for _, systemd := range []bool{true, false} {
		var c struct {
			Version int
			Root    string
			State   string
			Plugins map[string]map[string]any
		}
		if err := toml.Unmarshal([]byte(ContainerdConfigTOML(fs, systemd, Runtimes{}, false)), &c); err != nil {
			t.Fatalf("not TOML: %v", err)
		}
		if c.Version != 4 || c.Root != fs.Path(ContainerdRoot) || c.State != fs.Path(ContainerdState) {
			t.Errorf("version %d, root %q, state %q", c.Version, c.Root, c.State)
		}
		if got := c.Plugins["io.containerd.grpc.v1.cri"]["stream_server_address"]; got != "127.0.0.1" {
			t.Errorf("stream server address %v", got)
		}
		img := c.Plugins["io.containerd.cri.v1.images"]["pinned_images"].(map[string]any)["sandbox"]
		if img != images.Pause {
			t.Errorf("sandbox image %v, want %s", img, images.Pause)
		}
		rt := c.Plugins["io.containerd.cri.v1.runtime"]["containerd"].(map[string]any)["runtimes"].(map[string]any)["runc"].(map[string]any)
		opts := rt["options"].(map[string]any)
		cni := c.Plugins["io.containerd.cri.v1.runtime"]["cni"].(map[string]any)
		if dirs := cni["bin_dirs"].([]any); len(dirs) != 2 || dirs[0] != fs.Path(CNIBinDir) || dirs[1] != "/srv/node-a/opt/cni/bin" {
			t.Errorf("CNI plugin directories %v: kubeboot's, then the operator's under the root", dirs)
		}
		if opts["SystemdCgroup"] != systemd || opts["Root"] != fs.Path(RuncRoot) || rt["runtime_path"] != fs.Path(ShimPath) {
			t.Errorf("runc runtime %v", rt)
		}
		if _, ok := opts["BinaryName"]; ok {
			t.Errorf("runc runtime names a binary: %v", opts)
		}
		ctr := c.Plugins["io.containerd.cri.v1.runtime"]["containerd"].(map[string]any)
		if ctr["default_runtime_name"] != "runc" || len(ctr["runtimes"].(map[string]any)) != 1 {
			t.Errorf("without crun: default runtime %v, runtimes %v; want runc alone", ctr["default_runtime_name"], ctr["runtimes"])
		}
	}
}

// With the operator's CNI (--flannel-backend none), its plugins come first:
// kubeboot's helpers directory holds programs that are not CNI plugins
// but share their names (flannel's engine, which an operator's flannel CNI
// names as its plugin type).
func TestContainerdConfigTOMLOperatorCNI(t *testing.T) {
	fs := fsys.NewRoot("/srv/node-a")
	var c struct{ Plugins map[string]map[string]any }
	if err := toml.Unmarshal([]byte(ContainerdConfigTOML(fs, false, Runtimes{}, true)), &c); err != nil {
		t.Fatalf("not TOML: %v", err)
	}
	cni := c.Plugins["io.containerd.cri.v1.runtime"]["cni"].(map[string]any)
	if dirs := cni["bin_dirs"].([]any); len(dirs) != 2 || dirs[0] != "/srv/node-a/opt/cni/bin" || dirs[1] != fs.Path(CNIBinDir) {
		t.Errorf("CNI plugin directories %v: the operator's, then kubeboot's", dirs)
	}
}

// On a host with crun, the pods run with it through the same shim by
// default, and runc stays as the handler "runc" with its own state, where
// the host has runc.
func TestContainerdConfigTOMLCrun(t *testing.T) {
	fs := fsys.NewRoot("/srv/node-a")
	for _, systemd := range []bool{true, false} {
		for _, noRunc := range []bool{false, true} {
			var c struct {
				Plugins map[string]map[string]any
			}
			if err := toml.Unmarshal([]byte(ContainerdConfigTOML(fs, systemd, Runtimes{Crun: "/usr/bin/crun", NoRunc: noRunc}, false)), &c); err != nil {
				t.Fatalf("not TOML: %v", err)
			}
			ctr := c.Plugins["io.containerd.cri.v1.runtime"]["containerd"].(map[string]any)
			if ctr["default_runtime_name"] != "crun" {
				t.Errorf("default runtime %v, want crun", ctr["default_runtime_name"])
			}
			rts := ctr["runtimes"].(map[string]any)
			want := map[string]map[string]any{
				"crun": {"BinaryName": "/usr/bin/crun", "SystemdCgroup": systemd, "Root": fs.Path(CrunRoot)},
			}
			if !noRunc {
				want["runc"] = map[string]any{"SystemdCgroup": systemd, "Root": fs.Path(RuncRoot)}
			}
			if len(rts) != len(want) {
				t.Fatalf("host without runc %v: runtimes %v, want %d", noRunc, rts, len(want))
			}
			for name, opts := range want {
				rt := rts[name].(map[string]any)
				if rt["runtime_type"] != "io.containerd.runc.v2" || rt["runtime_path"] != fs.Path(ShimPath) {
					t.Errorf("%s: %v, want kubeboot's runc shim", name, rt)
				}
				if got := rt["options"].(map[string]any); !maps.Equal(got, opts) {
					t.Errorf("%s options %v, want %v", name, got, opts)
				}
			}
		}
	}
	// Without crun, runc is there whatever NoRunc says: it is the runtime.
	if s := ContainerdConfigTOML(fs, true, Runtimes{NoRunc: true}, false); !strings.Contains(s, "runtimes.runc]") {
		t.Errorf("no crun: no runc runtime either:\n%s", s)
	}
}

// Preflight's verdict and init's log line for each runtime a host gives.
func TestRuntimesCheckAndChoice(t *testing.T) {
	const older = "/usr/bin/crun is 1.8.1, older than 1.14.3, which runs containerd 2's specs"
	for _, c := range []struct {
		name      string
		rt        Runtimes
		notUsed   string
		warning   string // a part of the one warning, or "" for none
		err       string // a part of the error, or "" for none
		choiceHas string // a part of the log line, or "" for no line
	}{
		{"runc alone", Runtimes{}, "", "", "", ""},
		{"runc, and a crun not used", Runtimes{}, older, "", "", "with runc, not the host's crun: " + older},
		{"crun and runc", Runtimes{Crun: "/usr/local/bin/crun"}, "", "", "", `with /usr/local/bin/crun (runc stays, as the runtime handler "runc")`},
		{"crun, no runc", Runtimes{Crun: "/usr/bin/crun", NoRunc: true}, "", "pods run with /usr/bin/crun", "", "crun and no runc: containerd runs containers with /usr/bin/crun"},
		{"no runtime", Runtimes{NoRunc: true}, "", "", "runc not found in PATH: kubeboot's containerd runs containers with runc", ""},
		{"no runc, a crun not used", Runtimes{NoRunc: true}, older, "", "the host's crun does not do: " + older, "with runc, not the host's crun"},
	} {
		t.Run(c.name, func(t *testing.T) {
			warnings, err := c.rt.Check(c.notUsed)
			switch {
			case c.err == "" && err != nil:
				t.Errorf("Check failed: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("Check's error %v, want one with %q", err, c.err)
			}
			switch {
			case c.warning == "" && len(warnings) != 0:
				t.Errorf("warnings %q, want none", warnings)
			case c.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], c.warning)):
				t.Errorf("warnings %q, want one with %q", warnings, c.warning)
			}
			got := c.rt.Choice(c.notUsed)
			if (c.choiceHas == "") != (got == "") || !strings.Contains(got, c.choiceHas) {
				t.Errorf("Choice = %q, want a line with %q", got, c.choiceHas)
			}
		})
	}
}

// Preflight's runtime check passes on runc alone without running crun,
// and asks crun only when runc is missing, on a cgroup v2 host (a
// cgroup v1 host's crun is never asked: crun refuses the hybrid layout).
func TestCheckHostRuntimes(t *testing.T) {
	for _, v2 := range []bool{true, false} {
		t.Run(fmt.Sprintf("cgroup v2 %v", v2), func(t *testing.T) {
			cgroups := t.TempDir()
			if v2 {
				if err := os.WriteFile(filepath.Join(cgroups, "cgroup.controllers"), []byte("cpu memory\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			old := host.CgroupRoot
			host.CgroupRoot = cgroups
			t.Cleanup(func() { host.CgroupRoot = old })

			dir := t.TempDir()
			ran := filepath.Join(dir, "crun-ran")
			script := func(name, body string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// The shell's own redirection: PATH holds only dir.
			script("crun", ": > "+ran+"\necho 'crun version 1.8.1'\n")
			t.Setenv("PATH", dir)

			_, err := CheckHostRuntimes(false)
			if err == nil || !strings.HasPrefix(err.Error(), "runc not found in PATH") {
				t.Fatalf("no runc: %v", err)
			}
			if _, statErr := os.Stat(ran); (statErr == nil) != v2 {
				t.Fatalf("no runc: crun run %v", statErr == nil)
			}
			if strings.Contains(err.Error(), "older than") != v2 {
				t.Fatalf("no runc: %v (says why the old crun does not do only where it was asked)", err)
			}

			os.Remove(ran)
			script("runc", "exit 0\n")
			if w, err := CheckHostRuntimes(false); len(w) != 0 || err != nil {
				t.Fatalf("runc: warnings %q, error %v", w, err)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Fatal("runc in PATH, and crun --version was run")
			}
		})
	}
}
