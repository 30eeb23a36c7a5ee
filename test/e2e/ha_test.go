package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// etcdClient is a client of the host's etcd member, from inside the
// host, with the API server's etcd client certificate.
func etcdClient(t *testing.T, h *nethost.Host) *clientv3.Client {
	t.Helper()
	pki := filepath.Join(h.Root, "etc/kubernetes/pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "apiserver-etcd-client.crt"), filepath.Join(pki, "apiserver-etcd-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(pki, "etcd/ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c, err := clientv3.New(clientv3.Config{
		Endpoints: []string{"https://" + h.IP + ":2379"}, DialTimeout: 5 * time.Second,
		TLS:         &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool},
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return h.DialContext(ctx, "tcp", addr) })},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// etcdMembers lists the etcd members as the host's API server sees them.
func etcdMembers(t *testing.T, h *nethost.Host) (voters, learners []string) {
	t.Helper()
	c := etcdClient(t, h)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.MemberList(ctx)
	if err != nil {
		t.Fatalf("etcd member list from %s: %v", h.Name, err)
	}
	for _, m := range resp.Members {
		if m.IsLearner {
			learners = append(learners, m.Name)
		} else {
			voters = append(voters, m.Name)
		}
	}
	return voters, learners
}

// apiReady tells whether the host's own API server answers /readyz.
func apiReady(h *nethost.Host) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: h.DialContext, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
	resp, err := c.Get("https://" + h.IP + ":6443/readyz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// TestHighAvailability: three control planes with stacked etcd and a
// worker, no load balancer or VIP: losing a control plane host takes no
// node down, and resetting one keeps etcd healthy.
func TestHighAvailability(t *testing.T) {
	requireE2E(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already; this test needs it free of other kubelets", n)
	}
	initial := machineState()
	network := newNetwork(t, "kbh-net")
	cps := []*nethost.Host{
		newHostWith(t, "kbh-cp1", "10.208.0.2", nethost.Options{Network: network}),
		newHostWith(t, "kbh-cp2", "10.208.0.3", nethost.Options{Network: network}),
		newHostWith(t, "kbh-cp3", "10.208.0.4", nethost.Options{Network: network}),
	}
	w := newHostWith(t, "kbh-w1", "10.208.0.5", nethost.Options{Network: network})
	cp1 := cps[0]
	out := kb(t, cp1, "init", "--node-name", "cp1", "--upload-certs")
	j, ok := nethost.ParseJoin(out)
	if !ok || j.CertificateKey == "" {
		t.Fatalf("no control-plane join command in init's output:\n%s", out)
	}
	token, hash, key := j.Token, j.Hash, j.CertificateKey
	joinCP := func(h *nethost.Host, name, certKey string) []string {
		return []string{"join", "10.208.0.2:6443", "--token", token, "--discovery-token-ca-cert-hash", hash, "--control-plane", "--certificate-key", certKey, "--node-name", name}
	}

	t.Run("certificate key refusals write nothing", func(t *testing.T) {
		wrong := strings.Repeat("ab", 32)
		out, err := nethost.Run(cps[1].Kubeboot(joinCP(cps[1], "cp2", wrong)...))
		if err == nil || !strings.Contains(out, "not the key the certificates were uploaded with") || !strings.Contains(out, "kubeboot init phase upload-certs --upload-certs") {
			t.Errorf("a wrong certificate key: %v\n%s", err, out)
		}
		if files := listAll(cps[1].Root); len(files) != 0 {
			t.Errorf("a refused join wrote %v", files)
		}
		// The Secret expires with its 2 h token; delete it to be there.
		kubectl(t, cp1, "-n", "kube-system", "delete", "secret", "kubeadm-certs")
		out, err = nethost.Run(cps[1].Kubeboot(joinCP(cps[1], "cp2", key)...))
		if err == nil || !strings.Contains(out, "deleted 2 hours after the upload") || !strings.Contains(out, "kubeboot init phase upload-certs --upload-certs") {
			t.Errorf("an expired certificate key: %v\n%s", err, out)
		}
		if files := listAll(cps[1].Root); len(files) != 0 {
			t.Errorf("a refused join wrote %v", files)
		}
		// As the message says: upload again, with a new key.
		out = kb(t, cp1, "init", "phase", "upload-certs", "--upload-certs")
		k := regexp.MustCompile(`(?m)^([0-9a-f]{64})$`).FindStringSubmatch(out)
		if k == nil {
			t.Fatalf("no certificate key printed:\n%s", out)
		}
		key = k[1]
	})

	for i, h := range cps[1:] {
		name := fmt.Sprintf("cp%d", i+2)
		t.Run("join "+name, func(t *testing.T) {
			start := time.Now()
			var ready time.Duration
			done := make(chan struct{})
			go func() {
				defer close(done)
				for time.Since(start) < 3*time.Minute {
					if apiReady(h) == nil {
						ready = time.Since(start)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
			out := kb(t, h, joinCP(h, name, key)...)
			<-done
			t.Logf("join --control-plane took %s; its API server was ready %s after the start", time.Since(start).Round(time.Millisecond), ready.Round(time.Millisecond))
			logProgress(t, out)
		})
	}
	t.Run("join a worker", func(t *testing.T) {
		out := kb(t, w, "join", "10.208.0.2:6443", "--token", token, "--discovery-token-ca-cert-hash", hash, "--node-name", "w1")
		if !strings.Contains(out, "node-local API server load balancer on 127.0.0.1:6444, seeded with 10.208.0.2:6443") {
			t.Errorf("the worker does not say how it reaches the API servers:\n%s", out)
		}
		for _, f := range []string{"kubelet.conf", "kube-proxy.conf"} {
			b, _ := os.ReadFile(filepath.Join(w.Root, "etc/kubernetes", f))
			if !strings.Contains(string(b), "server: https://127.0.0.1:6444") {
				t.Errorf("%s does not go through the node-local load balancer:\n%s", f, grepLines(string(b), "server"))
			}
		}
	})

	kubectlVia := func(h *nethost.Host, args ...string) (string, error) {
		full := append([]string{"kubectl", "--kubeconfig", filepath.Join(h.Root, "etc/kubernetes/admin.conf"), "--request-timeout", "5s"}, args...)
		return nethost.Run(h.Command(h.Binary, full...))
	}
	nodesReady := func(via *nethost.Host, names ...string) error {
		out, err := kubectlVia(via, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}`)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		for _, n := range names {
			if !strings.Contains(out, n+"=True") {
				return fmt.Errorf("%s not Ready: %s", n, out)
			}
		}
		return nil
	}

	t.Run("three control planes", func(t *testing.T) {
		eventually(t, 60*time.Second, 500*time.Millisecond, "every node Ready", func() error { return nodesReady(cp1, "cp1", "cp2", "cp3", "w1") })
		voters, learners := etcdMembers(t, cp1)
		if len(voters) != 3 || len(learners) != 0 {
			t.Errorf("etcd voters %v, learners %v; want 3 voting members", voters, learners)
		}
		for _, h := range cps {
			if err := apiReady(h); err != nil {
				t.Errorf("%s's API server: %v", h.Name, err)
			}
		}
		f := filepath.Join(cp1.Root, "app.yaml")
		os.WriteFile(f, []byte(strings.Replace(fmt.Sprintf(testApp, images.TestServer), "replicas: 2", "replicas: 1", 1)), 0o644)
		kubectl(t, cp1, "apply", "-f", f)
		os.Remove(f)
		kubectl(t, cp1, "rollout", "status", "deployment/web", "--timeout=120s")
	})

	t.Run("lose a control plane", func(t *testing.T) {
		// A client on the worker reads through its load balancer every
		// 50 ms; the longest gap between answers is what it saw of the loss.
		pool := x509.NewCertPool()
		caPEM, _ := os.ReadFile(filepath.Join(w.Root, "etc/kubernetes/pki/ca.crt"))
		pool.AppendCertsFromPEM(caPEM)
		client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: w.DialContext, TLSClientConfig: &tls.Config{RootCAs: pool}}}
		var mu sync.Mutex
		var gap time.Duration
		var reads, failures int
		stop := make(chan struct{})
		reader := make(chan struct{})
		go func() {
			defer close(reader)
			last := time.Now()
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				resp, err := client.Get("https://127.0.0.1:6444/readyz")
				ok := err == nil && resp.StatusCode == 200
				if err == nil {
					resp.Body.Close()
				}
				mu.Lock()
				reads++
				if ok {
					if d := time.Since(last); d > gap {
						gap = d
					}
					last = time.Now()
				} else {
					failures++
				}
				mu.Unlock()
			}
		}()
		time.Sleep(time.Second)
		killed := time.Now()
		cp1.KillAll()
		t.Logf("killed every process of cp1 (the worker's seed) in %s", time.Since(killed).Round(time.Millisecond))
		time.Sleep(5 * time.Second)
		// The worker stays Ready and the cluster stays writable, read
		// through the surviving control planes.
		if err := nodesReady(cps[1], "w1"); err != nil {
			t.Errorf("after losing cp1: %v", err)
		}
		if out, err := kubectlVia(cps[1], "scale", "deployment/web", "--replicas", "2"); err != nil {
			t.Errorf("scaling through cp2: %v %s", err, out)
		}
		eventually(t, 90*time.Second, time.Second, "2 web replicas ready without cp1", func() error {
			out, err := kubectlVia(cps[2], "get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}")
			if err != nil || strings.TrimSpace(out) != "2" {
				return fmt.Errorf("ready replicas %q %v", out, err)
			}
			return nil
		})
		if err := nodesReady(cps[2], "w1"); err != nil {
			t.Errorf("w1 after losing cp1: %v", err)
		}
		close(stop)
		<-reader
		mu.Lock()
		t.Logf("reads through the worker's load balancer: %d, %d failed; longest gap %s", reads, failures, gap.Round(time.Millisecond))
		if gap > 2*time.Second {
			t.Errorf("the longest gap seen through the load balancer was %s (goal 2 s)", gap)
		}
		mu.Unlock()

		// Start cp1 again: it catches up and serves.
		kb(t, cp1, "daemon", "start")
		eventually(t, 120*time.Second, 500*time.Millisecond, "cp1's API server back", func() error { return apiReady(cp1) })
		eventually(t, 60*time.Second, 500*time.Millisecond, "every node Ready again", func() error { return nodesReady(cps[1], "cp1", "cp2", "cp3", "w1") })
		if voters, _ := etcdMembers(t, cp1); len(voters) != 3 {
			t.Errorf("etcd voters after cp1's return: %v", voters)
		}
	})

	t.Run("reset a control plane", func(t *testing.T) {
		// The other nodes' daemons and kubelets must live through it.
		others := map[string][]int{}
		for _, h := range []*nethost.Host{cp1, cps[1], w} {
			st := readStatus(t, h)
			others[h.Name] = []int{st.PID}
			for _, c := range st.Components {
				if c.Name == "kubelet" {
					others[h.Name] = append(others[h.Name], c.PID)
				}
			}
		}
		out := kb(t, cps[2], "reset", "--force")
		t.Log(lastLine(out))
		if !strings.Contains(out, "Removing etcd member") || !strings.Contains(out, "etcd keeps 2 members") {
			t.Errorf("reset did not remove the etcd member:\n%s", out)
		}
		nethost.Reap()
		if files := listAll(cps[2].Root); len(files) != 0 {
			t.Errorf("left under cp3's root: %v", files)
		}
		voters, learners := etcdMembers(t, cp1)
		if len(voters) != 2 || len(learners) != 0 {
			t.Errorf("etcd after the reset: voters %v, learners %v", voters, learners)
		}
		eventually(t, 30*time.Second, 500*time.Millisecond, "nodes Ready after the reset", func() error { return nodesReady(cp1, "cp1", "cp2", "w1") })
		for name, pids := range others {
			for _, pid := range pids {
				if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
					t.Errorf("%s's daemon or kubelet (pid %d) went with cp3's reset", name, pid)
				}
			}
		}
		// Two members left: taking one away would leave no redundancy.
		out, err := nethost.Run(cps[1].Kubeboot("reset", "--force=false", "--skip-phases", "preflight"))
		if err == nil || !strings.Contains(out, "etcd has 2 members") || !strings.Contains(out, "--force") {
			t.Errorf("reset of one of two etcd members: %v\n%s", err, out)
		}
		if err := apiReady(cps[1]); err != nil {
			t.Errorf("cp2 after the refused reset: %v", err)
		}
	})

	t.Run("reset everything", func(t *testing.T) {
		kb(t, w, "reset", "--force")
		kb(t, cps[1], "reset", "--force")
		kb(t, cp1, "reset", "--force")
		nethost.Reap()
		if left := podProcesses(); len(left) != 0 {
			t.Errorf("pod processes left: %v", left)
		}
		after := machineState()
		for p := range after {
			if !initial[p] {
				t.Errorf("left on the machine: %s", p)
			}
		}
	})
}
