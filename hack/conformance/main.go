// Command conformance brings up a kubeboot cluster in network-namespace
// hosts on this machine and runs the upstream conformance suite against it
// offline, through ../shared/conformance/run.sh, which builds e2e.test and
// the test images once. The cluster is removed at the end.
//
// By default the images reach the nodes as an air-gapped site's would: a
// distribution registry (hack/registry) runs on the control-plane host,
// the images are pushed into it under their upstream names
// (registry.k8s.io/e2e-test-images/agnhost:..., as the e2e suite's image
// manifest names them), every node is made with --registry-mirror for
// those registries, and the suite runs with its own image names: nothing
// is renamed, and the kubelet pulls each image through the mirror. With -registry=false the harness's
// own way is used instead: images imported into every node and every
// reference of the suite renamed to local.test/....
//
//	go run ./hack/conformance                       # 1 control plane + 2 workers, every non-serial [Conformance] spec
//	go run ./hack/conformance -nodes 1 -focus '\[sig-network\].*\[Conformance\]'
//	go run ./hack/conformance -serial               # the Serial [Conformance] specs, one at a time
//	go run ./hack/conformance -fast                 # the subset hack/test.sh runs (about 1.5 min)
//
// As root, after `make build`. The last line is run.sh's
// "conformance: N passed, M failed, K skipped".
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kubeboot/kubeboot/test/nethost"
)

func main() {
	nodes := flag.Int("nodes", 3, "1 (a single node that runs workloads) or more (1 control plane, the rest workers)")
	focus := flag.String("focus", `\[Conformance\]`, "ginkgo focus regex")
	skip := flag.String("skip", "", "ginkgo skip regex (default: Serial|Disruptive|Flaky, or Disruptive|Flaky with -serial)")
	serial := flag.Bool("serial", false, "run the Serial specs (one at a time): focus on Serial.*[Conformance]")
	parallel := flag.Int("parallel", 4, "ginkgo processes (1 with -serial)")
	harness := flag.String("harness", "../shared/conformance", "the offline conformance harness")
	keep := flag.Bool("keep", false, "leave the cluster up at the end (remove it with `kubeboot reset` on each host)")
	useRegistry := flag.Bool("registry", true, "pull the test images through a registry mirror under their upstream names (false: import them into each node, renamed to local.test/...)")
	push := flag.String("push", "", "internal: push the docker archives given as arguments to the registry at HOST:PORT under their upstream names, and exit")
	fast := flag.Bool("fast", false, "only the fast subset the test command runs: Services, DNS, pod networking, exec and logs over websockets, kubectl logs, a lifecycle hook, pod submission and removal, two schedulable nodes")
	dualStack := flag.Bool("dual-stack", false, "a dual-stack cluster: hosts with an IPv6 address besides their IPv4 one, init with a pod and a service network of each family (for the [Feature:IPv6DualStack] specs)")
	flag.Parse()
	if *push != "" {
		if err := runPush(*push, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "conformance:", err)
			os.Exit(1)
		}
		return
	}
	if *fast {
		*focus = fastSubset
	}
	if *serial {
		// Upstream names put the tags in either order ("[Conformance] [Serial]").
		*focus, *parallel = `\[Conformance\].*\[Serial\]|\[Serial\].*\[Conformance\]`, 1
		if *skip == "" {
			*skip = "Disruptive|Flaky"
		}
	}
	if *skip == "" {
		*skip = "Serial|Disruptive|Flaky"
	}
	if err := run(*nodes, *focus, *skip, *parallel, *harness, *keep, *useRegistry, *dualStack); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

// fastSubset is a focus of ~11 [Conformance] specs that exercise what a
// change to kubeboot breaks first, on 1 control plane + 2 workers: it runs
// in about a minute and a half once the harness is built.
const fastSubset = `should have at least two untainted nodes|DNS should provide DNS for services \[Conformance\]|` +
	`intra-pod communication: http \[|should be able to create a functioning NodePort service|should serve a basic endpoint from pods|` +
	`remote command execution over websockets|retrieving logs from the container over websockets|should be able to retrieve and filter logs|` +
	`should execute poststart exec hook properly|Pods should be submitted and removed`

// lastLines keeps the last 4 KiB written to it.
type lastLines struct{ b []byte }

