package daemon

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
)

// The unit runs this root's daemon, and systemd accepts it.
func TestUnit(t *testing.T) {
	root := t.TempDir()
	fs := fsys.NewRoot(root)
	u := string(Unit(fs, "/bin/true"))
	if !strings.Contains(u, "ExecStart=/bin/true --root "+root+" daemon run") || !strings.Contains(u, "KillMode=process") ||
		!strings.Contains(u, "\nSlice="+cpugroup.Slice(root)+"\n") || !strings.Contains(u, "Delegate=yes") {
		t.Errorf("unit:\n%s", u)
	}
	if UnitName(fsys.NewRoot("/")) != "kubeboot.service" || !strings.HasPrefix(UnitName(fs), "kubeboot-") {
		t.Errorf("unit names %q %q", UnitName(fsys.NewRoot("/")), UnitName(fs))
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed: the unit's syntax is checked by the e2e test")
	}
	f := filepath.Join(t.TempDir(), UnitName(fs))
	os.WriteFile(f, []byte(u), 0o644)
	if out, err := exec.Command("systemd-analyze", "verify", f).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
