// Command sidebyside measures a kubeboot node and an upstream kubeadm node
// back to back on the same machine, the same way, and prints kubeboot's
// figures as ratios of kubeadm's (issue 31's goals):
//
//   - init → API ready, node Ready and CoreDNS Ready, as one waiter sees
//     them from init's start (the peers' kpeer-waiter, on both);
//   - the idle footprint -idle after init returned: the PSS of every
//     process of the node (all in its network namespace, and their
//     descendants: the pods), by part;
//   - a burst of -pods test-server pods: CPU, startup p50/p99 and memory
//     per pod (package burst, as bench/node).
//
// The kubeadm node is ../shared/peers/kubeadm-peer.sh's: upstream kubeadm
// v1.37.2 `init` with locally built images in a network namespace (it needs
// Debian's containerd and containernetworking-plugins). The kubeboot node
// is `kubeboot init --single-node` as the README's user runs it, in a
// network-namespace host. kubeboot's test-server image is imported into the
// peer's containerd for the burst (after its idle footprint is read).
//
// Pairs alternate their order (kubeadm first, then kubeboot first).
//
//	go run ./bench/sidebyside [-runs N] [-pods 50] [-idle 60s] [-kubeboot-flags "..."]
//	go run ./bench/sidebyside -netns NAME -kubeconfig FILE   # any running node: footprint and burst
//
// As root, after `make build`, with no other cluster on the machine.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/bench/internal/burst"
	"github.com/kubeboot/kubeboot/test/nethost"
)

