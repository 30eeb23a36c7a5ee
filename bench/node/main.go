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
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
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
	burst burst.Result
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
			if s.burst, err = burst.Run(c, func() []int { return nodeProcesses(h) }, pods); err != nil {
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
		fmt.Printf("  CPU per pod (machine busy CPU / %d)   %s\n", pods, pick(func(s sample) time.Duration { return s.burst.CPUPerPod }))
		fmt.Printf("    of which add-ons and engines        %s\n", pick(func(s sample) time.Duration { return s.burst.AddOnCPUPerPod }))
		fmt.Printf("  pod startup p50 (creation -> Running)  %s\n", pick(func(s sample) time.Duration { return s.burst.P50 }))
		fmt.Printf("  pod startup p99                        %s\n", pick(func(s sample) time.Duration { return s.burst.P99 }))
		mem := make([]float64, len(samples))
		for i, s := range samples {
			mem[i] = s.burst.MemPerPodMiB
		}
		sort.Float64s(mem)
		fmt.Printf("  memory per pod (PSS delta / %d)       %.1f MiB\n", pods, mem[len(mem)/2])
		fmt.Printf("  node CPU with the pods Running        %s/s\n", pick(func(s sample) time.Duration { return s.burst.Steady }).Round(time.Millisecond))
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
		// CoreDNS Ready: as many CoreDNS pods as its Deployment asks for,
		// each with its Ready condition true (the Deployment's
		// readyReplicas follows, on the controller-manager's schedule).
		if s.dnsReady == 0 {
			d, err := c.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
			if err == nil && d.Spec.Replicas != nil {
				if pl, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"}); err == nil {
					s.dns.observe(pl.Items, int(*d.Spec.Replicas), time.Since(start))
					s.dnsReady = s.dns.ready
				}
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
