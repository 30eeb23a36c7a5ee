package node

import (
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
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
		if err := toml.Unmarshal([]byte(ContainerdConfigTOML(fs, systemd)), &c); err != nil {
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
	}
}