func main() {
	runs := flag.Int("runs", 1, "pairs of runs, kubeadm's then kubeboot's, each on a fresh host")
	pods := flag.Int("pods", 50, "test-server pods in the burst (0: none)")
	idle := flag.Duration("idle", 60*time.Second, "wait after init returned before reading the footprint")
	peers := flag.String("peers", "", "the peers directory (default: $KUBEBOOT_SHARED/peers, else ../shared/peers)")
	kbFlags := flag.String("kubeboot-flags", "", "more flags for kubeboot init (a lever to measure)")
	only := flag.String("only", "", "measure only kubeadm or only kubeboot (figures, no ratios)")
	netns := flag.String("netns", "", "measure a running node instead: its network namespace (/run/netns/NAME)")
	kubeconfig := flag.String("kubeconfig", "", "with -netns: the node's cluster's kubeconfig")
	flag.Parse()
	var err error
	if *netns != "" {
		err = measureRunning(*netns, *kubeconfig, *pods)
	} else {
		err = sideBySide(*runs, *pods, *idle, peersDir(*peers), strings.Fields(*kbFlags), *only)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func peersDir(flagged string) string {
	if flagged != "" {
		return flagged
	}
	if s := os.Getenv("KUBEBOOT_SHARED"); s != "" {
		return filepath.Join(s, "peers")
	}
	return "../shared/peers"
}

// figures is what one node measured.
type figures struct {
	// From init's start, as the waiter saw them.
	readyz, nodeReady, dnsReady, initExit time.Duration
	idle                                  benchutil.Idle
	burst                                 burst.Result
}

func sideBySide(runs, pods int, idle time.Duration, peers string, kbFlags []string, only string) error {
	bin, err := benchutil.Binary()
	if err != nil {
		return err
	}
	if err := nethost.BecomeSubreaper(); err != nil {
		return err
	}
	var kubeadm, kubeboot []figures
	for i := 0; i < runs; i++ {
		measure := []func() error{
			func() error {
				if only == "kubeboot" {
					return nil
				}
				fmt.Printf("\n=== run %d: kubeadm (%s/kubeadm-peer.sh)\n", i+1, peers)
				f, err := measureKubeadm(peers, bin, pods, idle)
				if err != nil {
					return fmt.Errorf("kubeadm: %w", err)
				}
				kubeadm = append(kubeadm, f)
				return nil
			},
			func() error {
				if only == "kubeadm" {
					return nil
				}
				fmt.Printf("\n=== run %d: kubeboot init --single-node %s\n", i+1, strings.Join(kbFlags, " "))
				f, err := measureKubeboot(peers, bin, kbFlags, pods, idle)
				if err != nil {
					return fmt.Errorf("kubeboot: %w", err)
				}
				kubeboot = append(kubeboot, f)
				return nil
			},
		}
		// Every other pair runs kubeboot first: a machine that slows
		// down or speeds up over a session weighs on both.
		if i%2 == 1 {
			measure[0], measure[1] = measure[1], measure[0]
		}
		for _, m := range measure {
			if err := m(); err != nil {
				return err
			}
		}
	}
	report(kubeadm, kubeboot, pods, idle)
	return nil
}

// waiter is the peers' kpeer-waiter, built by kubeadm-peer/build.sh.
func waiter(peers string) (string, error) {
	out, err := exec.Command(filepath.Join(peers, "peers.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("%s/peers.sh: %v", peers, err)
	}
	w := filepath.Join(strings.TrimSpace(string(out)), "bin", "kpeer-waiter")
	if _, err := os.Stat(w); err != nil {
		return "", fmt.Errorf("no waiter (%v): build the peer first, %s/kubeadm-peer/build.sh", err, peers)
	}
	return w, nil
}

// Where kubeadm-peer.sh keeps its node (its defaults).
const (
	peerNS     = "host"
	peerIP     = "10.77.0.10"
	peerRun    = "/run/kubeadm-peer"
	peerSocket = peerRun + "/containerd/containerd.sock"
	peerConfig = "/etc/kubernetes/admin.conf"
)

// peerLogDirs are the host's directories the peer's kubelet writes to.
var peerLogDirs = []string{"/var/log/pods", "/var/log/containers"}

// entries lists the paths in dir (none if it cannot be read).
func entries(dir string) []string {
	des, _ := os.ReadDir(dir)
	var out []string
	for _, de := range des {
		out = append(out, filepath.Join(dir, de.Name()))
	}
	return out
}

func measureKubeadm(peers, bin string, pods int, idle time.Duration) (f figures, err error) {
	script := filepath.Join(peers, "kubeadm-peer.sh")
	// The peer's kubelet logs its pods to the host's /var/log/pods and
	// /var/log/containers, which its down leaves: what it added goes too,
	// the directories if it made them (the e2e tests' reset checks compare
	// the machine with what it held before them).
	before := map[string]bool{}
	for _, dir := range peerLogDirs {
		if _, err := os.Stat(dir); err == nil {
			before[dir] = true
		}
		for _, p := range entries(dir) {
			before[p] = true
		}
	}
	defer func() {
		if out, derr := exec.Command(script, "down").CombinedOutput(); derr != nil && err == nil {
			err = fmt.Errorf("kubeadm-peer.sh down: %v\n%s", derr, out)
		}
		for _, dir := range peerLogDirs {
			for _, p := range append(entries(dir), dir) {
				if !before[p] {
					if rerr := os.RemoveAll(p); rerr != nil && err == nil {
						err = rerr
					}
				}
			}
		}
	}()
	up := exec.Command(script, "up")
	up.Env = append(os.Environ(), fmt.Sprintf("PSS_DELAY=%d", int(idle.Seconds())), "PEER_NS="+peerNS, "PEER_IP="+peerIP)
	up.Stdout, up.Stderr = os.Stdout, os.Stderr
	if err := up.Run(); err != nil {
		return f, fmt.Errorf("kubeadm-peer.sh up: %v", err)
	}
	logs := filepath.Join(os.Getenv("HOME"), ".cache/kubeboot-peers/kubeadm-peer-logs")
	if err := readWaiter(filepath.Join(logs, "waiter.out"), &f); err != nil {
		return f, err
	}
	summary, _ := os.ReadFile(filepath.Join(logs, "summary.txt"))
	f.initExit = secondsAfter(string(summary), "kubeadm init wall time:")
	holder := pidFile(filepath.Join(peerRun, "holder.pid"))
	procs := func() []int { return benchutil.NetnsProcesses(peerNS, holder, os.Getpid()) }
	// up returned PSS_DELAY after init did.
	fmt.Printf("\nidle footprint (%s after init returned):\n", idle)
	f.idle = benchutil.MeasureIdle(procs())
	f.idle.Print()
	if pods == 0 {
		return f, nil
	}
	// The burst's image: kubeboot's test-server, imported from the binary.
	if out, err := exec.Command(bin, "images", "import", "--builtin", "--cri-socket", "unix://"+peerSocket).CombinedOutput(); err != nil {
		return f, fmt.Errorf("importing the test-server image: %v\n%s", err, out)
	}
	h, err := nethost.Attach(peerNS, peerIP, os.TempDir(), bin, holder)
	if err != nil {
		return f, err
	}
	c, err := client(peerConfig, h)
	if err != nil {
		return f, err
	}
	f.burst, err = burst.Run(c, procs, pods)
	return f, err
}

func measureKubeboot(peers, bin string, kbFlags []string, pods int, idle time.Duration) (f figures, err error) {
	w, err := waiter(peers)
	if err != nil {
		return f, err
	}
	dir, err := os.MkdirTemp("", "kubeboot-sidebyside-")
	if err != nil {
		return f, err
	}
	h, err := nethost.New("kbside", "10.206.0.2", dir, bin)
	if err != nil {
		return f, err
	}
	defer func() {
		benchutil.KeepLogs(h, "sidebyside")
		if out, rerr := nethost.Run(h.Kubeboot("reset", "--force")); rerr != nil && err == nil {
			err = fmt.Errorf("reset: %v\n%s", rerr, out)
		}
		h.Close()
		os.RemoveAll(dir)
	}()
	const node = "kbside"
	superAdmin := filepath.Join(h.Root, "etc/kubernetes/super-admin.conf")
	start := time.Now()
	wout := filepath.Join(dir, "waiter.out")
	wf, err := os.Create(wout)
	if err != nil {
		return f, err
	}
	wcmd := h.Command(w, superAdmin, strconv.FormatInt(start.UnixNano(), 10), node, "300")
	wcmd.Stdout = wf
	if err := nethost.Start(wcmd); err != nil {
		wf.Close()
		return f, err
	}
	steps := make(chan dnsSteps, 1)
	go func() { steps <- watchDNS(h, superAdmin, start) }()
	args := append([]string{"init", "--single-node", "--node-name", node}, kbFlags...)
	out, ierr := nethost.Run(h.Kubeboot(args...))
	f.initExit = time.Since(start)
	exited := time.Now()
	if ierr != nil {
		wcmd.Process.Kill()
		wcmd.Wait()
		wf.Close()
		return f, fmt.Errorf("init: %v\n%s", ierr, out)
	}
	werr := wcmd.Wait()
	wf.Close()
	if werr != nil {
		return f, fmt.Errorf("waiter: %v", werr)
	}
	if err := readWaiter(wout, &f); err != nil {
		return f, err
	}
	fmt.Printf("init returned after %s; readyz %s, node Ready %s, CoreDNS Ready %s (waiter)\n", f.initExit.Round(time.Millisecond), f.readyz, f.nodeReady, f.dnsReady)
	select {
	case st := <-steps:
		fmt.Printf("CoreDNS from init's start: Deployment made %s, its pods created %s, all Ready %s; the Deployment's readyReplicas %s\n", ms(st.deployment), ms(st.created), ms(st.podsReady), ms(st.readyReplicas))
	case <-time.After(10 * time.Second):
	}
	time.Sleep(time.Until(exited.Add(idle)))
	procs := func() []int { return benchutil.NetnsProcesses(h.Name, h.HolderPID(), os.Getpid()) }
	fmt.Printf("\nidle footprint (%s after init returned):\n", idle)
	f.idle = benchutil.MeasureIdle(procs())
	f.idle.Print()
	if pods == 0 {
		return f, nil
	}
	c, err := client(superAdmin, h)
	if err != nil {
		return f, err
	}
	f.burst, err = burst.Run(c, procs, pods)
	return f, err
}

// dnsSteps is CoreDNS's way to Ready, from init's start, as polled every
// 50 ms: where the waiter's "coredns-ready" (the Deployment's
// readyReplicas) spends its time.
type dnsSteps struct{ deployment, created, podsReady, readyReplicas time.Duration }

// watchDNS polls CoreDNS's Deployment and pods until the Deployment
// counts every replica ready, or 2 minutes.
func watchDNS(h *nethost.Host, kubeconfig string, start time.Time) dnsSteps {
	var st dnsSteps
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var c kubernetes.Interface
	for ; ctx.Err() == nil && st.readyReplicas == 0; time.Sleep(50 * time.Millisecond) {
		if c == nil {
			if _, err := os.Stat(kubeconfig); err != nil {
				continue
			}
			time.Sleep(50 * time.Millisecond) // let the writer finish
			var err error
			if c, err = client(kubeconfig, h); err != nil {
				return st
			}
		}
		d, err := c.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			continue
		}
		t := time.Since(start)
		if st.deployment == 0 {
			st.deployment = t
		}
		want := 1
		if d.Spec.Replicas != nil {
			want = int(*d.Spec.Replicas)
		}
		if pl, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"}); err == nil && len(pl.Items) >= want {
			if st.created == 0 {
				st.created = t
			}
			ready := 0
			for _, p := range pl.Items {
				for _, cond := range p.Status.Conditions {
					if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if st.podsReady == 0 && ready >= want {
				st.podsReady = t
			}
		}
		if int(d.Status.ReadyReplicas) >= want {
			st.readyReplicas = t
		}
	}
	return st
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// measureRunning measures a node that is up already: its footprint now and
// a burst of pods.
func measureRunning(netns, kubeconfig string, pods int) error {
	procs := func() []int { return benchutil.NetnsProcesses(netns, os.Getpid()) }
	if len(procs()) == 0 {
		return fmt.Errorf("no process in network namespace %s", netns)
	}
	fmt.Printf("footprint of every process in network namespace %s and their descendants:\n", netns)
	benchutil.MeasureIdle(procs()).Print()
	if pods == 0 {
		return nil
	}
	if kubeconfig == "" {
		return fmt.Errorf("-kubeconfig is needed for the burst")
	}
	bin, _ := benchutil.Binary()
	h, err := nethost.Attach(netns, "", os.TempDir(), bin, os.Getpid())
	if err != nil {
		return err
	}
	c, err := client(kubeconfig, h)
	if err != nil {
		return err
	}
	_, err = burst.Run(c, procs, pods)
	return err
}

func client(kubeconfig string, h *nethost.Host) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.Dial = h.DialContext
	rc.QPS, rc.Burst = 200, 400
	return kubernetes.NewForConfig(rc)
}

// readWaiter reads the waiter's lines: "readyz 5.01", "node-ready 7.2",
// "coredns-ready 8.05" (seconds from init's start).
func readWaiter(path string, f *figures) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		s, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%s: %q", path, sc.Text())
		}
		d := time.Duration(s * float64(time.Second))
		switch k {
		case "readyz":
			f.readyz = d
		case "node-ready":
			f.nodeReady = d
		case "coredns-ready":
			f.dnsReady = d
		}
	}
	if f.dnsReady == 0 {
		return fmt.Errorf("%s: no coredns-ready line", path)
	}
	return sc.Err()
}

