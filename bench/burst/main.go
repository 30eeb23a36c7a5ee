// Command burst measures a burst of test-server pods on the one-node
// cluster this host runs — a Debian VM, say, where bench/node (which makes
// its nodes in network namespaces of this machine) does not run: startup
// p50/p99 from creation to Running, the machine's busy CPU per pod, the
// API requests and memory per pod, as bench/node prints them
// (bench/internal/burst). Every process of the host but the bench's own
// counts as the node's. The pods are deleted when it ends.
//
// Built here and copied to the host, e.g. to compare runc and crun on a
// cgroup v2 VM (docs/design.md §14):
//
//	CGO_ENABLED=0 go build -o burst ./bench/burst
//	./burst -kubeconfig /etc/kubernetes/admin.conf -pods 20   (on the host, as root)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeboot/kubeboot/bench/internal/burst"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "/etc/kubernetes/admin.conf", "the cluster's admin kubeconfig")
	pods := flag.Int("pods", 20, "test-server pods in the burst")
	flag.Parse()
	if err := run(*kubeconfig, *pods); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, pods int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// A burst left by an earlier run would be counted in this one.
	deletePods(c)
	defer deletePods(c)
	// Interrupted, it still deletes its pods.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		deletePods(c)
		os.Exit(1)
	}()
	r, err := burst.Run(c, hostProcesses, pods)
	if err != nil {
		return err
	}
	fmt.Printf("\nburst of %d: startup p50 %s, p99 %s; machine CPU per pod %s; memory per pod %.2f MiB; node CPU with them Running %s/s\n",
		pods, r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.CPUPerPod.Round(time.Millisecond), r.MemPerPodMiB, r.Steady.Round(time.Millisecond))
	return nil
}

// hostProcesses is every process of this host but the bench's own.
func hostProcesses() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// deletePods removes what burst.Run made, and waits for its pods to go.
func deletePods(c kubernetes.Interface) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := burst.Cleanup(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "bench: deleting the pods:", err)
	}
}
