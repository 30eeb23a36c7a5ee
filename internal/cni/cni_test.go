// Package cni holds the CNI plugins copied from the containernetworking
// module (see hack/gen-cni.sh).
package cni

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCNICopyMatchesModule fails when internal/cni/upstream drifts from
// the plugins module go.mod pins: the copy may only rename the package and
// main().
func TestCNICopyMatchesModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", "github.com/containernetworking/plugins").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	f := strings.Fields(string(out))
	src, ver := f[0], f[1]
	plugins := map[string]string{"bridge": "main/bridge", "hostlocal": "ipam/host-local", "loopback": "main/loopback", "portmap": "meta/portmap"}
	pkgLine := regexp.MustCompile(`(?m)^package main$`)
	mainLine := regexp.MustCompile(`(?m)^func main\(\) \{$`)
	for pkg, dir := range plugins {
		files, _ := filepath.Glob(filepath.Join(src, "plugins", dir, "*.go"))
		n := 0
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			n++
			want, _ := os.ReadFile(file)
			w := pkgLine.ReplaceAllString(string(want), "package "+pkg)
			w = mainLine.ReplaceAllString(w, "func Main() {")
			got, err := os.ReadFile(filepath.Join("upstream", pkg, filepath.Base(file)))
			if err != nil {
				t.Errorf("%s: %v (run hack/gen-cni.sh)", file, err)
				continue
			}
			_, body, _ := strings.Cut(string(got), "\n\n") // drop the generated-code header
			if body != w {
				t.Errorf("upstream/%s/%s differs from plugins@%s: run hack/gen-cni.sh", pkg, filepath.Base(file), ver)
			}
			if !strings.Contains(string(got), "plugins@"+ver+"/") {
				t.Errorf("upstream/%s/%s does not name version %s", pkg, filepath.Base(file), ver)
			}
		}
		if n == 0 {
			t.Errorf("no source files for %s in the module", dir)
		}
	}
}
