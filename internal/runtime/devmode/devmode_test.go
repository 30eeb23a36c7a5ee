package devmode

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/version"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/pkg/config"
)

func launches(t *testing.T) ([]component.Spec, []Launch) {
	t.Helper()
	cfg, err := config.InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	r := component.Renderer{Cfg: cfg, FS: fsys.NewRoot("/tmp/dev root")}
	specs := append(r.Specs(component.RoleControlPlane), r.FlannelSpec(), r.KubeRouterSpec(), r.ContainerdSpec())
	var ls []Launch
	for _, s := range specs {
		ls = append(ls, FromSpec(s, "/spec/"+s.Name+".json", []string{"GOGC=50"}, "/tmp/dev root", Sources{ModCache: "/mod"}))
	}
	return specs, ls
}

func TestPrograms(t *testing.T) {
	_, ls := launches(t)
	want := map[string][2]string{
		"etcd":                    {"etcd", "/mod/go.etcd.io/etcd/server/v3@v" + strings.TrimPrefix(version.Etcd, "v")},
		"kube-apiserver":          {"kube-apiserver", "/mod/k8s.io/kubernetes@v1.37.2/cmd/kube-apiserver"},
		"kube-scheduler":          {"kube-scheduler", "/mod/k8s.io/kubernetes@v1.37.2/cmd/kube-scheduler"},
		"kube-controller-manager": {"kube-controller-manager", "/mod/k8s.io/kubernetes@v1.37.2/cmd/kube-controller-manager"},
		"flannel":                 {"flannel", "${workspaceFolder}/cmd/flannel"},
		"kube-router":             {"kube-router", "${workspaceFolder}/cmd/kube-router"},
		"cert-renewer":            {"kubeboot", "${workspaceFolder}/cmd/kubeboot"},
		"manifest-applier":        {"kubeboot", "${workspaceFolder}/cmd/kubeboot"},
		"storage-scaler":          {"kubeboot", "${workspaceFolder}/cmd/kubeboot"},
		"containerd":              {"containerd", "/mod/github.com/containerd/containerd/v2@v" + version.Containerd + "/cmd/containerd"},
	}
	for _, l := range ls {
		w, ok := want[l.Name]
		if !ok {
			t.Errorf("unexpected launch %s", l.Name)
			continue
		}
		if l.Program != w[0] || l.PackageDir != w[1] {
			t.Errorf("%s: program %q dir %q, want %q %q", l.Name, l.Program, l.PackageDir, w[0], w[1])
		}
	}
}

// The shell lines are one command per component that sh parses back into
// exactly the spec's arguments.
func TestShellRoundTrip(t *testing.T) {
	specs, ls := launches(t)
	var b bytes.Buffer
	if err := Shell(&b, ls[:1]); err != nil {
		t.Fatal(err)
	}
	// Replace the program by a printer of its arguments.
	script := strings.Replace(b.String(), " etcd \\", ` sh -c 'printf "%s\n" "$@"' etcd \`, 1)
	script = strings.Replace(script, "cd '/tmp/dev root' && exec ", "", 1)
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s\n%s", err, out, script)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if !slices.Equal(got, specs[0].Args) {
		t.Errorf("sh parsed\n%q\nwant\n%q", got, specs[0].Args)
	}
}

func TestVSCode(t *testing.T) {
	specs, ls := launches(t)
	var b bytes.Buffer
	if err := VSCode(&b, ls); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version        string `json:"version"`
		Configurations []struct {
			Name, Type, Request, Mode, Program string
			Args                               []string
			Env                                map[string]string
		} `json:"configurations"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc.Version != "0.2.0" || len(doc.Configurations) != len(specs) {
		t.Fatalf("version %q, %d configurations", doc.Version, len(doc.Configurations))
	}
	for i, c := range doc.Configurations {
		if c.Name != specs[i].Name || c.Type != "go" || c.Request != "launch" || c.Program == "" || !slices.Equal(c.Args, specs[i].Args) || c.Env["GOGC"] != "50" {
			t.Errorf("configuration %d: %+v", i, c)
		}
		if want := "debug"; c.Name != "containerd" && c.Mode != want {
			t.Errorf("%s: mode %q", c.Name, c.Mode)
		}
	}
}

func TestGoLand(t *testing.T) {
	_, ls := launches(t)
	var b bytes.Buffer
	if err := GoLand(&b, ls); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&b)
	n := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "configuration" {
			n++
		}
	}
	if n != len(ls) {
		t.Errorf("%d configurations, want %d", n, len(ls))
	}
}

func TestDlv(t *testing.T) {
	_, ls := launches(t)
	var b bytes.Buffer
	if err := Dlv(&b, ls); err != nil {
		t.Fatal(err)
	}
	debug, execs := 0, 0
	for _, line := range strings.Split(b.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, cmd, ok := strings.Cut(line, " && ")
		if !ok {
			t.Errorf("no cd: %s", line)
			continue
		}
		cmd = strings.TrimPrefix(cmd, "env GOGC=50 ")
		before, _, ok := strings.Cut(cmd, " -- ")
		f := strings.Fields(before)
		switch {
		case !ok || len(f) < 3 || f[0] != "dlv":
			t.Errorf("not a dlv invocation: %s", line)
		case f[1] == "debug":
			debug++
		case f[1] == "exec":
			execs++
		default:
			t.Errorf("dlv %s: %s", f[1], line)
		}
	}
	if execs != len(ls) || debug != len(ls) {
		t.Errorf("%d dlv debug and %d dlv exec lines for %d components", debug, execs, len(ls))
	}
}
