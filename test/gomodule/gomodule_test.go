// Package gomodule proves kubeboot's Go API from outside: a module of its
// own, as a user makes one, that imports github.com/kubeboot/kubeboot/api
// with no replace line but the one pointing at this work tree (where a
// user's `go get` would fetch it).
package gomodule

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/test/nethost"
)

// program is what the README's "Use it from Go" shows: a control plane for
// tests, a client listing its namespaces, then Reset.
const program = `package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeboot/kubeboot/api/cluster"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) (err error) {
	root, err := os.MkdirTemp("", "kubeboot-")
	if err != nil {
		return err
	}
	node := cluster.Node{Root: root}
	// Reset stops whatever Init started, also after a failure.
	defer func() {
		err = errors.Join(err, cluster.Reset(ctx, cluster.ResetOptions{Node: node}), os.RemoveAll(root))
	}()
	start := time.Now()
	// etcd, kube-apiserver, the controller-manager and the scheduler under
	// root, without root privileges, from the kubeboot binary on PATH.
	res, err := cluster.Init(ctx, cluster.InitOptions{Node: node, ControlPlaneOnly: true})
	if err != nil {
		return err
	}
	config, err := clientcmd.BuildConfigFromFlags("", res.AdminKubeconfig)
	if err != nil {
		return err
	}
	list, err := kubernetes.NewForConfigOrDie(config).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	sort.Strings(names)
	fmt.Printf("%s answered in %.1f s: namespaces %v\n", res.APIServer, time.Since(start).Seconds(), names)
	// A token for a node to join with, valid for an hour.
	join, err := cluster.CreateToken(ctx, cluster.TokenOptions{Kubeconfig: res.AdminKubeconfig, TTL: time.Hour})
	if err != nil {
		return err
	}
	fmt.Printf("join %s with a token of %d characters, CA pinned by %.7s\n", join.Endpoint, len(join.Token), join.CACertHash)
	return nil
}
`

// TestOutsideModule: a fresh module (go mod init, a replace of the API
// module to the work tree, go get client-go, go mod tidy) vets and builds;
// its go.mod requires no k8s.io/kubernetes and replaces nothing else; the
// program, run as nobody in a host of its own, gets an answering API
// server from the kubeboot binary on PATH, then resets it; and again
// where the only address is loopback.
func TestOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module and starts a control plane; runs without -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the program runs in a network namespace, as nobody")
	}
	bin := os.Getenv("KUBEBOOT_BINARY")
	if bin == "" {
		bin = "../../_output/kubeboot"
	}
	bin, err := filepath.EvalSymlinks(bin)
	if err == nil {
		bin, err = filepath.Abs(bin)
	}
	if err != nil {
		t.Fatalf("kubeboot binary: %v (run `make build`)", err)
	}
	if out, _ := exec.Command("go", "env", "GOPROXY").Output(); strings.TrimSpace(string(out)) == "off" {
		t.Skip("GOPROXY=off: a fresh module needs the module proxy")
	}
	apiDir, err := filepath.Abs("../../api")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// nobody runs the program, the binary and the control plane there
	// (t.TempDir makes the directory and its parent 0700).
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mod := filepath.Join(dir, "outside")
	if err := os.Mkdir(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd := func(args ...string) string {
		t.Helper()
		start := time.Now()
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		// As a user's module: no workspace, no flags of kubeboot's build.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("go %s: %.1f s", strings.Join(args, " "), time.Since(start).Seconds())
		return string(out)
	}
	goCmd("mod", "init", "example.com/outside")
	goCmd("mod", "edit", "-replace", "github.com/kubeboot/kubeboot/api="+apiDir)
	goCmd("get", "k8s.io/client-go@v0.37.2")
	goCmd("mod", "tidy")
	goMod, _ := os.ReadFile(filepath.Join(mod, "go.mod"))
	t.Logf("the outside module's go.mod:\n%s", goMod)
	if strings.Contains(string(goMod), "k8s.io/kubernetes") {
		t.Errorf("go.mod names k8s.io/kubernetes")
	}
	if n := strings.Count(string(goMod), "=>"); n != 1 {
		t.Errorf("go.mod has %d replacements, want the API module's alone", n)
	}
	goCmd("vet", "./...")
	goCmd("build", "-o", filepath.Join(dir, "outside-program"), ".")
	if deps := goCmd("list", "-deps", "."); strings.Contains(deps, "k8s.io/kubernetes/") {
		t.Errorf("the program's packages include k8s.io/kubernetes")
	}

	// The binary where nobody may run it, on the program's PATH.
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(bin, filepath.Join(binDir, "kubeboot")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{binDir, filepath.Join(binDir, "kubeboot"), filepath.Join(dir, "outside-program")} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := nethost.BecomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	h, err := nethost.New("kbgomod", "10.217.0.2", filepath.Join(dir, "host"), bin)
	if err != nil {
		t.Fatal(err)
	}
	// The program's TMPDIR, where its node lives, is under the host's
	// root: whatever a failed run leaves running, Close ends.
	defer h.Close()
	tmp := filepath.Join(h.Root, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := h.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		"env", "PATH="+binDir+":/usr/bin:/bin", "TMPDIR="+tmp, "HOME="+tmp, filepath.Join(dir, "outside-program"))
	start := time.Now()
	out, err := nethost.Run(cmd)
	if err != nil {
		t.Fatalf("the program, as nobody: %v\n%s", err, out)
	}
	t.Logf("the program ran in %.1f s: %s", time.Since(start).Seconds(), lastLine(out))
	if !regexp.MustCompile(`https://10\.217\.0\.2:6443 answered in [0-9.]+ s: namespaces \[default kube-node-lease kube-public kube-system\]`).MatchString(out) {
		t.Errorf("no answering API server in the program's output:\n%s", out)
	}
	if !strings.Contains(out, "join 10.217.0.2:6443 with a token of 23 characters, CA pinned by sha256:") {
		t.Errorf("no join command from CreateToken in the program's output:\n%s", out)
	}
	// The program exits non-zero when Reset fails; and Reset stopped
	// every process of the node.
	if left := processesUnder(tmp); len(left) > 0 {
		t.Errorf("running after Reset: %v", left)
	}

	// A machine whose only address is loopback (a CI container): the
	// program again, in a network namespace of its own with lo alone.
	tmpLo := filepath.Join(h.Root, "tmp-lo")
	if err := os.Mkdir(tmpLo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmpLo, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd = h.Command("unshare", "--net", "--", "sh", "-c", `ip link set lo up && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- env PATH="$1" TMPDIR="$2" HOME="$2" "$3"`,
		"sh", binDir+":/usr/bin:/bin", tmpLo, filepath.Join(dir, "outside-program"))
	start = time.Now()
	out, err = nethost.Run(cmd)
	if err != nil {
		t.Fatalf("the program, as nobody, with loopback alone: %v\n%s", err, out)
	}
	t.Logf("with loopback alone, the program ran in %.1f s: %s", time.Since(start).Seconds(), lastLine(out))
	if !regexp.MustCompile(`https://127\.0\.0\.1:6443 answered in [0-9.]+ s: namespaces \[default kube-node-lease kube-public kube-system\]`).MatchString(out) {
		t.Errorf("no answering API server on loopback in the program's output:\n%s", out)
	}
	if left := processesUnder(tmpLo); len(left) > 0 {
		t.Errorf("running after Reset: %v", left)
	}
}

// processesUnder returns the command lines that name dir.
func processesUnder(dir string) []string {
	var found []string
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), dir) {
			found = append(found, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// copyFile links from at to, or copies it where they are on different
// filesystems.
func copyFile(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
