// Package layers holds the test that keeps kubeboot's import graph
// pointing down: cmd → internal/cli → cluster (the lifecycle API) →
// internal/... → pkg/..., never back up (docs/design.md §3).
package layers

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kubeboot/kubeboot/"

// layer is where a package sits, from the bottom: pkg (and the Go API
// module's packages, api/..., which import the standard library alone),
// internal, the lifecycle API, the CLI, the commands. The tests' and benchmarks'
// helpers (test/..., bench/...) sit above them all; hack/ holds commands.
func layer(pkg string) int {
	p := strings.TrimPrefix(pkg, module)
	switch {
	case strings.HasPrefix(p, "pkg/"), strings.HasPrefix(p, "api/"):
		return 0
	case p == "internal/cli":
		return 3
	case strings.HasPrefix(p, "internal/"):
		return 1
	case p == "cluster":
		return 2
	case strings.HasPrefix(p, "cmd/"):
		return 4
	default:
		return 5
	}
}

// flagPackages are the command line's: only the CLI and the workflow's
// command binding know them; the libraries and the API take typed
// options.
var flagPackages = []string{"github.com/spf13/pflag", "github.com/spf13/cobra"}

// No package imports one from a layer above its own: pkg never imports
// internal, nothing but the commands imports the CLI, and no library
// imports the tests' helpers. go list sees the build's imports (test
// files may reach further, as they drive the binary).
func TestImportsPointDown(t *testing.T) {
	readSources(t)
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		from := f[0]
		n++
		for _, to := range f[1:] {
			if (layer(from) == 0 || layer(from) == 2) && slices.Contains(flagPackages, to) {
				t.Errorf("%s imports %s: a library takes typed options, the CLI maps flags onto them", strings.TrimPrefix(from, module), to)
			}
			if !strings.HasPrefix(to, module) {
				continue
			}
			if layer(to) > layer(from) {
				t.Errorf("%s imports %s, a layer above it", strings.TrimPrefix(from, module), strings.TrimPrefix(to, module))
			}
		}
	}
	if n < 20 {
		t.Fatalf("go list listed %d packages: not the module's", n)
	}
}

// readSources reads the module's Go files and go.mod, which go list reads
// in its own process: opened here, they are the test's inputs, so that
// `go test` does not answer from its cache after an import changed.
func readSources(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "_output" || d.Name() == "third_party" || strings.HasPrefix(d.Name(), ".")) && p != "../.." {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") || d.Name() == "go.mod") {
			_, err = os.ReadFile(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
