// Command node measures a single-node cluster from `kubeboot init
// --single-node` on a fresh root, in a network-namespace host: time from
// init's start to node Ready and to CoreDNS Ready; in every run a burst of
// -pods test-server pods: startup p50/p99 from creation to Running, the
// machine's busy CPU per pod, the API requests per pod, memory per pod
// (the node's PSS with the pods Running minus before them, over -pods),
// and the node's CPU per second once they run; medians of -runs. The last
// run also prints the idle footprint -idle after init, as the sum of PSS
// of every process of the node (kubeboot's, containerd's, the shims, the
// pods).
//
//	go run ./bench/node   (as root, after `make build`)
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/pkg/images"
	"github.com/kubeboot/kubeboot/test/nethost"
)

func main() {
	runs := flag.Int("runs", 3, "init runs, each on a fresh root")
	pods := flag.Int("pods", 50, "test-server pods to start in the last run")
	idle := flag.Duration("idle", 60*time.Second, "wait after init before measuring the footprint (last run)")
	flag.StringVar(&skipPhases, "skip-phases", "", "init's --skip-phases (addon/storage,addon/metrics-server: the node without the add-ons beyond CoreDNS)")
	flag.Parse()
	if err := run(*runs, *pods, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type sample struct {
	readyz, nodeReady, dnsReady, exit time.Duration
	// dns is when CoreDNS's pods were first seen created, all scheduled,
	// all with their container running, and all Ready.
	dns   dnsSteps
	burst burst
}

// dnsSteps is the CoreDNS pods' way to Ready, from init's start: each
// step is when the last of the pods reached it (as polled, every 25 ms).
type dnsSteps struct{ created, scheduled, running, ready time.Duration }

// observe records the steps pods have reached at t.
func (d *dnsSteps) observe(pods []corev1.Pod, want int, t time.Duration) {
	if len(pods) < want {
		return
	}
	var scheduled, running, ready int
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			scheduled++
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				running++
			}
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	set := func(step *time.Duration, n int) {
		if *step == 0 && n == len(pods) {
			*step = t
		}
	}
	set(&d.created, len(pods))
	set(&d.scheduled, scheduled)
	set(&d.running, running)
	set(&d.ready, ready)
}

func run(runs, pods int, idle time.Duration) error {
	var samples []sample
	err := benchutil.FreshHosts(runs, "kbbench-n", "10.205.0.2", func(h *nethost.Host, last bool) error {
		s, c, err := once(h)
		if err != nil {
			return err
		}
		if last {
			benchutil.Footprint(func() []int { return nodeProcesses(h) }, idle, "every process of the node")
		}
		if pods > 0 {
			if !last {
				// Measured at the same point as the last run's: the
				// components' memory settles ~20 s after their start.
				time.Sleep(idle)
			}
			if s.burst, err = podBurst(h, c, pods); err != nil {
				return err
			}
		}
		samples = append(samples, s)
		fmt.Printf("run %d: /readyz %s, node Ready %s, CoreDNS Ready %s, init exit %s\n", len(samples), s.readyz, s.nodeReady.Round(time.Millisecond), s.dnsReady.Round(time.Millisecond), s.exit.Round(time.Millisecond))
		ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
		fmt.Printf("  CoreDNS pods: created %s, scheduled %s, running %s, Ready %s\n", ms(s.dns.created), ms(s.dns.scheduled), ms(s.dns.running), ms(s.dns.ready))
		return nil
	})
	if err != nil {
		return err
	}
	pick := func(f func(sample) time.Duration) time.Duration { return benchutil.MedianOf(samples, f) }
	fmt.Printf("\nkubeboot init --single-node, median of %d fresh roots (from init's start):\n", len(samples))
	fmt.Printf("  kube-apiserver /readyz   %s\n", pick(func(s sample) time.Duration { return s.readyz }))
	fmt.Printf("  node Ready               %s\n", pick(func(s sample) time.Duration { return s.nodeReady }))
	fmt.Printf("  CoreDNS Ready            %s\n", pick(func(s sample) time.Duration { return s.dnsReady }))
	fmt.Printf("    its pods created       %s\n", pick(func(s sample) time.Duration { return s.dns.created }))
	fmt.Printf("    scheduled              %s\n", pick(func(s sample) time.Duration { return s.dns.scheduled }))
	fmt.Printf("    container running      %s\n", pick(func(s sample) time.Duration { return s.dns.running }))
	fmt.Printf("  init exit                %s\n", pick(func(s sample) time.Duration { return s.exit }))
	if pods > 0 {
		fmt.Printf("\n%d-pod burst, median of %d runs:\n", pods, len(samples))
		fmt.Printf("  CPU per pod (machine busy CPU / %d)   %s\n", pods, pick(func(s sample) time.Duration { return s.burst.cpuPerPod }))
		fmt.Printf("  pod startup p50 (creation -> Running)  %s\n", pick(func(s sample) time.Duration { return s.burst.p50 }))
		fmt.Printf("  pod startup p99                        %s\n", pick(func(s sample) time.Duration { return s.burst.p99 }))
		mem := make([]float64, len(samples))
		for i, s := range samples {
			mem[i] = s.burst.memPerPodMiB
		}
		sort.Float64s(mem)
		fmt.Printf("  memory per pod (PSS delta / %d)       %.1f MiB\n", pods, mem[len(mem)/2])
		fmt.Printf("  node CPU with the pods Running        %s/s\n", pick(func(s sample) time.Duration { return s.burst.steady }).Round(time.Millisecond))
	}
	return nil
}

// client watches with super-admin.conf (group system:masters): admin.conf
// has no rights until init binds its group, late in wait-control-plane,
// and watching with it would measure that binding rather than the node.
func client(h *nethost.Host) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(h.Root, "etc/kubernetes/super-admin.conf"))
	if err != nil {
		return nil, err
	}
	rc.Dial = h.DialContext
	rc.QPS, rc.Burst = 200, 400
	return kubernetes.NewForConfig(rc)
}

