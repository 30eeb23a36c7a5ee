// Package devmode turns the component specs the node daemon runs into
// what a developer needs to run one component by hand, or under a
// debugger, against a live cluster: the exact upstream command line (the
// component's own flags, every certificate, key and kubeconfig path), its
// environment and working directory, as shell lines, JSON, a VS Code
// launch.json, GoLand run configurations or dlv command lines. The spec
// files are the one source: nothing here knows a flag.
//
// This is what seed 000's author did by hand with local-up-cluster.sh:
// the components talk mutual TLS, so one started from an IDE without the
// generated certificates fails.
package devmode

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/module"

	"github.com/kubeboot/kubeboot/internal/base/version"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
)

// Launch is how to run one component as its upstream program.
type Launch struct {
	Name string `json:"name"`
	// Program is the executable to run: the upstream program's name
	// (kube-scheduler, etcd, containerd), kubeboot for its own components,
	// or the path of a program kubeboot does not carry.
	Program string `json:"program"`
	// Package is the Go import path of its main package, and PackageDir
	// that package's directory (the module cache, or a source checkout):
	// what a debugger builds. Empty for a program kubeboot does not build.
	Package    string   `json:"package,omitempty"`
	PackageDir string   `json:"packageDir,omitempty"`
	Args       []string `json:"args"`
	Env        []string `json:"env"`
	Cwd        string   `json:"cwd"`
	// Spec is the spec file it was read from.
	Spec string `json:"spec"`
}

// Sources says where the upstream packages are.
type Sources struct {
	// Kubernetes is a Kubernetes source checkout; empty means the module
	// cache's k8s.io/kubernetes at the version kubeboot embeds.
	Kubernetes string
	// ModCache is the Go module cache ($GOMODCACHE).
	ModCache string
	// Kubeboot is a kubeboot source checkout, for kubeboot's own
	// components; empty means VS Code's ${workspaceFolder}.
	Kubeboot string
}

// DefaultModCache is $GOMODCACHE, else $GOPATH/pkg/mod, else ~/go/pkg/mod.
func DefaultModCache() string {
	if d := os.Getenv("GOMODCACHE"); d != "" {
		return d
	}
	if p := os.Getenv("GOPATH"); p != "" {
		return filepath.Join(strings.Split(p, string(os.PathListSeparator))[0], "pkg", "mod")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, "go", "pkg", "mod")
}

// kubernetesCmds are the components whose main package is
// k8s.io/kubernetes/cmd/<name>.
var kubernetesCmds = map[string]bool{
	component.APIServer: true, component.ControllerManager: true, component.Scheduler: true,
	component.Kubelet: true, component.KubeProxy: true,
}

// etcdModule is the module whose root package is etcd's main.
const etcdModule = "go.etcd.io/etcd/server/v3"

// containerdModule is containerd's module; its main is cmd/containerd.
const containerdModule = "github.com/containerd/containerd/v2"

// FromSpec is the launch of a spec. env is the environment the daemon
// gives its components (without PATH, which the developer's own is), cwd
// the working directory it runs them in.
func FromSpec(spec component.Spec, specFile string, env []string, cwd string, src Sources) Launch {
	l := Launch{Name: spec.Name, Program: spec.Name, Args: append([]string{}, spec.Args...), Env: env, Cwd: cwd, Spec: specFile}
	switch {
	case component.IsEngine(spec.Name):
		// The pod network's engines: kubeboot's own small main packages.
		l.Package = "github.com/kubeboot/kubeboot/cmd/" + spec.Name
		if src.Kubeboot != "" {
			l.PackageDir = filepath.Join(src.Kubeboot, "cmd", spec.Name)
		} else {
			l.PackageDir = "${workspaceFolder}/cmd/" + spec.Name
		}
	case spec.Exec != "":
		l.Program = spec.Exec
	case kubernetesCmds[spec.Name]:
		l.Package = "k8s.io/kubernetes/cmd/" + spec.Name
		if src.Kubernetes != "" {
			l.PackageDir = filepath.Join(src.Kubernetes, "cmd", spec.Name)
		} else {
			l.PackageDir = modDir(src.ModCache, "k8s.io/kubernetes", version.Kubernetes, "cmd/"+spec.Name)
		}
	case spec.Name == component.Containerd:
		l.Package = containerdModule + "/cmd/containerd"
		l.PackageDir = modDir(src.ModCache, containerdModule, "v"+strings.TrimPrefix(version.Containerd, "v"), "cmd/containerd")
	case spec.Name == component.Etcd:
		l.Package = etcdModule
		l.PackageDir = modDir(src.ModCache, etcdModule, "v"+strings.TrimPrefix(version.Etcd, "v"), "")
	default:
		// kubeboot's own components (the load balancer, the
		// approver) are subcommands of kubeboot.
		l.Program = "kubeboot"
		l.Package = "github.com/kubeboot/kubeboot/cmd/kubeboot"
		if src.Kubeboot != "" {
			l.PackageDir = filepath.Join(src.Kubeboot, "cmd", "kubeboot")
		} else {
			l.PackageDir = "${workspaceFolder}/cmd/kubeboot"
		}
	}
	return l
}

// modDir is a package's directory in the module cache.
func modDir(cache, mod, ver, sub string) string {
	esc, err := module.EscapePath(mod)
	if err != nil {
		esc = mod
	}
	return filepath.Join(cache, esc+"@"+ver, sub)
}

