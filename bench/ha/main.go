// Command ha measures high availability without an external load
// balancer: the time from `kubeboot join --control-plane` to the joining
// node's API server answering /readyz (p50, p90 and max of -joins joins,
// each after the one before it was reset), and the longest
// gap a client reading through a worker's node-local load balancer every
// 50 ms sees while every process of one of three control planes is killed
// (median of 3 kills, each of another control plane).
//
//	go run ./bench/ha   (as root, after `make build`)
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/bench/internal/hacluster"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// etcdRestartLine is what a control-plane join prints when it restarts
// its new etcd member, stuck unpublished (see joinphases.waitEtcdServing).
const etcdRestartLine = "Restarting the new etcd member"

func main() {
	settle := flag.Duration("settle", 5*time.Second, "how long each kill is watched")
	joins := flag.Int("joins", 10, "how many control-plane joins are timed (at least 2)")
	flag.Parse()
	if err := run(*settle, max(*joins, 2)); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// keepOutput writes a join's output beside the kept logs.
func keepOutput(name, out string) {
	if dir := os.Getenv("KUBEBOOT_BENCH_LOGS"); dir != "" {
		os.MkdirAll(dir, 0o755)                                                   //nolint:errcheck
		os.WriteFile(filepath.Join(dir, "join-"+name+".out"), []byte(out), 0o644) //nolint:errcheck,gosec
	}
}

func run(settle time.Duration, n int) error {
	bin, err := benchutil.Binary()
	if err != nil {
		return err
	}
	c, err := hacluster.New(bin, "", "kbbench-h")
	if err != nil {
		return err
	}
	defer c.Close()
	cp1, err := c.Host("cp1", "10.209.0.2")
	if err != nil {
		return err
	}
	if err := c.Init(cp1, "cp1"); err != nil {
		return err
	}

	// n joins: the second and the third control plane, then each next in
	// place of the one before it (reset first, its logs kept).
	var joins []time.Duration
	restarts := 0
	cps := []*nethost.Host{cp1}
	for i := range n {
		name, ip := fmt.Sprintf("cp%d", i+2), fmt.Sprintf("10.209.0.%d", 10+i)
		if i >= 2 {
			benchutil.KeepLogs(cps[2], cps[2].Name)
			if _, err := hacluster.Kubeboot(cps[2], "reset", "--force"); err != nil {
				return err
			}
			cps = cps[:2]
		}
		h, err := c.Host(name, ip)
		if err != nil {
			return err
		}
		d, out, err := c.JoinControlPlane(h, name)
		keepOutput(name, out)
		if err != nil {
			return err
		}
		note := ""
		if strings.Contains(out, etcdRestartLine) {
			restarts++
			note = " (its etcd member restarted: " + etcdRestartLine + ")"
		}
		fmt.Printf("join --control-plane %s: API server ready %s after the start%s\n", name, d.Round(time.Millisecond), note)
		joins = append(joins, d)
		cps = append(cps, h)
	}
	w, err := c.Host("w1", "10.209.0.5")
	if err != nil {
		return err
	}
	if _, err := c.Join(w, "w1"); err != nil {
		return err
	}

	var gaps []time.Duration
	for _, victim := range cps {
		g, err := killAndWatch(w, victim, settle)
		if err != nil {
			return err
		}
		fmt.Printf("killed %s: longest gap through the worker's load balancer %s\n", victim.Name, g.Round(time.Millisecond))
		gaps = append(gaps, g)
		if _, err := hacluster.Kubeboot(victim, "daemon", "start"); err != nil {
			return err
		}
		deadline := time.Now().Add(2 * time.Minute)
		for !hacluster.APIReady(victim) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s's API server did not come back", victim.Name)
			}
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(3 * time.Second) // its etcd member catches up; the balancer sees it healthy
	}
	longest := time.Duration(0)
	for _, g := range gaps {
		longest = max(longest, g)
	}
	fmt.Printf("\nHA without an external load balancer (3 control planes, stacked etcd, 1 worker):\n")
	fmt.Printf("  join --control-plane to its API server ready, of %d joins: p50 %s, p90 %s, max %s (%d with the etcd restart)\n", len(joins),
		benchutil.Percentile(joins, 50).Round(time.Millisecond), benchutil.Percentile(joins, 90).Round(time.Millisecond), slices.Max(joins).Round(time.Millisecond), restarts)
	fmt.Printf("  longest read gap through a worker's load balancer while a control plane is killed, median of %d   %s (max %s)\n",
		len(gaps), benchutil.Median(gaps).Round(time.Millisecond), longest.Round(time.Millisecond))
	return nil
}

// killAndWatch reads through the worker's load balancer every 50 ms, kills
// every process of the victim, and returns the longest gap between two
// successful reads over settle.
func killAndWatch(w, victim *nethost.Host, settle time.Duration) (time.Duration, error) {
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(w.Root, "etc/kubernetes/pki/ca.crt"))
	if err != nil {
		return 0, err
	}
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: w.DialContext, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var mu sync.Mutex
	var gap time.Duration
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			resp, err := client.Get("https://127.0.0.1:6444/readyz")
			if err == nil {
				ok := resp.StatusCode == 200
				resp.Body.Close()
				if ok {
					mu.Lock()
					gap = max(gap, time.Since(last))
					mu.Unlock()
					last = time.Now()
				}
			}
		}
	}()
	time.Sleep(time.Second)
	victim.KillAll()
	time.Sleep(settle)
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	return gap, nil
}
