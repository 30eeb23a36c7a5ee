// Package layers holds the test that keeps kubeboot's import graph
// pointing down (docs/design.md §3): the commands, then the CLI, then the
// lifecycle API (cluster), then the groups of internal/ by concept, each
// above the ones it builds on, down to the configuration's public types
// (pkg/config, pkg/clusterfile, beside network and programs) and the base.
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

// groups are internal/'s groups, from the bottom, with their rank: a
// package imports packages of its own group or of a group of a lower
// rank, never of a group of its rank or above (two groups of one rank
// know nothing of each other).
var groups = map[string]int{
	"internal/base": 0, // files under a root, waits, YAML documents, versions
	// pkg/config and pkg/clusterfile (the public types): 1
	"internal/network":  1, // CNI configuration, the node-local balancer, the pod network's engines
	"internal/programs": 1, // the binary's own small programs and upstream's entry points
	"internal/host":     2, // the machine: kernel, cgroups, hardening, SSH, the node's layout, record, images and cleanup
	"internal/kube":     3, // the API: clients, manifests, add-ons, discovery
	"internal/certs":    4, // PKI, kubeconfigs, bootstrap tokens, renewal, CA rotation, CSR approval
	"internal/etcd":     5, // snapshots, restore, members
	"internal/runtime":  6, // components, their supervisor, the node daemon, own components, upgrade
	"internal/phases":   7, // kubeadm's phase trees of init, join, reset and upgrade
	"internal/apply":    7, // a cluster file made real over SSH
}

// levels are the packages of a group (its directories), from the bottom:
// a package imports packages of its group at a lower level only, and two
// of one level know nothing of each other. A group of one package, or
// whose packages import none of each other, needs no entry.
var levels = map[string][][]string{
	"api": {{"wire"}, {"cluster"}}, // the Go API: its types over the wire's
	"pkg": {{"config"}, {"clusterfile"}},
	"internal/certs": {
		{"pki"},
		{"kubeconfig"},
		{"bootstrap", "renewal", "csrapprover"},
		{"carotation"}, // re-issues what renewal issues, hands out what bootstrap stores
	},
	"internal/etcd": {
		{"etcdclient"}, // a control plane's client: certificates, members
		{"etcdbackup"},
	},
	"internal/host": {
		{"host", "helpers", "images", "preflight", "remote"},
		{"cpugroup", "cleanup"},
		{"node"}, // the layout: the runtime's, kubelet's and DNS files of a node on this host
		{"hardening", "nodestate"},
	},
	"internal/kube": {
		{"apiclient", "discovery", "manifests"},
		{"addons"},
	},
	"internal/phases": {
		{"workflow"},
		{"initphases", "joinphases", "resetphases", "upgradephases"},
	},
	"internal/network": {
		{"cni", "apilb", "healthz", "nodewait", "engine"},
		{"flannel", "kuberouter"}, // the engines, over the CNI configuration, their waits, health and command-line frame
	},
	"internal/programs": {
		{"settle", "pause", "kubectli18n", "testserver"},
		{"embedded"},
	},
	"internal/runtime": {
		{"component"},  // what a component is: its spec, its renderer, the table
		{"supervisor"}, // runs specs as processes
		{"daemon", "devmode", "explain"},
		{"service", "nodeup", "upgrade"}, // the daemon's own components; the bring-up; upgrade
	},
}

// level is pkg's level in its group's levels (its directory's), and
// whether the group declares levels; -1 for a package the group's levels
// do not list.
func level(g, pkg string) (int, bool) {
	lv, ok := levels[g]
	if !ok {
		return 0, false
	}
	dir, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(pkg, module), g+"/"), "/")
	for i, l := range lv {
		if slices.Contains(l, dir) {
			return i, true
		}
	}
	return -1, true
}

// Ranks above the groups.
const (
	public  = 1  // pkg/...: the configuration's types
	api     = 8  // cluster: the lifecycle API
	cli     = 9  // internal/cli
	command = 10 // cmd/...
	above   = 11 // the tests' and benchmarks' helpers, hack/'s commands
)

