// Command network measures kubeboot's pod network (flannel's VXLAN
// overlay and kube-router's network policy controller) on two nodes on two
// IP subnets joined by a router, as racks and cloud subnets are: the
// throughput of one TCP transfer pod to pod across the nodes against host
// to host over the same link and router (the overlay's cost; the median
// of -runs transfers of -size MiB each); the time from a NetworkPolicy's
// write to its effect (a default-deny policy created, then deleted,
// -policies times, each effect seen by a client on the other node that
// tries a connection every 20 ms; p50/p90/p99); and the engines' memory on
// each node (PSS of flannel and kube-router).
//
//	go run ./bench/network [-mtu 1500] [-runs 15] [-size 512] [-policies 50]   (as root, after make build)
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/bench/internal/hacluster"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/test/nethost"
)

var rate = regexp.MustCompile(`\(([0-9.]+) MiB/s\)`)

func main() {
	mtu := flag.Int("mtu", 1500, "MTU of the links")
	// 15 of 512 MiB: on a shared 2-core machine, 5 of 256 MiB moved the
	// ratio by ±0.1 from run to run.
	runs := flag.Int("runs", 15, "transfers of each kind")
	size := flag.Int("size", 512, "MiB per transfer")
	policies := flag.Int("policies", 50, "NetworkPolicies created and deleted")
	flag.Parse()
	if err := run(*mtu, *runs, *size, *policies); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

const (
	cpIP, w1IP = "10.213.0.2", "10.214.0.2"
	serverPort = 8080
	hostPort   = 18080
)

const pods = `apiVersion: v1
kind: Pod
metadata: {name: srv, labels: {app: srv}}
spec:
  nodeName: cp
  tolerations: [{operator: Exists}]
  containers: [{name: srv, image: %[1]s, imagePullPolicy: Never, args: ["--port", "8080"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: cli}
spec:
  nodeName: w1
  containers: [{name: cli, image: %[1]s, imagePullPolicy: Never, args: ["--port", "8080"]}]
`

const denyAll = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-%d}
spec:
  podSelector: {matchLabels: {app: srv}}
  policyTypes: [Ingress]