// skipPhases is init's --skip-phases, when set.
var skipPhases string

func once(h *nethost.Host) (sample, kubernetes.Interface, error) {
	var s sample
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"init", "--node-name", "bench", "--single-node"}
	if skipPhases != "" {
		args = append(args, "--skip-phases", skipPhases)
	}
	cmd := h.Kubeboot(args...)
	start := time.Now()
	done := make(chan struct{})
	var out string
	var initErr error
	go func() {
		out, initErr = nethost.Run(cmd)
		s.exit = time.Since(start)
		close(done)
	}()
	// Wait for super-admin.conf, then watch from outside init.
	for {
		if _, err := os.Stat(filepath.Join(h.Root, "etc/kubernetes/super-admin.conf")); err == nil {
			break
		}
		select {
		case <-done:
			return s, nil, fmt.Errorf("init: %v\n%s", initErr, out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	c, err := client(h)
	if err != nil {
		return s, nil, err
	}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for s.nodeReady == 0 || s.dnsReady == 0 {
		select {
		case <-ctx.Done():
			return s, nil, fmt.Errorf("node or CoreDNS not Ready within 5 minutes")
		case <-tick.C:
		}
		if s.nodeReady == 0 {
			if n, err := c.CoreV1().Nodes().Get(ctx, "bench", metav1.GetOptions{}); err == nil {
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						s.nodeReady = time.Since(start)
					}
				}
			}
		}
		// CoreDNS Ready: every CoreDNS pod's Ready condition is true (the
		// Deployment's readyReplicas follows seconds later, on the
		// controller-manager's schedule).
		if s.dnsReady == 0 {
			if pl, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"}); err == nil {
				s.dns.observe(pl.Items, 2, time.Since(start))
				s.dnsReady = s.dns.ready
			}
		}
	}
	<-done
	// Kept with the component logs (KUBEBOOT_BENCH_LOGS).
	_ = os.WriteFile(filepath.Join(h.Root, "var/log/kubeboot/init.out"), []byte(out), 0o644)
	if initErr != nil {
		return s, nil, fmt.Errorf("init: %v\n%s", initErr, out)
	}
	s.readyz, _ = benchutil.After(out, "kube-apiserver is healthy after")
	return s, c, nil
}

// nodeProcesses are the host's kubeboot processes, the containerd shims
// and every process in the kubelet's pod cgroups.
func nodeProcesses(h *nethost.Host) []int {
	pids := append(h.Processes(), nethost.PodProcesses()...)
	sort.Ints(pids)
	return slices.Compact(pids)
}

// burst is what a burst of pods measured.
type burst struct {
	p50, p99, cpuPerPod time.Duration
	memPerPodMiB        float64
	// steady is the node's CPU per second with the pods Running and
	// nothing else happening.
	steady time.Duration
}

// steadyWindow is how long the node's CPU is read with the pods Running.
const steadyWindow = 20 * time.Second

