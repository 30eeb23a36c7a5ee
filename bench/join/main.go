// Command join measures `kubeboot join` of a worker: the time from the
// join command's start to the node's Ready condition, and to join's exit
// (median of -runs). One control plane is made with `kubeboot init`; each
// run joins a fresh worker host on the same bridge, then resets it.
//
//	go run ./bench/join   (as root, after `make build`)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/test/nethost"
)

func main() {
	runs := flag.Int("runs", 3, "joins, each of a fresh worker")
	flag.Parse()
	if err := run(*runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type sample struct{ containerd, kubelet, certificate, ready, exit time.Duration }

func run(runs int) error {
	bin, err := benchutil.Binary()
	if err != nil {
		return err
	}
	if err := nethost.BecomeSubreaper(); err != nil {
		return err
	}
	network, err := nethost.NewNetwork("kbbench-jnet")
	if err != nil {
		return err
	}
	defer network.Close()
	dir, err := os.MkdirTemp("", "kubeboot-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cp, err := nethost.NewWith("kbbench-jcp", "10.207.0.2", filepath.Join(dir, "cp"), bin, nethost.Options{Network: network})
	if err != nil {
		return err
	}
	defer func() {
		nethost.Run(cp.Kubeboot("reset", "--force")) //nolint:errcheck
		cp.Close()
	}()
	out, err := nethost.Run(cp.Kubeboot("init", "--node-name", "cp"))
	if err != nil {
		return fmt.Errorf("init: %v\n%s", err, out)
	}
	j, ok := nethost.ParseJoin(out)
	if !ok {
		return fmt.Errorf("no join command in init's output:\n%s", out)
	}
	c, err := client(cp)
	if err != nil {
		return err
	}
	var samples []sample
	for i := 0; i < runs; i++ {
		w, err := nethost.NewWith(fmt.Sprintf("kbbench-jw%d", i), "10.207.0.3", filepath.Join(dir, fmt.Sprintf("w%d", i)), bin, nethost.Options{Network: network})
		if err != nil {
			return err
		}
		name := fmt.Sprintf("w%d", i)
		s, err := once(c, w, name, j.Token, j.Hash)
		if out, rerr := nethost.Run(w.Kubeboot("reset", "--force")); rerr != nil && err == nil {
			err = fmt.Errorf("reset: %v\n%s", rerr, out)
		}
		w.Close()
		if err != nil {
			return err
		}
		samples = append(samples, s)
		fmt.Printf("run %d: containerd ready %s, kubelet healthy %s, client certificate %s, node Ready %s, join exit %s\n",
			i+1, s.containerd, s.kubelet, s.certificate, s.ready.Round(time.Millisecond), s.exit.Round(time.Millisecond))
	}
	pick := func(f func(sample) time.Duration) time.Duration { return benchutil.MedianOf(samples, f) }
	fmt.Printf("\nkubeboot join of a worker, median of %d fresh workers (from join's start):\n", len(samples))
	fmt.Printf("  containerd ready         %s\n", pick(func(s sample) time.Duration { return s.containerd }))
	fmt.Printf("  kubelet healthy          %s\n", pick(func(s sample) time.Duration { return s.kubelet }))
	fmt.Printf("  client certificate       %s\n", pick(func(s sample) time.Duration { return s.certificate }))
	fmt.Printf("  node Ready               %s\n", pick(func(s sample) time.Duration { return s.ready }))
	fmt.Printf("  join exit                %s\n", pick(func(s sample) time.Duration { return s.exit }))
	return nil
}

// client watches from the control plane's host with super-admin.conf.
func client(h *nethost.Host) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(h.Root, "etc/kubernetes/super-admin.conf"))
	if err != nil {
		return nil, err
	}
	rc.Dial = h.DialContext
	rc.QPS, rc.Burst = 200, 400
	return kubernetes.NewForConfig(rc)
}

func once(c kubernetes.Interface, w *nethost.Host, name, token, hash string) (sample, error) {
	var s sample
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := w.Kubeboot("join", "10.207.0.2:6443", "--token", token, "--discovery-token-ca-cert-hash", hash, "--node-name", name)
	start := time.Now()
	done := make(chan struct{})
	var out string
	var joinErr error
	go func() {
		out, joinErr = nethost.Run(cmd)
		s.exit = time.Since(start)
		close(done)
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for s.ready == 0 {
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("node %s not Ready within 3 minutes", name)
		case <-tick.C:
		}
		if n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					s.ready = time.Since(start)
				}
			}
		}
	}
	<-done
	if joinErr != nil {
		return s, fmt.Errorf("join: %v\n%s", joinErr, out)
	}
	s.containerd, _ = benchutil.After(out, "containerd is healthy")
	s.kubelet, _ = benchutil.After(out, "kubelet is healthy")
	s.certificate, _ = benchutil.After(out, "client certificate after")
	return s, nil
}