`

type bench struct {
	dir     string
	nets    []*nethost.Network
	router  *nethost.Router
	cp, w1  *nethost.Host
	cleanup []func()
}

func (b *bench) close() {
	for i := len(b.cleanup) - 1; i >= 0; i-- {
		b.cleanup[i]()
	}
	os.RemoveAll(b.dir)
}

// kubectl runs the binary's kubectl on the control plane's host (the
// binary as kubectl takes no --root).
func kubectl(cp *nethost.Host, args ...string) (string, error) {
	full := append([]string{"kubectl", "--kubeconfig", filepath.Join(cp.Root, "etc/kubernetes/admin.conf")}, args...)
	out, err := nethost.Run(cp.Command(cp.Binary, full...))
	if err != nil {
		return out, fmt.Errorf("%s: kubectl %s: %v\n%s", cp.Name, strings.Join(args, " "), err, out)
	}
	return out, nil
}

func apply(cp *nethost.Host, manifest string) error {
	f := filepath.Join(cp.Root, "bench.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
		return err
	}
	defer os.Remove(f)
	_, err := kubectl(cp, "apply", "-f", f)
	return err
}

func (b *bench) setUp(mtu int) error {
	bin, err := benchutil.Binary()
	if err != nil {
		return err
	}
	if err := nethost.BecomeSubreaper(); err != nil {
		return err
	}
	if b.dir, err = os.MkdirTemp("", "kubeboot-bench-net-"); err != nil {
		return err
	}
	for _, name := range []string{"kbbn-neta", "kbbn-netb"} {
		n, err := nethost.NewNetworkMTU(name, mtu)
		if err != nil {
			return err
		}
		b.cleanup = append(b.cleanup, func() { n.Close() })
		b.nets = append(b.nets, n)
	}
	r, err := nethost.NewRouter("kbbn-rt", nethost.Leg{Network: b.nets[0], Addr: "10.213.0.1/24"}, nethost.Leg{Network: b.nets[1], Addr: "10.214.0.1/24"})
	if err != nil {
		return err
	}
	b.cleanup = append(b.cleanup, func() { r.Close() })
	host := func(name, ip, gw string, n *nethost.Network) (*nethost.Host, error) {
		h, err := nethost.NewWith("kbbn-"+name, ip, filepath.Join(b.dir, name), bin, nethost.Options{Network: n, Gateway: gw})
		if err != nil {
			return nil, err
		}
		b.cleanup = append(b.cleanup, func() {
			benchutil.KeepLogs(h, h.Name)
			nethost.Run(h.Kubeboot("reset", "--force")) //nolint:errcheck
			h.Close()
			nethost.Reap()
		})
		return h, nil
	}
	if b.cp, err = host("cp", cpIP, "10.213.0.1", b.nets[0]); err != nil {
		return err
	}
	if b.w1, err = host("w1", w1IP, "10.214.0.1", b.nets[1]); err != nil {
		return err
	}
	out, err := hacluster.Kubeboot(b.cp, "init", "--node-name", "cp", "--single-node")
	if err != nil {
		return err
	}
	j, ok := nethost.ParseJoin(out)
	if !ok {
		return fmt.Errorf("no join command in init's output")
	}
	if _, err := hacluster.Kubeboot(b.w1, "join", cpIP+":6443", "--token", j.Token, "--discovery-token-ca-cert-hash", j.Hash, "--node-name", "w1"); err != nil {
		return err
	}
	// join returns once the kubelet's TLS bootstrap is done, as kubeadm's
	// does: the kubelet registers its Node a moment later.
	if _, err := kubectl(b.cp, "wait", "--for=create", "node/w1", "--timeout=60s"); err != nil {
		return err
	}
	if _, err := kubectl(b.cp, "wait", "--for=condition=Ready", "node/cp", "node/w1", "--timeout=120s"); err != nil {
		return err
	}
	if err := apply(b.cp, fmt.Sprintf(pods, images.TestServer)); err != nil {
		return err
	}
	_, err = kubectl(b.cp, "wait", "--for=condition=Ready", "pod/srv", "pod/cli", "--timeout=120s")
	return err
}

func mibps(out string) (float64, error) {
	m := rate.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no throughput in %q", out)
	}
	return strconv.ParseFloat(m[1], 64)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// throughput returns the median MiB/s of pod → pod and host → host
// transfers, alternated.
func (b *bench) throughput(runs, size int) (pod, host float64, err error) {
	srvIP, err := kubectl(b.cp, "get", "pod", "srv", "-o", "jsonpath={.status.podIP}")
	if err != nil {
		return 0, 0, err
	}
	// The same program on the control plane's host, serving its address.
	prog := filepath.Join(b.cp.Root, "var/lib/kubeboot/helpers/current/test-server")
	srv := b.cp.Command(prog, "--port", strconv.Itoa(hostPort))
	if err := nethost.Start(srv); err != nil {
		return 0, 0, err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }() //nolint:errcheck
	time.Sleep(300 * time.Millisecond)
	n := strconv.Itoa(size << 20)
	var pods, hosts []float64
	for i := 0; i < runs; i++ {
		out, err := kubectl(b.cp, "exec", "cli", "--", "/test-server", "--timeout", "5m", "--download", "http://"+strings.TrimSpace(srvIP)+":"+strconv.Itoa(serverPort)+"/bytes?n="+n)
		if err != nil {
			return 0, 0, err
		}
		p, err := mibps(out)
		if err != nil {
			return 0, 0, err
		}
		out, err = nethost.Run(b.w1.Command(filepath.Join(b.w1.Root, "var/lib/kubeboot/helpers/current/test-server"), "--timeout", "5m", "--download", "http://"+cpIP+":"+strconv.Itoa(hostPort)+"/bytes?n="+n))
		if err != nil {
			return 0, 0, fmt.Errorf("host to host: %v: %s", err, out)
		}
		h, err := mibps(out)
		if err != nil {
			return 0, 0, err
		}
		pods, hosts = append(pods, p), append(hosts, h)
		fmt.Printf("transfer %d: pod→pod %.0f MiB/s, host→host %.0f MiB/s\n", i+1, p, h)
	}
	return median(pods), median(hosts), nil
}

// connects tries one TCP connection from w1's host to the server pod.
func (b *bench) connects(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, err := b.w1.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// until polls until connects(addr) is want, and says how long it took.
func (b *bench) until(addr string, want bool, from time.Time) (time.Duration, error) {
	for time.Since(from) < 30*time.Second {
		if b.connects(addr) == want {
			return time.Since(from), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s: connection %v not seen within 30 s", addr, map[bool]string{true: "accepted", false: "refused"}[want])
}

func (b *bench) policies(n int) (create, remove []time.Duration, err error) {
	srvIP, err := kubectl(b.cp, "get", "pod", "srv", "-o", "jsonpath={.status.podIP}")
	if err != nil {
		return nil, nil, err
	}
	addr := net.JoinHostPort(strings.TrimSpace(srvIP), strconv.Itoa(serverPort))
	if _, err := b.until(addr, true, time.Now()); err != nil {
		return nil, nil, err
	}
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := apply(b.cp, fmt.Sprintf(denyAll, i)); err != nil {
			return nil, nil, err
		}
		d, err := b.until(addr, false, start)
		if err != nil {
			return nil, nil, err
		}
		create = append(create, d)
		start = time.Now()
		if _, err := kubectl(b.cp, "delete", "networkpolicy", fmt.Sprintf("deny-%d", i)); err != nil {
			return nil, nil, err
		}
		if d, err = b.until(addr, true, start); err != nil {
			return nil, nil, err
		}
		remove = append(remove, d)
	}
	return create, remove, nil
}

// engines sums the PSS of a node's flannel and kube-router, and of those
// the part that is their own memory (anonymous: heap, stacks), the rest
// being the pages of their binaries' files they have touched (clean,
// which the kernel takes back under pressure).
func engines(h *nethost.Host) (flannel, router, anon int64) {
	procs, _ := benchutil.PSS(benchutil.NetnsProcesses(h.Name))
	for _, p := range procs {
		switch p.Name {
		case "flannel":
			flannel += p.KiB
		case "kube-router":
			router += p.KiB
		default:
			continue
		}
		anon += p.AnonKiB
	}
	return flannel, router, anon
}

func run(mtu, runs, size, n int) error {
	b := &bench{}
	defer b.close()
	start := time.Now()
	if err := b.setUp(mtu); err != nil {
		return err
	}
	fmt.Printf("two nodes on two subnets behind a router, links at MTU %d: up in %s\n", mtu, time.Since(start).Round(time.Second))
	pod, host, err := b.throughput(runs, size)
	if err != nil {
		return err
	}
	create, remove, err := b.policies(n)
	if err != nil {
		return err
	}
	fmt.Printf("\n| figure | value | goal |\n|---|---|---|\n")
	fmt.Printf("| pod→pod across nodes (VXLAN), median of %d × %d MiB | %.0f MiB/s | |\n", runs, size, pod)
	fmt.Printf("| host→host over the same link | %.0f MiB/s | |\n", host)
	fmt.Printf("| overlay ÷ host | %.2f× | ≥ 0.8× |\n", pod/host)
	for _, s := range []struct {
		what string
		ds   []time.Duration
	}{{"NetworkPolicy create → effect", create}, {"NetworkPolicy delete → effect", remove}} {
		fmt.Printf("| %s, p50/p90/p99 of %d | %s / %s / %s | p99 ≤ 2 s |\n", s.what, len(s.ds),
			benchutil.Percentile(s.ds, 50).Round(time.Millisecond), benchutil.Percentile(s.ds, 90).Round(time.Millisecond), benchutil.Percentile(s.ds, 99).Round(time.Millisecond))
	}
	for _, h := range []*nethost.Host{b.cp, b.w1} {
		f, r, anon := engines(h)
		fmt.Printf("| %s: flannel + kube-router PSS | %.1f + %.1f = %.1f MiB | ≤ 30 MiB |\n", strings.TrimPrefix(h.Name, "kbbn-"), benchutil.MiB(f), benchutil.MiB(r), benchutil.MiB(f+r))
		fmt.Printf("| … of which their own (anonymous) | %.1f MiB | |\n", benchutil.MiB(anon))
	}
	return nil
}
