// Command controlplane measures `kubeboot init` of a control plane on a
// fresh root, in a network-namespace host: time to PKI done, etcd ready,
// API server /readyz, all control-plane components healthy and init's
// exit (median of -runs), then the idle footprint as the sum of PSS over
// the node's processes -idle after the last init.
//
//	sudo go run ./bench/controlplane   (after `make build`)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/test/nethost"
)

func main() {
	runs := flag.Int("runs", 3, "init runs, each on a fresh root")
	idle := flag.Duration("idle", 60*time.Second, "wait after the last init before measuring the footprint")
	flag.Parse()
	if err := run(*runs, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type sample struct{ pki, etcd, readyz, polled, healthy, exit time.Duration }

func run(runs int, idle time.Duration) error {
	var samples []sample
	err := benchutil.FreshHosts(runs, "kbbench-cp", "10.202.0.2", func(h *nethost.Host, last bool) error {
		s, err := once(h)
		if err != nil {
			return err
		}
		if last {
			benchutil.Footprint(h.Processes, idle, "the node's processes")
		}
		samples = append(samples, s)
		fmt.Printf("run %d: PKI %s, etcd %s, /readyz %s (polled %s), control plane healthy %s, init exit %s\n",
			len(samples), s.pki, s.etcd, s.readyz, s.polled, s.healthy, s.exit)
		return nil
	})
	if err != nil {
		return err
	}
	pick := func(f func(sample) time.Duration) time.Duration { return benchutil.MedianOf(samples, f) }
	fmt.Printf("\nkubeboot init, control plane, median of %d fresh roots:\n", len(samples))
	fmt.Printf("  PKI + kubeconfigs done     %s\n", pick(func(s sample) time.Duration { return s.pki }))
	fmt.Printf("  etcd ready                 %s\n", pick(func(s sample) time.Duration { return s.etcd }))
	fmt.Printf("  kube-apiserver /readyz     %s (polled from outside init: %s)\n", pick(func(s sample) time.Duration { return s.readyz }), pick(func(s sample) time.Duration { return s.polled }))
	fmt.Printf("  all components healthy     %s\n", pick(func(s sample) time.Duration { return s.healthy }))
	fmt.Printf("  init exit                  %s\n", pick(func(s sample) time.Duration { return s.exit }))
	return nil
}

func once(h *nethost.Host) (sample, error) {
	var s sample
	cmd := h.Kubeboot("init", "--node-name", "bench")
	cmd.Env = append(os.Environ(), "KUBEBOOT_TRACE=1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	polled := make(chan time.Duration, 1)
	go func() { polled <- benchutil.PollReady(ctx, h, "https://"+h.IP+":6443/readyz", start) }()
	out, err := nethost.Run(cmd)
	s.exit = time.Since(start)
	if err != nil {
		return s, fmt.Errorf("init: %v\n%s", err, out)
	}
	s.polled = <-polled
	var ok [4]bool
	s.pki, ok[0] = benchutil.After(out, "[trace] phase kubeconfig/kube-proxy done")
	// init checks etcd only after the kubelet; the daemon's probe saw it first.
	s.etcd, ok[1] = benchutil.DaemonEvent(h, "etcd is ready", start)
	s.readyz, ok[2] = benchutil.After(out, "kube-apiserver is healthy after")
	s.healthy, ok[3] = benchutil.After(out, "[trace] phase wait-control-plane done")
	for i, o := range ok {
		if !o {
			return s, fmt.Errorf("init's output lacks timing line %d:\n%s", i, out)
		}
	}
	return s, nil
}
