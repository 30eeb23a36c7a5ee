// Command cis runs kube-bench (Aqua Security's implementation of the CIS
// Kubernetes Benchmark) against a kubeboot control-plane node made with
// `kubeboot init` and with `kubeboot init --hardened`, and prints which
// checks pass in each: the reference for what --hardened buys.
//
// kube-bench is not a dependency of kubeboot; build it once, from the Go
// module proxy (sum.golang.org is not reachable from the test machine,
// hence GOSUMDB=off for this one tool):
//
//	GOSUMDB=off go mod download github.com/aquasecurity/kube-bench@v0.14.0
//	cp -r $(go env GOMODCACHE)/github.com/aquasecurity/kube-bench@v0.14.0 /tmp/kube-bench-src
//	chmod -R u+w /tmp/kube-bench-src
//	(cd /tmp/kube-bench-src && GOSUMDB=off GOFLAGS=-mod=mod go build -o /tmp/kube-bench .)
//	go run ./bench/cis -kube-bench /tmp/kube-bench -cfg /tmp/kube-bench-src/cfg   (as root, after `make build`)
//
// kube-bench finds the components by process name (kubeboot runs each
// through a link named after it) and reads their flags from ps; its file
// checks are pointed at kubeboot's layout under the host's root: the
// component spec files stand where kubeadm's static pod manifests would.
// Nothing else runs kube-apiserver or a kubelet on the machine meanwhile,
// or kube-bench would read theirs.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/test/nethost"
)

func main() {
	kubeBench := flag.String("kube-bench", "/tmp/kube-bench", "the kube-bench binary")
	cfgDir := flag.String("cfg", "/tmp/kube-bench-src/cfg", "kube-bench's cfg directory (from its source)")
	benchmark := flag.String("benchmark", "cis-1.11", "the CIS benchmark version kube-bench checks against")
	flag.Parse()
	if err := run(*kubeBench, *cfgDir, *benchmark); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type result struct {
	ID, Text, Status string
	Scored           bool
}

func run(kubeBench, cfgDir, benchmark string) error {
	if _, err := os.Stat(kubeBench); err != nil {
		return fmt.Errorf("kube-bench: %v (see the build steps at the top of bench/cis/main.go)", err)
	}
	if n := len(nethost.PodProcesses()); n != 0 {
		return fmt.Errorf("%d pod processes run on this machine: kube-bench would read another node's components", n)
	}
	bin, err := benchutil.Binary()
	if err != nil {
		return err
	}
	if err := nethost.BecomeSubreaper(); err != nil {
		return err
	}
	modes := []struct {
		name  string
		flags []string
	}{{"init", nil}, {"init --hardened", []string{"--hardened"}}}
	results := make([]map[string]result, len(modes))
	for i, m := range modes {
		r, err := runOne(bin, kubeBench, cfgDir, benchmark, m.flags)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		results[i] = r
	}
	var ids []string
	for id := range results[0] {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return versionLess(ids[a], ids[b]) })

	fmt.Printf("\nkube-bench %s, targets master, controlplane, etcd, node; one kubeboot control-plane node\n\n", benchmark)
	fmt.Printf("| | %s | %s |\n|---|---|---|\n", modes[0].name, modes[1].name)
	for _, st := range []string{"PASS", "FAIL", "WARN", "INFO"} {
		fmt.Printf("| %s | %d | %d |\n", st, count(results[0], st), count(results[1], st))
	}
	fmt.Printf("\nChecks whose result --hardened changes:\n\n| check | %s | %s | |\n|---|---|---|---|\n", modes[0].name, modes[1].name)
	for _, id := range ids {
		a, b := results[0][id], results[1][id]
		if a.Status != b.Status {
			fmt.Printf("| %s | %s | %s | %s |\n", id, a.Status, b.Status, a.Text)
		}
	}
	fmt.Printf("\nChecks that still FAIL with --hardened:\n\n")
	for _, id := range ids {
		if r := results[1][id]; r.Status == "FAIL" {
			fmt.Printf("- %s %s\n", id, r.Text)
		}
	}
	return nil
}

func count(rs map[string]result, status string) int {
	n := 0
	for _, r := range rs {
		if r.Status == status {
			n++
		}
	}
	return n
}

// versionLess orders "1.2.10" after "1.2.9".
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		var x, y int
		fmt.Sscan(as[i], &x)
		fmt.Sscan(bs[i], &y)
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