// podBurst creates a Deployment of n test-server pods and measures, per
// pod, the time from its creation (seen by a watch) to Running, the
// machine's busy CPU meanwhile, the API requests it took, and the node's
// PSS before and after.
func podBurst(h *nethost.Host, c kubernetes.Interface, n int) (burst, error) {
	var b burst
	_, pss0 := benchutil.PSS(nodeProcesses(h))
	cpu0 := benchutil.CPUOf(nodeProcesses(h))
	busy0 := benchutil.BusyCPU()
	req0, err := apiRequests(context.Background(), c)
	if err != nil {
		return b, err
	}
	if err := podStartup(c, n, &b); err != nil {
		return b, err
	}
	benchutil.PrintCPUBreakdown(cpu0, benchutil.CPUOf(nodeProcesses(h)), benchutil.BusyCPU()-busy0, n)
	req1, err := apiRequests(context.Background(), c)
	if err != nil {
		return b, err
	}
	printRequests(req0, req1, n)
	time.Sleep(5 * time.Second) // the last pods' first seconds of work
	_, pss1 := benchutil.PSS(nodeProcesses(h))
	b.memPerPodMiB = float64(pss1-pss0) / 1024 / float64(n)
	fmt.Printf("node PSS %.1f MiB before the pods, %.1f MiB with them Running: %.2f MiB per pod\n", float64(pss0)/1024, float64(pss1)/1024, b.memPerPodMiB)
	b.steady = steadyCPU(h, n)
	return b, nil
}

// steadyCPU reads the node's CPU over steadyWindow with the n pods Running
// and nothing else happening: what pods cost while they idle (the
// runtime's stats, the kubelet's relists and housekeeping). It prints the
// processes that used any, and returns the node's CPU per second (its
// processes', not the machine's: over this window, the machine's busy
// time from /proc/stat once came out negative in two runs of three).
func steadyCPU(h *nethost.Host, n int) time.Duration {
	before, busy0 := benchutil.CPUOf(nodeProcesses(h)), benchutil.BusyCPU()
	time.Sleep(steadyWindow)
	after, busy := benchutil.CPUOf(nodeProcesses(h)), benchutil.BusyCPU()-busy0
	byName := map[string]time.Duration{}
	var node time.Duration
	for pid, a := range after {
		if b, ok := before[pid]; ok {
			d := a.Self + a.Children - b.Self - b.Children
			byName[a.Name] += d
			node += d
		}
	}
	perSec := func(d time.Duration) time.Duration { return d * time.Second / steadyWindow }
	fmt.Printf("node CPU with the %d pods Running, over %s: the node's processes %s/s (the machine's busy CPU %s/s)\n", n, steadyWindow, perSec(node).Round(time.Millisecond), perSec(busy).Round(time.Millisecond))
	for _, name := range slices.SortedFunc(maps.Keys(byName), func(a, b string) int { return cmp.Compare(byName[b], byName[a]) }) {
		if d := perSec(byName[name]); d >= time.Millisecond {
			fmt.Printf("  %-28s %s/s\n", name, d.Round(time.Millisecond))
		}
	}
	return perSec(node)
}

// podStartup creates a Deployment of n test-server pods and measures, per
// pod, the time from its creation (seen by a watch) to Running.
func podStartup(c kubernetes.Interface, n int, b *burst) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w, err := c.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=bench"})
	if err != nil {
		return err
	}
	defer w.Stop()
	labels := map[string]string{"app": "bench"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: images.TestServer, ImagePullPolicy: corev1.PullIfNotPresent, Args: []string{"--port", "8080"},
				}}},
			},
		},
	}
	busy0 := benchutil.BusyCPU()
	start := time.Now()
	if _, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	var mu sync.Mutex
	created, running := map[string]time.Time{}, map[string]time.Time{}
	for len(running) < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d pods Running within 5 minutes", len(running), n)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("watch closed")
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted {
				continue
			}
			now := time.Now()
			mu.Lock()
			if _, ok := created[p.Name]; !ok {
				created[p.Name] = now
			}
			if _, ok := running[p.Name]; !ok && p.Status.Phase == corev1.PodRunning {
				running[p.Name] = now
			}
			mu.Unlock()
		}
	}
	all := time.Since(start)
	busy := benchutil.BusyCPU() - busy0
	var lat []time.Duration
	for name, t := range running {
		lat = append(lat, t.Sub(created[name]))
	}
	fmt.Printf("\n%d test-server pods: all Running %s after the Deployment was created; per pod, creation to Running: p50 %s, p99 %s, max %s\n",
		n, all.Round(time.Millisecond), benchutil.Percentile(lat, 50).Round(time.Millisecond),
		benchutil.Percentile(lat, 99).Round(time.Millisecond), benchutil.Percentile(lat, 100).Round(time.Millisecond))
	fmt.Printf("machine CPU busy meanwhile: %s of %s available on %d CPUs (%s per pod)\n",
		busy.Round(10*time.Millisecond), (all * time.Duration(runtime.NumCPU())).Round(10*time.Millisecond), runtime.NumCPU(), (busy / time.Duration(n)).Round(time.Millisecond))
	b.p50, b.p99, b.cpuPerPod = benchutil.Percentile(lat, 50), benchutil.Percentile(lat, 99), busy/time.Duration(n)
	return nil
}
