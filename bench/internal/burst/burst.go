// Package burst measures a burst of pods on a one-node cluster, kubeboot's
// or another bootstrapper's: startup latency, CPU, API requests and memory
// per pod, and the node's CPU once they run.
package burst

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/internal/host/images"
)

// Result is what a burst of pods measured.
type Result struct {
	P50, P99, CPUPerPod time.Duration
	// AddOnCPUPerPod is the part of CPUPerPod that processes a kubeadm
	// node does not run used (benchutil.AddOn: kubeboot's add-ons and pod
	// network engines, kube-router's policy syncs above all).
	AddOnCPUPerPod time.Duration
	MemPerPodMiB   float64
	// Steady is the node's CPU per second with the pods Running and
	// nothing else happening.
	Steady time.Duration
}

// steadyWindow is how long the node's CPU is read with the pods Running.
const steadyWindow = 20 * time.Second

// Run creates a Deployment of n test-server pods on a node and measures,
// per pod, the time from its creation (seen by a watch) to Running, the
// machine's busy CPU meanwhile, the API requests it took, and the PSS of
// the node's processes (nodeProcesses, read again at each use) before and
// after. The pods tolerate the control-plane taint: the node may be a
// kubeadm control plane.
func Run(c kubernetes.Interface, nodeProcesses func() []int, n int) (Result, error) {
	var b Result
	_, pss0 := benchutil.PSS(nodeProcesses())
	cpu0 := benchutil.CPUOf(nodeProcesses())
	busy0 := benchutil.BusyCPU()
	req0, err := apiRequests(context.Background(), c)
	if err != nil {
		return b, err
	}
	if err := podStartup(c, n, &b); err != nil {
		return b, err
	}
	cpu1 := benchutil.CPUOf(nodeProcesses())
	benchutil.PrintCPUBreakdown(cpu0, cpu1, benchutil.BusyCPU()-busy0, n)
	b.AddOnCPUPerPod = benchutil.CPUIn(cpu0, cpu1, benchutil.AddOn) / time.Duration(n)
	fmt.Printf("of which add-ons and pod network engines (processes a kubeadm node does not run): %s per pod\n", b.AddOnCPUPerPod.Round(time.Millisecond))
	req1, err := apiRequests(context.Background(), c)
	if err != nil {
		return b, err
	}
	printRequests(req0, req1, n)
	time.Sleep(5 * time.Second) // the last pods' first seconds of work
	_, pss1 := benchutil.PSS(nodeProcesses())
	b.MemPerPodMiB = float64(pss1-pss0) / 1024 / float64(n)
	fmt.Printf("node PSS %.1f MiB before the pods, %.1f MiB with them Running: %.2f MiB per pod\n", float64(pss0)/1024, float64(pss1)/1024, b.MemPerPodMiB)
	b.Steady = steadyCPU(nodeProcesses, n)
	return b, nil
}

// steadyCPU reads the node's CPU over steadyWindow with the n pods Running
// and nothing else happening: what pods cost while they idle (the
// runtime's stats, the kubelet's relists and housekeeping). It prints the
// processes that used any, and returns the node's CPU per second (its
// processes', not the machine's: over this window, the machine's busy
// time from /proc/stat once came out negative in two runs of three).
func steadyCPU(nodeProcesses func() []int, n int) time.Duration {
	before, busy0 := benchutil.CPUOf(nodeProcesses()), benchutil.BusyCPU()
	time.Sleep(steadyWindow)
	after, busy := benchutil.CPUOf(nodeProcesses()), benchutil.BusyCPU()-busy0
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
func podStartup(c kubernetes.Interface, n int, b *Result) error {
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
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "web", Image: images.TestServer, ImagePullPolicy: corev1.PullIfNotPresent, Args: []string{"--port", "8080"},
					}},
					Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				},
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
	b.P50, b.P99, b.CPUPerPod = benchutil.Percentile(lat, 50), benchutil.Percentile(lat, 99), busy/time.Duration(n)
	return nil
}

// Cleanup deletes the burst's Deployment and waits until its pods are
// gone (a node that stays up after the bench, as a VM's).
func Cleanup(ctx context.Context, c kubernetes.Interface) error {
	fg := metav1.DeletePropagationForeground
	err := c.AppsV1().Deployments("default").Delete(ctx, "bench", metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=bench"})
		if err == nil && len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