// group is the group pkg belongs to (the import path of its directory
// under internal/ or pkg, or the package itself) and its rank. The Go
// API module's packages (api/...) import the standard library alone.
func group(pkg string) (string, int) {
	p := strings.TrimPrefix(pkg, module)
	switch {
	case strings.HasPrefix(p, "api/"):
		return "api", 0
	case p == "internal/layers":
		return p, above
	case strings.HasPrefix(p, "pkg/"):
		return "pkg", public
	case p == "internal/cli":
		return p, cli
	case p == "cluster":
		return p, api
	case strings.HasPrefix(p, "cmd/"):
		return "cmd", command
	case strings.HasPrefix(p, "internal/"):
		f := strings.SplitN(p, "/", 3)
		g := f[0] + "/" + f[1]
		if r, ok := groups[g]; ok {
			return g, r
		}
		return g, -1
	case strings.HasPrefix(p, "test/"), strings.HasPrefix(p, "bench/"), strings.HasPrefix(p, "hack/"):
		return "", above
	default:
		return p, -1
	}
}

// flagPackages are the command line's: only the CLI, the workflow's
// command binding and the commands know them; the libraries and the API
// take typed options.
var flagPackages = []string{"github.com/spf13/pflag", "github.com/spf13/cobra"}

// No package imports one from a group of its rank or above: the base
// imports no group, the public types only the base, the etcd group no
// runtime, nothing but the commands the CLI, no library the tests'
// helpers. go list sees
// the build's imports (test files may reach further, as they drive the
// binary).
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
		fromGroup, fromRank := group(from)
		if fromRank < 0 {
			t.Errorf("%s is in no group: add its group to groups (internal/...), with its rank, or a case to group", strings.TrimPrefix(from, module))
			continue
		}
		if fromRank == above {
			continue
		}
		for _, to := range f[1:] {
			if fromRank < cli && from != module+"internal/phases/workflow" && slices.Contains(flagPackages, to) {
				t.Errorf("%s imports %s: a library takes typed options, the CLI maps flags onto them", strings.TrimPrefix(from, module), to)
			}
			if !strings.HasPrefix(to, module) {
				continue
			}
			toGroup, toRank := group(to)
			if toGroup != fromGroup && toRank >= fromRank {
				t.Errorf("%s (%s, rank %d) imports %s (%s, rank %d): a group imports only groups below it", strings.TrimPrefix(from, module), fromGroup, fromRank, strings.TrimPrefix(to, module), toGroup, toRank)
			}
			if toGroup != fromGroup {
				continue
			}
			fromLevel, declared := level(fromGroup, from)
			toLevel, _ := level(fromGroup, to)
			switch {
			case !declared:
				t.Errorf("%s imports %s of its own group %s, which declares no levels: add the group's packages to levels, from the bottom", strings.TrimPrefix(from, module), strings.TrimPrefix(to, module), fromGroup)
			case fromLevel < 0 || toLevel < 0:
				t.Errorf("%s imports %s: add each package of %s to its level in levels", strings.TrimPrefix(from, module), strings.TrimPrefix(to, module), fromGroup)
			case toLevel >= fromLevel && !sameDir(fromGroup, from, to):
				t.Errorf("%s (level %d of %s) imports %s (level %d): a package imports only the lower levels of its group", strings.TrimPrefix(from, module), fromLevel, fromGroup, strings.TrimPrefix(to, module), toLevel)
			}
		}
	}
	if n < 20 {
		t.Fatalf("go list listed %d packages: not the module's", n)
	}
}

// sameDir reports whether a and b sit in one directory of group g (a
// package and its test helpers' package below it).
func sameDir(g, a, b string) bool {
	dir := func(p string) string {
		d, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(p, module), g+"/"), "/")
		return d
	}
	return dir(a) == dir(b)
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