func (l *lastLines) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	if len(l.b) > 4096 {
		l.b = l.b[len(l.b)-4096:]
	}
	return len(p), nil
}

func (l *lastLines) String() string { return string(l.b) }

func run(n int, focus, skip string, parallel int, harness string, keep, useRegistry, dualStack bool) error {
	bin, err := filepath.Abs("_output/kubeboot")
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		return fmt.Errorf("build kubeboot first: make build")
	}
	runSh, err := filepath.Abs(filepath.Join(harness, "run.sh"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(runSh); err != nil {
		return fmt.Errorf("the harness: %v (give -harness)", err)
	}
	if err := nethost.BecomeSubreaper(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kubeboot-conformance-")
	if err != nil {
		return err
	}
	network, err := nethost.NewNetwork("kbconf-net")
	if err != nil {
		return err
	}
	var hosts []*nethost.Host
	var reg *registry
	defer func() {
		if keep {
			fmt.Printf("[conformance] The cluster stays up under %s\n", dir)
			if reg != nil {
				fmt.Printf("[conformance] and its registry, pid %d (kill it when done)\n", reg.cmd.Process.Pid)
			}
			return
		}
		if reg != nil {
			reg.stop()
		}
		for i := len(hosts) - 1; i >= 0; i-- {
			nethost.Run(hosts[i].Kubeboot("reset", "--force")) //nolint:errcheck
			hosts[i].Close()
		}
		network.Close()
		os.RemoveAll(dir)
	}()
	for i := 0; i < n; i++ {
		name := "cp"
		if i > 0 {
			name = fmt.Sprintf("w%d", i)
		}
		o := nethost.Options{Network: network}
		if dualStack {
			o.IPv6 = fmt.Sprintf("fd00:217::%d", i+2)
		}
		h, err := nethost.NewWith("kbconf-"+name, fmt.Sprintf("10.217.0.%d", i+2), filepath.Join(dir, name), bin, o)
		if err != nil {
			return err
		}
		hosts = append(hosts, h)
	}
	cp := hosts[0]
	var mirrors []string
	if useRegistry {
		// The harness's images first (cached after the first run): their
		// names say which registries the nodes need a mirror for.
		build := func() ([]byte, error) {
			cmd := exec.Command(filepath.Join(filepath.Dir(runSh), "build.sh"))
			cmd.Stderr = os.Stderr
			return cmd.Output()
		}
		out, err := build()
		if err != nil {
			// The harness's first build can end in a SIGPIPE of its own
			// (exit 141: `busybox | head -1` under pipefail, after the
			// busybox it built is in place); what it built is cached, so
			// a second run goes on from there.
			fmt.Fprintf(os.Stderr, "[conformance] the harness's build.sh: %v; running it once more, on what it cached\n", err)
			out, err = build()
		}
		if err != nil {
			return fmt.Errorf("the harness's build.sh: %v", err)
		}
		registries, err := mirroredRegistries(filepath.Join(strings.TrimSpace(string(out)), "images/list.txt"))
		if err != nil {
			return err
		}
		if reg, err = startRegistry(cp, dir); err != nil {
			return err
		}
		for _, r := range registries {
			mirrors = append(mirrors, "--registry-mirror", r+"=http://"+reg.addr)
		}
		fmt.Printf("[conformance] registry on %s, the mirror of %s\n", reg.addr, strings.Join(registries, ", "))
	}
	args := append([]string{"init", "--node-name", "cp"}, mirrors...)
	if n == 1 {
		args = append(args, "--single-node")
	}
	if dualStack {
		args = append(args, "--pod-network-cidr", "10.244.0.0/16,fd00:10:244::/56", "--service-cidr", "10.96.0.0/16,fd00:10:96::/112")
	}
	fmt.Printf("[conformance] kubeboot %s\n", strings.Join(args, " "))
	out, err := nethost.Run(cp.Kubeboot(args...))
	if err != nil {
		return fmt.Errorf("init: %v\n%s", err, out)
	}
	j, ok := nethost.ParseJoin(out)
	if !ok {
		return fmt.Errorf("no join command in init's output:\n%s", out)
	}
	for i, h := range hosts[1:] {
		name := fmt.Sprintf("w%d", i+1)
		fmt.Printf("[conformance] kubeboot join on %s\n", name)
		join := append([]string{"join", cp.IP + ":6443", "--token", j.Token, "--discovery-token-ca-cert-hash", j.Hash, "--node-name", name}, mirrors...)
		if out, err := nethost.Run(h.Kubeboot(join...)); err != nil {
			return fmt.Errorf("join %s: %v\n%s", name, err, out)
		}
	}
	// The harness's import command: with the registry, a push of the
	// archive into it (by this program, from inside the control-plane
	// host); without, a script that imports the archive into each node's
	// containerd in turn.
	var script strings.Builder
	script.WriteString("#!/bin/sh\nset -e\n")
	e2eArgs := os.Getenv("E2E_ARGS")
	if !strings.Contains(e2eArgs, "-num-nodes") { // -num-nodes or --num-nodes
		// The nodes that run workloads (a lone node, or the workers), which
		// e2e.test is not told otherwise: specs that need two of them
		// would skip ("Requires at least 2 nodes (not -1)").
		e2eArgs += " --num-nodes=" + strconv.Itoa(max(1, n-1))
	}
	if reg != nil {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		fmt.Fprintf(&script, "exec nsenter -t %d -n -- %s -push %s \"$1\"\n", cp.HolderPID(), self, reg.addr)
		// The suite's own image names: an empty repo list, after the
		// harness's, leaves every name as upstream has it.
		e2eArgs += " --kube-test-repo-list="
	} else {
		for _, h := range hosts {
			fmt.Fprintf(&script, "nsenter -t %d -m -n -- %s --root %s images import \"$1\"\n", h.HolderPID(), bin, h.Root)
		}
	}
	importer := filepath.Join(dir, "import.sh")
	if err := os.WriteFile(importer, []byte(script.String()), 0o755); err != nil {
		return err
	}
	cmd := exec.Command(runSh, filepath.Join(cp.Root, "etc/kubernetes/admin.conf"), importer, focus, skip)
	cmd.Env = append(os.Environ(), "E2E_PREFIX=nsenter -t "+strconv.Itoa(cp.HolderPID())+" -m -n --", "PARALLEL="+strconv.Itoa(parallel), "E2E_ARGS="+e2eArgs)
	var tail lastLines
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, &tail), os.Stderr
	fmt.Printf("[conformance] %d node(s); focus %q, skip %q, %d in parallel; e2e.test flags %q\n", n, focus, skip, parallel, strings.TrimSpace(e2eArgs))
	err = cmd.Run()
	if m := reportFile.FindStringSubmatch(tail.String()); m != nil {
		if perr := printBySIG(m[1], os.Stdout); perr != nil {
			fmt.Printf("[conformance] counts by SIG: %v\n", perr)
		}
	}
	if reg != nil {
		reportPulls(reg)
	}
	if err != nil {
		return err
	}
	return verdict(tail.String(), focus, skip)
}

// reportFile is the JUnit report run.sh names above its summary.
var reportFile = regexp.MustCompile(`; report: (\S+\.xml)\)`)

var summary = regexp.MustCompile(`conformance: (\d+) passed, (\d+) failed, (\d+) skipped`)

// verdict reads run.sh's last line, whose exit code does not say whether
// specs failed: a failed spec, no summary, or a focus that matched nothing
// must not pass for a green run.
func verdict(out, focus, skip string) error {
	m := summary.FindAllStringSubmatch(out, -1)
	if m == nil {
		return fmt.Errorf("run.sh printed no \"conformance: N passed, M failed\" line")
	}
	last := m[len(m)-1]
	switch {
	case last[2] != "0":
		return fmt.Errorf("%s of the specs failed (listed above)", last[2])
	case last[1] == "0":
		return fmt.Errorf("no spec ran: the focus %q matches none that the skip %q leaves", focus, skip)
	}
	return nil
}

// reportPulls prints how many pulls of each image reached the mirror.
func reportPulls(r *registry) {
	pulls, err := r.pulls()
	if err != nil {
		fmt.Printf("[conformance] the registry's log: %v\n", err)
		return
	}
	var names []string
	total := 0
	for n, c := range pulls {
		names = append(names, fmt.Sprintf("%s %d", n, c))
		total += c
	}
	sort.Strings(names)
	fmt.Printf("[conformance] %d pulls through the mirror: %s\n", total, strings.Join(names, ", "))
}
