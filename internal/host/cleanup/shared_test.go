package cleanup

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSharedRemovesOnlyOwnEntries runs against fake machine-wide
// directories holding two nodes' entries.
func TestSharedRemovesOnlyOwnEntries(t *testing.T) {
	dir := t.TempDir()
	old := []string{ContainerLogLinks, DevicePlugins, CNICache}
	defer func() { ContainerLogLinks, DevicePlugins, CNICache = old[0], old[1], old[2] }()
	ContainerLogLinks = filepath.Join(dir, "var/log/containers")
	DevicePlugins = filepath.Join(dir, "var/lib/kubelet/device-plugins")
	CNICache = filepath.Join(dir, "var/lib/cni")
	shims := filepath.Join(dir, "run/kubeboot-shims")
	for _, d := range []string{ContainerLogLinks, DevicePlugins, filepath.Join(CNICache, "results"), filepath.Join(shims, "kubeboot-aaaa1111"), filepath.Join(shims, "kubeboot-bbbb2222")} {
		os.MkdirAll(d, 0o755)
	}
	id := func(c byte) string { return strings.Repeat(string(c), 64) }
	mine, theirs := id('a'), id('b')
	link := func(name, target string) { os.Symlink(target, filepath.Join(ContainerLogLinks, name)) }
	link("web-1_default_web-"+mine+".log", "/nodes/a/root/var/log/pods/default_web-1_uid/web/0.log")
	link("web-2_default_web-"+theirs+".log", "/nodes/b/root/var/log/pods/default_web-2_uid/web/0.log")
	link("evil_default_web-"+theirs+".log", "/nodes/a/root/var/log/pods-other/x.log") // a sibling prefix is not ours
	results := filepath.Join(CNICache, "results")
	for _, f := range []string{
		"kubeboot-aaaa1111-" + mine + "-eth0", "cni-loopback-" + mine + "-lo",
		"kubeboot-bbbb2222-" + theirs + "-eth0", "cni-loopback-" + theirs + "-lo",
		"kubeboot-" + theirs + "-eth0", // the node at "/" is network "kubeboot"
	} {
		os.WriteFile(filepath.Join(results, f), nil, 0o600)
	}
	os.WriteFile(filepath.Join(shims, "kubeboot-aaaa1111", mine), nil, 0o600)
	os.WriteFile(filepath.Join(shims, "kubeboot-bbbb2222", theirs), nil, 0o600)

	s := Shared{PodLogsDir: "/nodes/a/root/var/log/pods", CNINetwork: "kubeboot-aaaa1111", ShimSocketDir: filepath.Join(shims, "kubeboot-aaaa1111"), Out: io.Discard}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	left := func(d string) []string {
		var names []string
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	if got := left(ContainerLogLinks); len(got) != 2 || slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "web-1") }) {
		t.Errorf("log links left: %v", got)
	}
	if got := left(results); len(got) != 3 || slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, mine) }) {
		t.Errorf("CNI results left: %v", got)
	}
	if got := left(shims); len(got) != 1 || got[0] != "kubeboot-bbbb2222" {
		t.Errorf("shim socket dirs left: %v", got)
	}
}

func TestCNIResultOf(t *testing.T) {
	id := strings.Repeat("c", 64)
	for _, tc := range []struct {
		file, network string
		ok            bool
	}{
		{"kubeboot-" + id + "-eth0", "kubeboot", true},
		{"kubeboot-1a2b3c4d-" + id + "-eth0", "kubeboot", false},
		{"kubeboot-1a2b3c4d-" + id + "-eth0", "kubeboot-1a2b3c4d", true},
		{"cni-loopback-" + id + "-lo", "cni-loopback", true},
		{"kubeboot-" + id[:10] + "-eth0", "kubeboot", false},
	} {
		got, ok := cniResultOf(tc.file, tc.network)
		if ok != tc.ok || (ok && got != id) {
			t.Errorf("cniResultOf(%q, %q) = %q, %v", tc.file, tc.network, got, ok)
		}
	}
}
