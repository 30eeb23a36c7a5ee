package preflight

import (
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

func TestSocketPaths(t *testing.T) {
	const sock = "/run/kubeboot/containerd/containerd.sock.ttrpc" // 46 bytes
	fits := "/" + strings.Repeat("r", MaxSocketPath-len(sock)-1)
	if _, err := SocketPaths(fsys.NewRoot(fits), sock).Run(); err != nil {
		t.Errorf("a root of %d bytes: %v", len(fits), err)
	}
	long := fits + "x"
	_, err := SocketPaths(fsys.NewRoot(long), "/var/lib/kubelet/pod-resources/kubelet.sock", sock).Run()
	if err == nil || !strings.Contains(err.Error(), "105 bytes") || !strings.Contains(err.Error(), "at most 58 bytes") {
		t.Errorf("a root of %d bytes: %v", len(long), err)
	}
}
