package cleanup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Machine-wide paths: constants of the upstream components that do not
// follow kubeboot's root prefix, so that every node of a machine writes
// there. Reset removes exactly the entries of its own node (see Shared).
var (
	// ContainerLogLinks is the kubelet's directory of links to each
	// container's log file (kubelet: legacyContainerLogsDir).
	ContainerLogLinks = "/var/log/containers"
	// DevicePlugins holds the kubelet's device-manager socket and
	// checkpoint (deviceplugin/v1beta1: DevicePluginPath). Every kubelet of
	// the machine listens on the same socket path, the last one started
	// owning it.
	DevicePlugins = "/var/lib/kubelet/device-plugins"
	// CNICache is the CNI library's cache of attachment results
	// (libcni: CacheDir), one file per network, container and interface.
	CNICache = "/var/lib/cni"
)

// Shared removes what one node left at the machine-wide paths.
type Shared struct {
	// PodLogsDir is the host path of the node's podLogsDir: links in
	// ContainerLogLinks that point below it are the node's.
	PodLogsDir string
	// CNINetwork is the node's CNI network name.
	CNINetwork string
	// ShimSocketDir is the node's own directory of shim sockets
	// (node.ShimSocketDir): outside the root prefix when the root's path
	// is too long, else in the state dir, gone with the rest by then.
	ShimSocketDir string
	// StorageLinks is the host directory of the storage add-on's links
	// into nodes' roots (node.StorageRoot), "" with the root prefix /:
	// the links into Root, the node's root prefix, are removed (found by
	// their target, not by the node's name, which a reset may not know).
	StorageLinks, Root string
	// ContainerIDs are the containers (sandboxes among them) it ran.
	ContainerIDs []string
	Out          io.Writer
}

// Remove deletes the node's entries, and the machine-wide directories
// that are then empty when no other node runs on the machine (a kubelet
// or containerd still running would use or re-create them).
func (s Shared) Remove() error {
	var errs []error
	remove := func(p string) {
		if err := os.Remove(p); err == nil {
			fmt.Fprintf(s.Out, "[reset] Deleted %s\n", p)
		} else if !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if s.PodLogsDir != "" {
		entries, _ := os.ReadDir(ContainerLogLinks)
		for _, e := range entries {
			link := filepath.Join(ContainerLogLinks, e.Name())
			if target, err := os.Readlink(link); err == nil && within(target, s.PodLogsDir) {
				remove(link)
			}
		}
	}
	ids := map[string]bool{}
	for _, id := range s.ContainerIDs {
		ids[id] = true
	}
	results := filepath.Join(CNICache, "results")
	entries, _ := os.ReadDir(results)
	for _, e := range entries {
		if id, ok := cniResultOf(e.Name(), s.CNINetwork); ok {
			ids[id] = true
			remove(filepath.Join(results, e.Name()))
		}
	}
	// containerd attaches every sandbox to its loopback network too.
	for _, e := range entries {
		if id, ok := cniResultOf(e.Name(), "cni-loopback"); ok && ids[id] {
			remove(filepath.Join(results, e.Name()))
		}
	}
	var storageParent string
	if s.StorageLinks != "" {
		links, _ := os.ReadDir(s.StorageLinks)
		for _, e := range links {
			link := filepath.Join(s.StorageLinks, e.Name())
			if target, err := os.Readlink(link); err == nil && within(target, s.Root) {
				remove(link)
			}
		}
		storageParent = s.StorageLinks
	}
	var shimParent string
	if s.ShimSocketDir != "" {
		if _, err := os.Stat(s.ShimSocketDir); err == nil {
			if err := os.RemoveAll(s.ShimSocketDir); err != nil {
				errs = append(errs, err)
			} else {
				fmt.Fprintf(s.Out, "[reset] Deleted %s\n", s.ShimSocketDir)
			}
		}
		shimParent = filepath.Dir(s.ShimSocketDir)
	}
	others := OtherNodeProcesses()
	if len(others) == 0 {
		for _, f := range []string{"kubelet.sock", "kubelet_internal_checkpoint"} {
			remove(filepath.Join(DevicePlugins, f))
		}
		for _, dir := range []string{ContainerLogLinks, results, CNICache, shimParent, filepath.Dir(shimParent), storageParent, filepath.Dir(storageParent), DevicePlugins, filepath.Dir(DevicePlugins)} {
			if dir != "" && dir != "." && isEmptyDir(dir) {
				remove(dir)
			}
		}
	} else {
		fmt.Fprintf(s.Out, "[reset] Other nodes run on this machine (pids %v): left %s, %s and the shared directories to them\n", others, filepath.Join(DevicePlugins, "kubelet.sock"), filepath.Join(DevicePlugins, "kubelet_internal_checkpoint"))
	}
	return errors.Join(errs...)
}

func within(p, dir string) bool {
	dir = filepath.Clean(dir)
	return strings.HasPrefix(filepath.Clean(p), dir+string(filepath.Separator))
}

var containerID = regexp.MustCompile(`^([0-9a-f]{64})-[^-]+$`)

// cniResultOf returns the container of a cached CNI result file
// "<network>-<container>-<interface>" of the network.
func cniResultOf(file, network string) (string, bool) {
	rest, ok := strings.CutPrefix(file, network+"-")
	if !ok || network == "" {
		return "", false
	}
	m := containerID.FindStringSubmatch(rest)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func isEmptyDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 0
}

// OtherNodeProcesses lists live kubelet and containerd processes on the
// machine. Reset calls it once its own node is stopped: whatever is left
// belongs to another node (or to a containerd the host runs itself).
func OtherNodeProcesses() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // gone, or a zombie (no command line)
		}
		switch filepath.Base(strings.SplitN(string(b), "\x00", 2)[0]) {
		case "kubelet", "containerd":
			pids = append(pids, pid)
		}
	}
	return pids
}