// Shell writes each launch as a shell command: cd to its working
// directory, its environment, the program and its flags one per line.
func Shell(w io.Writer, ls []Launch) error {
	for i, l := range ls {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# %s (spec %s)\n", l.Name, l.Spec)
		var b strings.Builder
		// exec: the program is the process a signal or a debugger's
		// attach reaches, not a shell waiting for it.
		fmt.Fprintf(&b, "cd %s && exec ", quote(l.Cwd))
		if len(l.Env) > 0 {
			b.WriteString("env")
			for _, e := range l.Env {
				b.WriteString(" " + quote(e))
			}
			b.WriteString(" ")
		}
		b.WriteString(quote(l.Program))
		for _, a := range l.Args {
			b.WriteString(" \\\n    " + quote(a))
		}
		fmt.Fprintln(w, b.String())
	}
	return nil
}

// quote quotes a word for sh when it needs it.
func quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=/.,:@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// JSON writes the launches as a JSON array.
func JSON(w io.Writer, ls []Launch) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(ls)
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// VSCodeLaunch is the shape of VS Code's launch.json.
type VSCodeLaunch struct {
	Version        string                `json:"version"`
	Configurations []VSCodeConfiguration `json:"configurations"`
}

// VSCodeConfiguration is one Go launch configuration.
type VSCodeConfiguration struct {
	Name    string            `json:"name"`
	Type    string            `json:"type"`
	Request string            `json:"request"`
	Mode    string            `json:"mode"`
	Program string            `json:"program"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
}

// VSCode writes a launch.json: Go "launch" configurations that build the
// upstream package in debug mode (a program kubeboot does not build is
// run with mode "exec").
func VSCode(w io.Writer, ls []Launch) error {
	out := VSCodeLaunch{Version: "0.2.0", Configurations: []VSCodeConfiguration{}}
	for _, l := range ls {
		c := VSCodeConfiguration{Name: l.Name, Type: "go", Request: "launch", Mode: "debug", Program: l.PackageDir,
			Args: l.Args, Env: envMap(l.Env), Cwd: l.Cwd}
		if l.PackageDir == "" {
			c.Mode, c.Program = "exec", l.Program
		}
		out.Configurations = append(out.Configurations, c)
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(out)
}

type golandProject struct {
	XMLName   xml.Name `xml:"project"`
	Version   string   `xml:"version,attr"`
	Component struct {
		Name           string          `xml:"name,attr"`
		Configurations []golandRunConf `xml:"configuration"`
	} `xml:"component"`
}

type golandRunConf struct {
	Name             string        `xml:"name,attr"`
	Type             string        `xml:"type,attr"`
	FactoryName      string        `xml:"factoryName,attr"`
	WorkingDirectory golandValue   `xml:"working_directory"`
	Parameters       golandValue   `xml:"parameters"`
	Envs             []golandEnv   `xml:"envs>env"`
	Kind             golandValue   `xml:"kind"`
	Package          *golandValue  `xml:"package,omitempty"`
	Directory        golandValue   `xml:"directory"`
	FilePath         *golandValue  `xml:"filePath,omitempty"`
	Method           golandMethodV `xml:"method"`
}

type golandValue struct {
	Value string `xml:"value,attr"`
}

type golandEnv struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type golandMethodV struct {
	V string `xml:"v,attr"`
}

// GoLand writes GoLand "Go Build" run configurations (the RunManager
// component of .idea/workspace.xml), one per component, each building the
// upstream package.
func GoLand(w io.Writer, ls []Launch) error {
	var p golandProject
	p.Version = "4"
	p.Component.Name = "RunManager"
	for _, l := range ls {
		c := golandRunConf{Name: l.Name, Type: "GoApplicationRunConfiguration", FactoryName: "Go Application",
			WorkingDirectory: golandValue{l.Cwd}, Parameters: golandValue{shellWords(l.Args)},
			Kind: golandValue{"PACKAGE"}, Directory: golandValue{l.PackageDir}, Method: golandMethodV{"2"}}
		if l.Package != "" {
			c.Package = &golandValue{l.Package}
		}
		keys := envMap(l.Env)
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			c.Envs = append(c.Envs, golandEnv{k, keys[k]})
		}
		p.Component.Configurations = append(p.Component.Configurations, c)
	}
	b, err := xml.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", xml.Header, b)
	return err
}

func shellWords(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}

// Dlv writes, for each launch, a `dlv debug` line that builds the upstream
// package and a `dlv exec` line for a program built already, both with
// the component's flags after "--".
func Dlv(w io.Writer, ls []Launch) error {
	for i, l := range ls {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# %s (spec %s)\n", l.Name, l.Spec)
		prefix := "cd " + quote(l.Cwd) + " && "
		if len(l.Env) > 0 {
			prefix += "env " + shellWords(l.Env) + " "
		}
		args := shellWords(l.Args)
		if l.PackageDir != "" {
			fmt.Fprintf(w, "%sdlv debug %s --output %s -- %s\n", prefix, quote(l.PackageDir), quote(filepath.Join(os.TempDir(), "kubeboot-dlv-"+l.Name)), args)
		}
		program := l.Program
		if !filepath.IsAbs(program) {
			program = "$(command -v " + program + ")"
		}
		fmt.Fprintf(w, "%sdlv exec %s -- %s\n", prefix, program, args)
	}
	return nil
}