// secondsAfter reads "<marker> 12.34s" from text.
func secondsAfter(text, marker string) time.Duration {
	_, rest, ok := strings.Cut(text, marker)
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return 0
	}
	s, _ := strconv.ParseFloat(strings.TrimSuffix(f[0], "s"), 64)
	return time.Duration(s * float64(time.Second))
}

func pidFile(path string) int {
	b, _ := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// report prints the medians side by side, with kubeboot ÷ kubeadm.
func report(kubeadm, kubeboot []figures, pods int, idle time.Duration) {
	fmt.Printf("\nside by side, medians (of an even count: the mean of the middle two) of %d kubeadm and %d kubeboot runs, back to back:\n", len(kubeadm), len(kubeboot))
	fmt.Printf("  %-44s %12s %12s %8s\n", "figure", "kubeadm", "kubeboot", "ratio")
	dur := func(name string, get func(figures) time.Duration) {
		a, b := medianDur(kubeadm, get), medianDur(kubeboot, get)
		fmt.Printf("  %-44s %12s %12s %8s\n", name, show(a), show(b), ratio(float64(b), float64(a)))
	}
	mib := func(name string, get func(figures) float64) {
		a, b := median(kubeadm, get), median(kubeboot, get)
		fmt.Printf("  %-44s %8.1f MiB %8.1f MiB %8s\n", name, a, b, ratio(b, a))
	}
	dur("init → API ready (readyz)", func(f figures) time.Duration { return f.readyz })
	dur("init → node Ready", func(f figures) time.Duration { return f.nodeReady })
	dur("init → CoreDNS Ready", func(f figures) time.Duration { return f.dnsReady })
	dur("init returned", func(f figures) time.Duration { return f.initExit })
	mib(fmt.Sprintf("idle PSS, every process of the node (%s)", idle), func(f figures) float64 { return benchutil.MiB(f.idle.Total) })
	mib("  Kubernetes' own components", func(f figures) float64 { return benchutil.MiB(f.idle.Upstream) })
	mib("  own: bootstrapper + containerd/shims/pause", func(f figures) float64 { return benchutil.MiB(f.idle.Own()) })
	mib("  the rest (add-ons)", func(f figures) float64 { return benchutil.MiB(f.idle.Other) })
	if pods > 0 {
		dur(fmt.Sprintf("%d-pod burst: CPU per pod", pods), func(f figures) time.Duration { return f.burst.CPUPerPod })
		dur("  without add-ons and engines", func(f figures) time.Duration { return f.burst.CPUPerPod - f.burst.AddOnCPUPerPod })
		dur("  startup p50", func(f figures) time.Duration { return f.burst.P50 })
		dur("  startup p99", func(f figures) time.Duration { return f.burst.P99 })
		mib("  memory per pod", func(f figures) float64 { return f.burst.MemPerPodMiB })
	}
}

func show(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(10 * time.Millisecond).String()
}

func ratio(b, a float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", b/a)
}

func medianDur(fs []figures, get func(figures) time.Duration) time.Duration {
	return time.Duration(median(fs, func(f figures) float64 { return float64(get(f)) }))
}

func median(fs []figures, get func(figures) float64) float64 {
	if len(fs) == 0 {
		return 0
	}
	vs := make([]float64, len(fs))
	for i, f := range fs {
		vs[i] = get(f)
	}
	sort.Float64s(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}
