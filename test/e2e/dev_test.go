package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// processesNaming lists the live processes whose command line names s.
func processesNaming(s string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, pid)
		}
	}
	return out
}

func uidOf(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			return f[1]
		}
	}
	return ""
}

// TestDevUp runs `kubeboot dev up --mode control-plane` as nobody with
// the default root (under the user's cache directory): the API server
// answers and takes a namespace, the components run as nobody, a killed
// component is warned about and restarted, a `dev up --mode node` (as
// root) joins it and leaves on Ctrl-C, and Ctrl-C leaves no process and
// no file.
func TestDevUp(t *testing.T) {
	requireE2E(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already", n)
	}
	h := newHost(t, "kbe2e-dev", "10.213.0.2")
	home := filepath.Join(t.TempDir(), "home")
	for d := home; d != "/"; d = filepath.Dir(d) {
		if d == home {
			os.MkdirAll(d, 0o755)
			os.Chown(d, 65534, 65534)
		} else if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, st.Mode().Perm()|0o711) // nobody must reach its home
		}
	}
	root := filepath.Join(home, ".cache", "kubeboot", "dev")
	// nobody must be able to run the binary: a clone under a 0700 mktemp
	// directory keeps it out of reach, so a copy goes next to its home.
	bin := filepath.Join(filepath.Dir(home), "kubeboot")
	if out, err := exec.Command("cp", h.Binary, bin).CombinedOutput(); err != nil {
		t.Fatalf("copying the binary: %v %s", err, out)
	}
	os.Chmod(bin, 0o755)
	cmd := h.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin, "dev", "up", "--mode", "control-plane", "--node-name", "dev")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	var out nethost.LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := nethost.Start(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			cmd.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
			}
			for _, pid := range processesNaming(root) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			os.RemoveAll(root)
			t.Logf("dev up's output:\n%s", out.String())
		}
	}()
	eventually(t, 2*time.Minute, 200*time.Millisecond, "dev up prints the KUBECONFIG", func() error {
		select {
		case err := <-exited:
			t.Fatalf("dev up exited: %v\n%s", err, out.String())
		default:
		}
		if !strings.Contains(out.String(), "export KUBECONFIG="+root+"/etc/kubernetes/admin.conf") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	t.Logf("dev up --mode control-plane, unprivileged: up after %s", time.Since(start).Round(time.Millisecond))
	for _, want := range []string{"kube-apiserver", root + "/var/log/kubeboot/kube-apiserver.log", root + "/var/log/kubeboot/etcd.log"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dev up does not list %s:\n%s", want, out.String())
		}
	}
	kc := filepath.Join(root, "etc/kubernetes/admin.conf")
	kubectlDev := func(args ...string) string {
		t.Helper()
		o, err := nethost.Run(h.Command(h.Binary, append([]string{"kubectl", "--kubeconfig", kc}, args...)...))
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, o)
		}
		return o
	}
	if o := kubectlDev("get", "--raw", "/readyz"); strings.TrimSpace(o) != "ok" {
		t.Errorf("/readyz: %q", o)
	}
	kubectlDev("create", "namespace", "dev-test")
	// No add-on waits for a node here: no metrics-server whose APIService
	// would stay unavailable and keep a namespace from finishing deleting.
	if o, err := nethost.Run(h.Command(h.Binary, "kubectl", "--kubeconfig", kc, "get", "apiservice", "v1beta1.metrics.k8s.io")); err == nil || !strings.Contains(o, "NotFound") {
		t.Errorf("a control plane without nodes has the metrics APIService: %v\n%s", err, o)
	}
	took := time.Now()
	kubectlDev("delete", "namespace", "dev-test", "--timeout=60s")
	t.Logf("a namespace deleted in %s", time.Since(took).Round(100*time.Millisecond))

	r, err := daemon.ReadStatus(fsys.NewRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	var scheduler int
	for _, c := range r.Components {
		if uid := uidOf(c.PID); uid != "65534" {
			t.Errorf("%s (pid %d) runs as uid %q, want nobody's", c.Name, c.PID, uid)
		}
		if c.Name == "kube-scheduler" {
			scheduler = c.PID
		}
	}
	if scheduler == 0 {
		t.Fatalf("no kube-scheduler in %+v", r.Components)
	}
	syscall.Kill(scheduler, syscall.SIGKILL)
	eventually(t, 30*time.Second, 200*time.Millisecond, "a warning for the killed scheduler, and its restart", func() error {
		if !strings.Contains(out.String(), "[dev] WARNING: kube-scheduler exited") {
			return fmt.Errorf("no warning yet")
		}
		r, err := daemon.ReadStatus(fsys.NewRoot(root))
		if err != nil {
			return err
		}
		for _, c := range r.Components {
			if c.Name == "kube-scheduler" && c.Ready && c.PID != scheduler && c.Restarts == 1 {
				return nil
			}
		}
		return fmt.Errorf("not restarted yet")
	})

	t.Run("a node joins", func(t *testing.T) {
		nodeRoot := filepath.Join(t.TempDir(), "node")
		n := h.Command(h.Binary, "--root", nodeRoot, "dev", "up", "--mode", "node", "--control-plane-root", root, "--node-name", "devnode")
		var nout nethost.LockedBuffer
		n.Stdout, n.Stderr = &nout, &nout
		start := time.Now()
		if err := nethost.Start(n); err != nil {
			t.Fatal(err)
		}
		nexited := make(chan error, 1)
		go func() { nexited <- n.Wait() }()
		nstopped := false
		defer func() {
			if !nstopped {
				n.Process.Signal(os.Interrupt)
				select {
				case <-nexited:
				case <-time.After(2 * time.Minute):
					n.Process.Kill()
				}
			}
			if t.Failed() {
				nethost.Run(h.Kubeboot("--root", nodeRoot, "reset", "--force")) //nolint:errcheck
				t.Logf("dev up --mode node:\n%s", nout.String())
			}
		}()
		eventually(t, 2*time.Minute, 200*time.Millisecond, "the node joins and is Ready", func() error {
			select {
			case err := <-nexited:
				t.Fatalf("dev up --mode node exited: %v\n%s", err, nout.String())
			default:
			}
			o, err := nethost.Run(h.Command(h.Binary, "kubectl", "--kubeconfig", kc, "get", "node", "devnode", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`))
			if err != nil || o != "True" {
				return fmt.Errorf("Ready=%q %v", o, err)
			}
			return nil
		})
		t.Logf("dev up --mode node: Ready after %s", time.Since(start).Round(time.Millisecond))
		nstopped = true
		stopStart := time.Now()
		n.Process.Signal(os.Interrupt)
		select {
		case err := <-nexited:
			t.Logf("dev up --mode node: stopped and removed %s after Ctrl-C", time.Since(stopStart).Round(time.Millisecond))
			if err != nil {
				t.Errorf("dev up --mode node after Ctrl-C: %v\n%s", err, nout.String())
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("dev up --mode node did not stop:\n%s", nout.String())
		}
		if o, err := nethost.Run(h.Command(h.Binary, "kubectl", "--kubeconfig", kc, "get", "node", "devnode")); err == nil {
			t.Errorf("the node is still in the cluster after Ctrl-C:\n%s", o)
		}
		if _, err := os.Stat(nodeRoot); !os.IsNotExist(err) {
			t.Errorf("the node's root is left: %v", listAll(nodeRoot))
		}
	})

	stopped = true
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("dev up after Ctrl-C: %v\n%s", err, out.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("dev up did not stop after Ctrl-C:\n%s", out.String())
	}
	if pids := processesNaming(root); len(pids) > 0 {
		t.Errorf("processes left after Ctrl-C: %v", pids)
	}
	if _, err := os.Stat(filepath.Join(home, ".cache", "kubeboot")); !os.IsNotExist(err) {
		t.Errorf("files left after Ctrl-C: %v", listAll(filepath.Join(home, ".cache")))
	}
	t.Logf("dev up's output:\n%s", out.String())
}

// TestDevSwap swaps the scheduler of a real single-node cluster for a
// process started exactly as `dev print --format shell` prints it (with
// kubeboot's binary as the upstream kube-scheduler), checks that it
// schedules a pod, then hands the slot back.
func TestDevSwap(t *testing.T) {
	requireE2E(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already", n)
	}
	h := newHost(t, "kbe2e-swap", "10.214.0.2")
	kb(t, h, "init", "--node-name", "swap", "--single-node", "--skip-phases", "addon/coredns,addon/storage,addon/metrics-server")
	printed := kb(t, h, "dev", "print", "--format", "shell", "kube-scheduler")
	if !strings.Contains(printed, "kube-scheduler \\\n") || !strings.Contains(printed, "--kubeconfig="+h.Root+"/etc/kubernetes/scheduler.conf") {
		t.Fatalf("dev print:\n%s", printed)
	}
	for _, f := range []string{"json", "vscode", "goland", "dlv"} {
		o := kb(t, h, "dev", "print", "--format", f, "kube-scheduler")
		if f == "json" || f == "vscode" {
			var v any
			if err := json.Unmarshal([]byte(o), &v); err != nil {
				t.Errorf("--format %s is not JSON: %v\n%s", f, err, o)
			}
		}
	}

	// `status --watch` shows each change as it happens; -o json is the
	// same as data.
	watch := h.Kubeboot("status", "--watch")
	var watchOut nethost.LockedBuffer
	watch.Stdout, watch.Stderr = &watchOut, &watchOut
	if err := nethost.Start(watch); err != nil {
		t.Fatal(err)
	}
	defer func() {
		watch.Process.Kill()
		watch.Wait()
	}()
	var asData struct {
		Node   struct{ Name string }
		Status struct {
			PID        int
			Components []struct{ Name, State string }
		}
	}
	if o := kb(t, h, "status", "-o", "json"); json.Unmarshal([]byte(o), &asData) != nil || asData.Node.Name != "swap" || asData.Status.PID == 0 || len(asData.Status.Components) == 0 {
		t.Errorf("status -o json:\n%s", o)
	}

	// The swap waits for our process to answer the probe.
	swap := h.Kubeboot("dev", "swap", "kube-scheduler")
	var swapOut nethost.LockedBuffer
	swap.Stdout, swap.Stderr = &swapOut, &swapOut
	if err := nethost.Start(swap); err != nil {
		t.Fatal(err)
	}
	swapDone := make(chan error, 1)
	go func() { swapDone <- swap.Wait() }()
	eventually(t, 30*time.Second, 100*time.Millisecond, "the daemon hands the slot over", func() error {
		if !strings.Contains(swapOut.String(), "Waiting for your kube-scheduler") {
			return fmt.Errorf("not yet: %s", swapOut.String())
		}
		return nil
	})
	if st := kb(t, h, "status"); !strings.Contains(grepLines(st, "kube-scheduler"), "swapped") {
		t.Errorf("status does not show the scheduler swapped:\n%s", st)
	}
	eventually(t, 10*time.Second, 100*time.Millisecond, "status --watch shows the swap", func() error {
		_, changes, _ := strings.Cut(watchOut.String(), "Changes (until interrupted):")
		if !strings.Contains(grepLines(changes, "kube-scheduler"), "swapped") {
			return fmt.Errorf("not yet:\n%s", watchOut.String())
		}
		t.Logf("status --watch, the swap:\n%s", grepLines(changes, "kube-scheduler"))
		return nil
	})
	pod := func(name string) {
		f := filepath.Join(t.TempDir(), name+".yaml")
		os.WriteFile(f, []byte(fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers: [{name: c, image: %s, imagePullPolicy: IfNotPresent}]\n", name, images.TestServer)), 0o644)
		kubectl(t, h, "create", "-f", f)
	}
	scheduled := func(name string) func() error {
		return func() error {
			o, err := kubectlErr(h, "get", "pod", name, "-o", "jsonpath={.spec.nodeName}")
			if err != nil || strings.TrimSpace(o) != "swap" {
				return fmt.Errorf("not scheduled: %q %v", o, err)
			}
			return nil
		}
	}
	pod("before")
	time.Sleep(2 * time.Second)
	if scheduled("before")() == nil {
		t.Fatal("a pod was scheduled while no scheduler ran")
	}

	// Ours, exactly as printed, kubeboot's binary standing in for the
	// upstream kube-scheduler.
	bin := t.TempDir()
	if err := os.Symlink(h.Binary, filepath.Join(bin, "kube-scheduler")); err != nil {
		t.Fatal(err)
	}
	script := strings.Join(strings.Split(printed, "\n")[1:], "\n") // without the comment line
	mine := h.Command("sh", "-c", script)
	mine.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
	mine.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var mineOut nethost.LockedBuffer
	mine.Stdout, mine.Stderr = &mineOut, &mineOut
	if err := nethost.Start(mine); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-mine.Process.Pid, syscall.SIGKILL)
	select {
	case err := <-swapDone:
		if err != nil || !strings.Contains(swapOut.String(), "Your kube-scheduler answers its readiness probe") {
			t.Fatalf("dev swap: %v\n%s\nour scheduler:\n%s", err, swapOut.String(), lastLines(mineOut.String(), 20))
		}
	case <-time.After(90 * time.Second):
		swap.Process.Kill()
		t.Fatalf("dev swap did not see our scheduler:\n%s\nour scheduler:\n%s", swapOut.String(), lastLines(mineOut.String(), 20))
	}
	took := eventually(t, 60*time.Second, 200*time.Millisecond, "our scheduler schedules the pod", scheduled("before"))
	t.Logf("our kube-scheduler scheduled the pod %s after it answered", took.Round(time.Millisecond))

	// Back to the daemon.
	syscall.Kill(-mine.Process.Pid, syscall.SIGTERM)
	mine.Wait()
	o := kb(t, h, "dev", "restore", "kube-scheduler")
	if !strings.Contains(o, "runs kube-scheduler again") {
		t.Errorf("dev restore: %s", o)
	}
	r := readStatus(t, h)
	for _, c := range r.Components {
		if c.Name == "kube-scheduler" && (c.State == daemon.StateSwapped || c.PID == 0) {
			t.Errorf("after restore: %+v", c)
		}
	}
	pod("after")
	eventually(t, 60*time.Second, 200*time.Millisecond, "the daemon's scheduler schedules the next pod", scheduled("after"))

	// With --wait, Ctrl-C hands the slot back.
	w := h.Kubeboot("dev", "swap", "--wait", "kube-scheduler")
	var wOut nethost.LockedBuffer
	w.Stdout, w.Stderr = &wOut, &wOut
	if err := nethost.Start(w); err != nil {
		t.Fatal(err)
	}
	wDone := make(chan error, 1)
	go func() { wDone <- w.Wait() }()
	eventually(t, 30*time.Second, 100*time.Millisecond, "dev swap --wait waits for our process", func() error {
		if !strings.Contains(wOut.String(), "Waiting for your kube-scheduler") {
			return fmt.Errorf("not yet: %s", wOut.String())
		}
		return nil
	})
	w.Process.Signal(os.Interrupt)
	select {
	case err := <-wDone:
		if err != nil || !strings.Contains(wOut.String(), "The node daemon runs kube-scheduler again") {
			t.Errorf("dev swap --wait after Ctrl-C: %v\n%s", err, wOut.String())
		}
	case <-time.After(2 * time.Minute):
		w.Process.Kill()
		t.Fatalf("dev swap --wait did not end on Ctrl-C:\n%s", wOut.String())
	}
	for _, c := range readStatus(t, h).Components {
		if c.Name == "kube-scheduler" && (c.State == daemon.StateSwapped || !c.Ready) {
			t.Errorf("after Ctrl-C on dev swap --wait: %+v", c)
		}
	}
	t.Logf("dev swap's output:\n%s", swapOut.String())
}

// devUpRun is a running `kubeboot dev up`.
type devUpRun struct {
	cmd    *exec.Cmd
	out    *nethost.LockedBuffer
	exited chan error
}

func startDevUp(t *testing.T, h *nethost.Host, args ...string) *devUpRun {
	t.Helper()
	r := &devUpRun{cmd: h.Command(h.Binary, append([]string{"dev", "up"}, args...)...), out: &nethost.LockedBuffer{}, exited: make(chan error, 1)}
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := nethost.Start(r.cmd); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	eventually(t, 3*time.Minute, 200*time.Millisecond, "dev up "+strings.Join(args, " ")+" is up", func() error {
		select {
		case err := <-r.exited:
			t.Fatalf("dev up exited: %v\n%s", err, r.out.String())
		default:
		}
		if !strings.Contains(r.out.String(), "export KUBECONFIG=") {
			return fmt.Errorf("not yet; its output so far:\n%s", r.out.String())
		}
		return nil
	})
	return r
}

// stop is Ctrl-C, and waits for dev up to end.
func (r *devUpRun) stop(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	r.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-r.exited:
		if err != nil {
			t.Errorf("dev up after Ctrl-C: %v\n%s", err, r.out.String())
		}
	case <-time.After(3 * time.Minute):
		r.cmd.Process.Kill()
		t.Fatalf("dev up did not stop after Ctrl-C:\n%s", r.out.String())
	}
	return time.Since(start)
}

// TestDevUpAllPreserveData runs `dev up --mode all --preserve-data` (a
// whole single-node cluster), stops it with Ctrl-C, and brings the
// control plane back from the data it kept: an object made in the first
// run is there in the second.
func TestDevUpAllPreserveData(t *testing.T) {
	requireE2E(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already", n)
	}
	h := newHost(t, "kbe2e-devall", "10.215.0.2")
	root := filepath.Join(t.TempDir(), "dev")
	start := time.Now()
	first := startDevUp(t, h, "--root", root, "--mode", "all", "--preserve-data", "--node-name", "dev")
	t.Logf("dev up --mode all: up after %s", time.Since(start).Round(time.Millisecond))
	kc := filepath.Join(root, "etc/kubernetes/admin.conf")
	kubectlDev := func(args ...string) (string, error) {
		return nethost.Run(h.Command(h.Binary, append([]string{"kubectl", "--kubeconfig", kc}, args...)...))
	}
	eventually(t, time.Minute, 200*time.Millisecond, "the node Ready", func() error {
		o, err := kubectlDev("get", "node", "dev", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || o != "True" {
			return fmt.Errorf("Ready=%q %v", o, err)
		}
		return nil
	})
	if o, err := kubectlDev("create", "configmap", "kept", "--from-literal=run=first"); err != nil {
		t.Fatalf("%v: %s", err, o)
	}
	t.Logf("dev up --mode all: stopped after %s", first.stop(t).Round(time.Millisecond))
	if got := listAll(root); len(got) == 0 || slices.ContainsFunc(got, func(f string) bool {
		rel := strings.TrimPrefix(f, root+"/")
		return !slices.Contains([]string{"etc", "etc/kubernetes", "var", "var/lib"}, rel) &&
			!strings.HasPrefix(rel, "var/lib/etcd") && !strings.HasPrefix(rel, "etc/kubernetes/pki")
	}) {
		t.Errorf("--preserve-data left %v; want only var/lib/etcd and etc/kubernetes/pki", got)
	}
	if pids := processesNaming(root); len(pids) > 0 {
		t.Errorf("processes left after Ctrl-C: %v", pids)
	}

	second := startDevUp(t, h, "--root", root, "--mode", "control-plane", "--node-name", "dev")
	if !strings.Contains(second.out.String(), "Using the data a previous `dev up --preserve-data` kept") {
		t.Errorf("the second dev up does not say it reuses the data:\n%s", second.out.String())
	}
	if o, err := kubectlDev("get", "configmap", "kept", "-o", "jsonpath={.data.run}"); err != nil || o != "first" {
		t.Errorf("the object of the first run: %q %v", o, err)
	}
	second.stop(t)
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("left after Ctrl-C without --preserve-data: %v", listAll(root))
	}
}