func runOne(bin, kubeBench, cfgDir, benchmark string, initFlags []string) (map[string]result, error) {
	dir, err := os.MkdirTemp("", "kubeboot-cis-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	h, err := nethost.New("kbbench-cis", "10.212.0.2", filepath.Join(dir, "root"), bin)
	if err != nil {
		return nil, err
	}
	defer func() {
		nethost.Run(h.Kubeboot("reset", "--force")) //nolint:errcheck
		h.Close()
	}()
	out, err := nethost.Run(h.Kubeboot(append([]string{"init", "--node-name", "cis"}, initFlags...)...))
	if err != nil {
		return nil, fmt.Errorf("init: %v\n%s", err, out)
	}
	// The kubelet's serving certificate (with --hardened) is approved
	// within a second or two of init's end.
	time.Sleep(5 * time.Second)
	cfg, err := kubebootConfig(cfgDir, h.Root, filepath.Join(dir, "cfg"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(kubeBench, "--config-dir", cfg, "--benchmark", benchmark, "run", "--targets", "master,controlplane,etcd,node", "--json")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(h.Root, "etc/kubernetes/admin.conf"))
	b, err := cmd.Output()
	if err != nil && len(b) == 0 {
		return nil, fmt.Errorf("kube-bench: %v", err)
	}
	var report struct {
		Controls []struct {
			Groups []struct {
				Checks []struct {
					ID     string `json:"test_number"`
					Text   string `json:"test_desc"`
					Status string `json:"status"`
					Scored bool   `json:"scored"`
				} `json:"results"`
			} `json:"tests"`
		} `json:"Controls"`
	}
	if err := json.Unmarshal(b, &report); err != nil {
		return nil, fmt.Errorf("reading kube-bench's report: %v\n%.2000s", err, b)
	}
	rs := map[string]result{}
	for _, c := range report.Controls {
		for _, g := range c.Groups {
			for _, ch := range g.Checks {
				rs[ch.ID] = result{ID: ch.ID, Text: ch.Text, Status: ch.Status, Scored: ch.Scored}
			}
		}
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("kube-bench ran no check:\n%.2000s", b)
	}
	return rs, nil
}

// kubebootConfig copies kube-bench's cfg directory to dst with its
// config.yaml pointing every file of the components at kubeboot's layout
// under root: the component specs where kubeadm has static pod manifests,
// and kubeadm's kubeconfig, PKI, etcd and kubelet paths under the root.
func kubebootConfig(src, root, dst string) (string, error) {
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copying %s: %v %s", src, err, out)
	}
	b, err := os.ReadFile(filepath.Join(dst, "config.yaml"))
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return "", err
	}
	p := func(nodePath string) string { return filepath.Join(root, nodePath) }
	spec := func(name string) string { return p("/etc/kubernetes/kubeboot/components/" + name + ".json") }
	set := func(section, component string, kv map[string]any) {
		s, _ := cfg[section].(map[string]any)
		c, _ := s[component].(map[string]any)
		if c == nil {
			return
		}
		for k, v := range kv {
			c[k] = v
		}
	}
	for _, section := range []string{"master", "controlplane"} {
		set(section, "apiserver", map[string]any{"confs": []string{spec("kube-apiserver")}, "defaultconf": spec("kube-apiserver")})
	}
	set("master", "scheduler", map[string]any{"confs": []string{spec("kube-scheduler")}, "defaultconf": spec("kube-scheduler"),
		"kubeconfig": []string{p("/etc/kubernetes/scheduler.conf")}, "defaultkubeconfig": p("/etc/kubernetes/scheduler.conf")})
	set("master", "controllermanager", map[string]any{"confs": []string{spec("kube-controller-manager")}, "defaultconf": spec("kube-controller-manager"),
		"kubeconfig": []string{p("/etc/kubernetes/controller-manager.conf")}, "defaultkubeconfig": p("/etc/kubernetes/controller-manager.conf")})
	for _, section := range []string{"master", "etcd"} {
		set(section, "etcd", map[string]any{"confs": []string{spec("etcd")}, "defaultconf": spec("etcd"),
			"datadirs": []string{p("/var/lib/etcd")}, "defaultdatadir": p("/var/lib/etcd")})
	}
	set("node", "kubelet", map[string]any{
		"cafile": []string{p("/etc/kubernetes/pki/ca.crt")}, "defaultcafile": p("/etc/kubernetes/pki/ca.crt"),
		"svc": []string{spec("kubelet")}, "defaultsvc": spec("kubelet"),
		"kubeconfig": []string{p("/etc/kubernetes/kubelet.conf")}, "defaultkubeconfig": p("/etc/kubernetes/kubelet.conf"),
		"confs": []string{p("/var/lib/kubelet/config.yaml")}, "defaultconf": p("/var/lib/kubelet/config.yaml"),
	})
	set("node", "proxy", map[string]any{
		"confs": []string{spec("kube-proxy")}, "defaultconf": spec("kube-proxy"),
		"kubeconfig": []string{p("/etc/kubernetes/kube-proxy.conf")}, "defaultkubeconfig": p("/etc/kubernetes/kube-proxy.conf"),
	})
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dst, "config.yaml"), out, 0o644); err != nil {
		return "", err
	}
	// Some audits name kubeadm's paths outright (admin.conf, the PKI
	// directory): the node's are under its root.
	files, _ := filepath.Glob(filepath.Join(dst, "*", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		b = []byte(strings.ReplaceAll(string(b), " /etc/kubernetes/", " "+root+"/etc/kubernetes/"))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return "", err
		}
	}
	return dst, nil
}
