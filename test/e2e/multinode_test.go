package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// newNetwork makes a network for a test and removes it when the test ends
// (after the hosts on it: cleanups run last-in first-out).
func newNetwork(t *testing.T, name string) *nethost.Network {
	t.Helper()
	return newNetworkMTU(t, name, 0)
}

// kubectlOn runs kubectl on host h with the control plane's admin.conf.
func kubectlOn(t *testing.T, h, cp *nethost.Host, args ...string) string {
	t.Helper()
	full := append([]string{"kubectl", "--kubeconfig", filepath.Join(cp.Root, "etc/kubernetes/admin.conf")}, args...)
	out, err := nethost.Run(h.Command(h.Binary, full...))
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

const spreadApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Honor, labelSelector: {matchLabels: {app: web}}}
      containers:
      - name: web
        image: %[1]s
        imagePullPolicy: IfNotPresent
        args: ["--port", "8080"]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`

const clientPod = `apiVersion: v1
kind: Pod
metadata: {name: client-%[2]s, namespace: default, labels: {role: client}}
spec:
  nodeName: %[2]s
  tolerations: [{operator: Exists}]
  containers:
  - name: client
    image: %[1]s
    imagePullPolicy: IfNotPresent
    args: ["--port", "9090"]
`

// TestMultiNode: one control plane and two workers, each a host of its
// own, with kubeboot's default flags, on hosts like users': cp and w1 on
// one subnet, w2 on another behind a router (as racks and cloud subnets
// are), every link at MTU 1400 (as on many clouds and VPNs). Plain routes
// to other nodes' pod CIDRs cannot cross the router, and a pod MTU of
// 1500 does not fit the links: the pod network must be an overlay that
// knows the host's MTU.
func TestMultiNode(t *testing.T) {
	requireE2E(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already; this test needs it free of other kubelets", n)
	}
	initial := machineState()
	netA := newNetworkMTU(t, "kbm-net", linkMTU)
	netB := newNetworkMTU(t, "kbm-net2", linkMTU)
	const gwA, gwB = "10.206.0.1", "10.207.0.1"
	newRouter(t, "kbm-rt", nethost.Leg{Network: netA, Addr: gwA + "/24"}, nethost.Leg{Network: netB, Addr: gwB + "/24"})
	const cpIP, cpSecondIP, w1IP, w2IP, fakeIP = "10.206.0.2", "10.206.0.12", "10.206.0.3", "10.207.0.4", "10.206.0.9"
	cp := newHostWith(t, "kbm-cp", cpIP, nethost.Options{Network: netA, Gateway: gwA, ExtraIPs: []string{cpSecondIP}})
	w1 := newHostWith(t, "kbm-w1", w1IP, nethost.Options{Network: netA, Gateway: gwA})
	w2 := newHostWith(t, "kbm-w2", w2IP, nethost.Options{Network: netB, Gateway: gwB})
	fake := newHostWith(t, "kbm-fake", fakeIP, nethost.Options{Network: netA, Gateway: gwA})
	nodes := map[string]*nethost.Host{"cp": cp, "w1": w1, "w2": w2}
	// What each host's network namespace holds before it is a node: its
	// reset must leave it so.
	netBefore := map[string]map[string]bool{}
	for n, h := range nodes {
		netBefore[n] = netState(t, h)
	}

	// init with the flags a README user passes: none about DNS, though
	// every host's resolv.conf names only a local resolver.
	start := time.Now()
	out := kb(t, cp, "init", "--node-name", "cp", "--apiserver-cert-extra-sans", cpSecondIP)
	t.Logf("init took %s", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out, "WARNING: CoreDNS answers cluster names only") || !strings.Contains(out, "--dns-upstream") {
		t.Errorf("init's output does not warn that names outside the cluster will not resolve:\n%s", out)
	}
	j, ok := nethost.ParseJoin(out)
	if !ok {
		t.Fatalf("no join command in init's output:\n%s", out)
	}
	token, hash := j.Token, j.Hash

	t.Run("refusals write nothing", func(t *testing.T) {
		refusals(t, cp, w1, w2, fake, token, hash)
	})

	t.Run("dry run writes nothing", func(t *testing.T) {
		out := kb(t, w1, "join", cpIP+":6443", "--token", token, "--discovery-token-ca-cert-hash", hash, "--node-name", "w1", "--dry-run")
		for _, want := range []string{"[dryrun] Would write file", "bootstrap-kubelet.conf", "[dryrun] Would run: kubelet", "Finished dry-running successfully"} {
			if !strings.Contains(out, want) {
				t.Errorf("dry run output lacks %q:\n%s", want, out)
			}
		}
		if files := listAll(w1.Root); len(files) != 0 {
			t.Errorf("a dry run wrote %v", files)
		}
	})

	// w1 joins through the control plane's second address; cluster-info
	// names the first.
	t.Run("join through another address of the control plane", func(t *testing.T) {
		start := time.Now()
		out := kb(t, w1, "join", cpSecondIP+":6443", "--token", token, "--discovery-token-ca-cert-hash", hash, "--node-name", "w1")
		t.Logf("join took %s", time.Since(start).Round(time.Millisecond))
		logProgress(t, out)
		if !strings.Contains(out, "This node has joined the cluster") || !strings.Contains(out, "cluster-info names https://"+cpIP+":6443; this node uses https://"+cpSecondIP+":6443") ||
			!strings.Contains(out, "load balancer on 127.0.0.1:6444, seeded with "+cpSecondIP+":6443") {
			t.Errorf("join output:\n%s", out)
		}
		took := waitNodeReady(t, w1, cp, "w1", start)
		t.Logf("w1 Ready %s after join started", took.Round(time.Millisecond))
		// flannel wrote the CNI configuration with the pod CIDR, before its
		// lease, and the lease's was the same.
		if b, err := os.ReadFile(filepath.Join(w1.Root, "var/log/kubeboot/flannel.log")); err != nil || !strings.Contains(string(b), "ahead of the lease") || strings.Contains(string(b), "differs from the one written") {
			t.Errorf("flannel's log on w1 (%v): no CNI configuration ahead of the lease, or the lease's differed:\n%s", err, b)
		}
		// The cluster has no controlPlaneEndpoint: the node talks through
		// its node-local load balancer, seeded with the address it was given.
		checkWorkerFiles(t, w1, "w1", "https://127.0.0.1:6444")
		checkSeed(t, w1, cpSecondIP+":6443")
	})

	t.Run("join a second worker", func(t *testing.T) {
		start := time.Now()
		out := kb(t, w2, "join", cpIP+":6443", "--token", token, "--discovery-token-ca-cert-hash", hash, "--node-name", "w2")
		t.Logf("join took %s", time.Since(start).Round(time.Millisecond))
		// Pods the moment the join ends, while the node may still be
		// bringing in its images.
		podsOfEveryImage(t, cp, "w2")
		logProgress(t, out)
		took := waitNodeReady(t, w2, cp, "w2", start)
		t.Logf("w2 Ready %s after join started", took.Round(time.Millisecond))
		checkWorkerFiles(t, w2, "w2", "https://127.0.0.1:6444")
		checkSeed(t, w2, cpIP+":6443")
		if n := kubectlOn(t, cp, cp, "get", "nodes", "-o", "name"); strings.Count(n, "node/") != 3 {
			t.Errorf("nodes: %s", n)
		}
	})

	t.Run("images from the binary, never a failed pull", func(t *testing.T) { testImagesAtJoin(t, cp, w2, "w2") })

	t.Run("workloads across nodes", func(t *testing.T) {
		f := filepath.Join(cp.Root, "app.yaml")
		app := fmt.Sprintf(spreadApp, images.TestServer)
		for n := range nodes {
			app += "---\n" + fmt.Sprintf(clientPod, images.TestServer, n)
		}
		os.WriteFile(f, []byte(app), 0o644)
		kubectlOn(t, cp, cp, "apply", "-f", f)
		os.Remove(f)
		kubectlOn(t, cp, cp, "rollout", "status", "deployment/web", "--timeout=120s")
		kubectlOn(t, cp, cp, "wait", "--for=condition=Ready", "pod/client-cp", "pod/client-w1", "pod/client-w2", "--timeout=120s")
		var pods corev1.PodList
		if err := json.Unmarshal([]byte(kubectlOn(t, cp, cp, "get", "pods", "-l", "app=web", "-o", "json")), &pods); err != nil {
			t.Fatal(err)
		}
		perNode := map[string][]string{} // node -> pod IPs
		for _, p := range pods.Items {
			perNode[p.Spec.NodeName] = append(perNode[p.Spec.NodeName], p.Status.PodIP)
		}
		t.Logf("web pods per node: %v", perNode)
		if len(perNode["w1"]) != 2 || len(perNode["w2"]) != 2 {
			t.Errorf("the 4 replicas do not spread over the two workers: %v", perNode)
		}
		clusterIP := strings.TrimSpace(kubectlOn(t, cp, cp, "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"))
		for name, h := range nodes {
			// The Service from the node itself (kube-proxy on every host).
			webAnswers(t, h, "http://"+clusterIP+"/", 30*time.Second, "Service from node "+name)
			// DNS from a pod on the node: a cluster name and a Service name.
			client := "client-" + name
			eventually(t, 30*time.Second, 300*time.Millisecond, "DNS from a pod on "+name, func() error {
				out, err := kubectlErr(cp, "exec", client, "--", "/test-server", "--resolve", "kubernetes.default.svc.cluster.local")
				if err != nil || strings.TrimSpace(out) != "10.96.0.1" {
					return fmt.Errorf("%v: %s", err, out)
				}
				out, err = kubectlErr(cp, "exec", client, "--", "/test-server", "--get", "http://web.default.svc.cluster.local/")
				if err != nil || !strings.Contains(out, `"hostname":"web-`) {
					return fmt.Errorf("%v: %s", err, out)
				}
				return nil
			})
			// Pod to pod, to a pod on every worker.
			for _, target := range []string{"w1", "w2"} {
				ip := perNode[target][0]
				out, err := kubectlErr(cp, "exec", client, "--", "/test-server", "--get", "http://"+ip+":8080/")
				if err != nil || !strings.Contains(out, `"hostname":"web-`) {
					t.Errorf("from a pod on %s to a pod on %s (%s): %v %s", name, target, ip, err, out)
				}
			}
		}
		for _, p := range pods.Items {
			if logs := kubectlOn(t, cp, cp, "logs", p.Name); !strings.Contains(logs, "listening on") {
				t.Errorf("kubectl logs %s (on %s): %q", p.Name, p.Spec.NodeName, logs)
			}
		}
	})

	t.Run("pod network across subnets", func(t *testing.T) { testPodNetwork(t, cp, nodes) })
	t.Run("NetworkPolicy enforced", func(t *testing.T) { testNetworkPolicy(t, cp) })

	t.Run("volumes follow their node", func(t *testing.T) { testStorage(t, cp, nodes) })
	t.Run("kubectl top, every node", func(t *testing.T) { testMetrics(t, cp, []string{"cp", "w1", "w2"}, time.Time{}) })

	t.Run("reset a worker", func(t *testing.T) {
		// Pods the earlier steps deleted (local-path's helper pods, the
		// NetworkPolicy namespace's) leave their cgroups and logs to their
		// kubelet's housekeeping: wait until the other nodes hold only pods
		// the API still has, so that what goes during the reset is the
		// reset's doing.
		podsSettled(t, cp, cp, w1)
		stateBefore := machineState()
		w2IDs := containerIDs(t, w2)
		var others []string
		for _, h := range []*nethost.Host{cp, w1} {
			others = append(others, containerIDs(t, h)...)
		}
		podsBefore := kubectlOn(t, cp, cp, "get", "pods", "-A", "--field-selector", "spec.nodeName!=w2",
			"-o", "jsonpath={range .items[*]}{.metadata.name}={.status.containerStatuses[0].containerID} {end}")
		checkNetworkMade(t, w2, netBefore["w2"])
		out := kb(t, w2, "reset", "--force")
		t.Log(out)
		nethost.Reap()
		if !strings.Contains(out, `Deleted Node "w2"`) {
			t.Errorf("reset did not delete the Node")
		}
		eventually(t, 30*time.Second, 500*time.Millisecond, "Node w2 gone", func() error {
			if out, _ := kubectlErr(cp, "get", "node", "w2"); !strings.Contains(out, "NotFound") {
				return fmt.Errorf("%s", out)
			}
			return nil
		})
		if procs := append(w2.Processes(), w2.Pods()...); len(procs) != 0 {
			t.Errorf("w2's processes left: %v", procs)
		}
		if files := listAll(w2.Root); len(files) != 0 {
			t.Errorf("left under w2's root: %v", files)
		}
		checkNetworkGone(t, w2, netBefore["w2"])
		after := machineState()
		w2Tag := fsys.Tag(w2.Root)
		owner := func(p string) string {
			switch {
			case strings.Contains(p, w2.Root) || strings.Contains(p, w2Tag) || slices.ContainsFunc(w2IDs, func(id string) bool { return strings.Contains(p, id) }):
				return "w2"
			case strings.Contains(p, cp.Root) || strings.Contains(p, w1.Root) || strings.Contains(p, fsys.Tag(cp.Root)) || strings.Contains(p, fsys.Tag(w1.Root)) ||
				slices.ContainsFunc(others, func(id string) bool { return strings.Contains(p, id) }):
				return "other"
			}
			return ""
		}
		var w2Entries int
		for p := range stateBefore {
			switch owner(p) {
			case "w2":
				w2Entries++
				if after[p] {
					t.Errorf("w2's %s is left", p)
				}
			case "other":
				if !after[p] {
					t.Errorf("another node's %s was removed", p)
				}
			}
		}
		if w2Entries == 0 {
			t.Errorf("w2 had no entries at the machine-wide paths: the check checks nothing")
		}
		t.Logf("reset removed w2's %d entries at machine-wide paths and cgroups; %d entries stayed", w2Entries, len(after))
		for p := range after {
			if !stateBefore[p] && owner(p) != "other" {
				t.Errorf("%s appeared with the reset", p)
			}
		}
		podsAfter := kubectlOn(t, cp, cp, "get", "pods", "-A", "--field-selector", "spec.nodeName!=w2",
			"-o", "jsonpath={range .items[*]}{.metadata.name}={.status.containerStatuses[0].containerID} {end}")
		for _, p := range strings.Fields(podsBefore) {
			if !strings.Contains(podsAfter, p) {
				t.Errorf("the other nodes' pod %s changed with w2's reset:\nbefore %s\nafter  %s", p, podsBefore, podsAfter)
			}
		}
		// The other nodes' pods still reach each other: w2's reset took
		// nothing of their network.
		for _, p := range [][2]string{{"cp", "w1"}, {"w1", "cp"}} {
			url := "http://" + podIP(t, cp, "default", "client-"+p[1]) + ":9090/"
			if err := reaches(cp, "default", "client-"+p[0], url, "client-"+p[1]); err != nil {
				t.Errorf("after w2's reset, from a pod on %s to a pod on %s: %v", p[0], p[1], err)
			}
		}
	})

	t.Run("reset the rest", func(t *testing.T) {
		checkNetworkMade(t, w1, netBefore["w1"])
		checkNetworkMade(t, cp, netBefore["cp"])
		kb(t, w1, "reset", "--force")
		kb(t, cp, "reset", "--force")
		nethost.Reap()
		for _, h := range []*nethost.Host{cp, w1} {
			if files := listAll(h.Root); len(files) != 0 {
				t.Errorf("left under %s: %v", h.Root, files)
			}
		}
		checkNetworkGone(t, w1, netBefore["w1"])
		checkNetworkGone(t, cp, netBefore["cp"])
		if left := podProcesses(); len(left) != 0 {
			t.Errorf("pod processes left: %v", left)
		}
		after := machineState()
		for p := range after {
			if !initial[p] {
				t.Errorf("left on the machine: %s", p)
			}
		}
		for p := range initial {
			if !after[p] {
				t.Errorf("removed from the machine, though it was there before the test: %s", p)
			}
		}
	})
}

// refusals tries joins that must fail, each with a clear message and
// nothing written on the joining node.
func refusals(t *testing.T, cp, w1, w2, fake *nethost.Host, token, hash string) {
	const wrongHash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	cpEndpoint := "10.206.0.2:6443"
	refuse := func(h *nethost.Host, args []string, want ...string) {
		t.Helper()
		start := time.Now()
		out, err := nethost.Run(h.Kubeboot(append([]string{"join"}, append(args, "--node-name", h.Name)...)...))
		if err == nil {
			t.Errorf("join %v succeeded:\n%s", args, out)
			return
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("join %v: output lacks %q:\n%s", args, w, out)
			}
		}
		if files := listAll(h.Root); len(files) != 0 {
			t.Errorf("join %v wrote %v", args, files)
		}
		t.Logf("refused in %s: %s", time.Since(start).Round(time.Millisecond), lastLine(out))
	}
	refuse(w1, []string{cpEndpoint, "--token", token, "--discovery-token-ca-cert-hash", wrongHash},
		"matches no --discovery-token-ca-cert-hash", hash, "kubeboot token create --print-join-command")

	deleted := strings.TrimSpace(kb(t, cp, "token", "create"))
	kb(t, cp, "token", "delete", deleted)
	expired := strings.TrimSpace(kb(t, cp, "token", "create", "--ttl", "1s"))
	time.Sleep(2 * time.Second)
	done := make(chan bool)
	go func() {
		defer close(done)
		refuse(w2, []string{cpEndpoint, "--token", expired, "--discovery-token-ca-cert-hash", hash}, "unknown or has expired", "kubeboot token create --print-join-command")
	}()
	refuse(w1, []string{cpEndpoint, "--token", deleted, "--discovery-token-ca-cert-hash", hash}, "unknown or has expired", "kubeboot token create --print-join-command")
	<-done

	// An impostor at another address: it replays the cluster's signed
	// cluster-info, altered or not, with a certificate of its own.
	var mode string
	stop := serveFakeAPI(t, cp, fake, func() string { return mode })
	defer stop()
	mode = "tampered"
	refuse(w1, []string{"10.206.0.9:6443", "--token", token, "--discovery-token-ca-cert-hash", hash}, "does not match its signature", "refusing")
	mode = "replayed"
	refuse(w1, []string{"10.206.0.9:6443", "--token", token, "--discovery-token-ca-cert-hash", hash}, "serving certificate that the cluster CA does not verify", "refusing")
}

// serveFakeAPI serves, at the fake host's address, the control plane's
// cluster-info ("replayed") or a copy whose server was changed but whose
// signatures were kept ("tampered"), over a certificate of its own CA.
func serveFakeAPI(t *testing.T, cp, fake *nethost.Host, mode func() string) func() {
	t.Helper()
	real := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: cp.DialContext, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := real.Get("https://10.206.0.2:6443/api/v1/namespaces/kube-public/configmaps/cluster-info")
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	err = json.NewDecoder(resp.Body).Decode(&cm)
	resp.Body.Close()
	if err != nil || cm.Data[bootstrapapi.KubeConfigKey] == "" {
		t.Fatalf("reading cluster-info: %v", err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("10.206.0.9")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	var l net.Listener
	if err := fake.InNetns(func() (err error) {
		l, err = net.Listen("tcp", "10.206.0.9:6443")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := cm.DeepCopy()
		if mode() == "tampered" {
			out.Data[bootstrapapi.KubeConfigKey] = strings.ReplaceAll(out.Data[bootstrapapi.KubeConfigKey], "10.206.0.2", "10.206.0.9")
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})}
	go srv.Serve(tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}))
	return func() { srv.Close() }
}

// logProgress logs the lines of a command's output that say how long
// its steps took.
func logProgress(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " after ") || strings.HasPrefix(l, "[images]") {
			t.Log(l)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// waitNodeReady waits for a node's Ready condition and returns the time
// since start.
func waitNodeReady(t *testing.T, h, cp *nethost.Host, name string, start time.Time) time.Duration {
	t.Helper()
	eventually(t, 60*time.Second, 100*time.Millisecond, "node "+name+" Ready", func() error {
		out, err := kubectlErr(cp, "get", "node", name, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
		if err != nil || out != "True" {
			return fmt.Errorf("Ready=%q %v", out, err)
		}
		return nil
	})
	return time.Since(start)
}

// checkWorkerFiles checks a worker's kubeconfigs and credentials: every
// kubeconfig names server (the node-local load balancer, or the endpoint
// the node joined through), the kubelet's
// client certificate carries the node's identity, as kubeadm's would, and
// the bootstrap token is gone from the disk.
func checkWorkerFiles(t *testing.T, h *nethost.Host, name, server string) {
	t.Helper()
	dir := filepath.Join(h.Root, "etc/kubernetes")
	if _, err := os.Stat(filepath.Join(dir, "bootstrap-kubelet.conf")); !os.IsNotExist(err) {
		t.Errorf("bootstrap-kubelet.conf (the bootstrap token) is still on the node: %v", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki/ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kubelet.conf", "kube-proxy.conf"} {
		rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if rc.Host != server {
			t.Errorf("%s names %s, want %s", f, rc.Host, server)
		}
		if string(rc.CAData) != string(caPEM) {
			t.Errorf("%s trusts another CA than pki/ca.crt", f)
		}
		pem, err := os.ReadFile(rc.CertFile)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		certs, err := certutil.ParseCertsPEM(pem)
		if err != nil || len(certs) == 0 {
			t.Fatalf("%s: %v", f, err)
		}
		c := certs[0]
		if c.Subject.CommonName != "system:node:"+name || !slices.Equal(c.Subject.Organization, []string{"system:nodes"}) {
			t.Errorf("%s: identity %q %v, want system:node:%s [system:nodes]", f, c.Subject.CommonName, c.Subject.Organization, name)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: the client certificate does not verify against the cluster CA: %v", f, err)
		}
	}
}

// checkSeed checks that the worker's load balancer starts from the
// endpoint the node joined through.
func checkSeed(t *testing.T, h *nethost.Host, seed string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.Root, "var/lib/kubeboot/apiserver-lb.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Seed    string   `json:"seed"`
		Servers []string `json:"servers"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.Seed != seed {
		t.Errorf("the load balancer's seed is %q, want %q (the endpoint given to join)", st.Seed, seed)
	}
	t.Logf("%s's load balancer: seed %s, API servers %v", h.Name, st.Seed, st.Servers)
	// It runs in the node daemon's process, from its spec's configuration.
	for _, c := range readStatus(t, h).Components {
		if c.Name == component.APIServerLB && !c.InProcess {
			t.Errorf("%s's load balancer runs as a process of its own (pid %d), not in the daemon", h.Name, c.PID)
		}
	}
}

// containerIDs lists the containers (sandboxes included) of a host's
// containerd, through containerd's Go client.
func containerIDs(t *testing.T, h *nethost.Host) []string {
	t.Helper()
	c, err := images.Connect(filepath.Join(h.Root, "run/kubeboot/containerd/containerd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cs, err := c.Containers(context.Background())
	if err != nil {
		t.Fatalf("listing %s's containers: %v", h.Name, err)
	}
	var ids []string
	for _, ctr := range cs {
		ids = append(ids, ctr.ID())
	}
	return ids
}

// podsSettled waits until every pod cgroup and pod log directory of the
// given nodes belongs to a pod the API server still has.
func podsSettled(t *testing.T, api *nethost.Host, hosts ...*nethost.Host) {
	t.Helper()
	waited := eventually(t, 90*time.Second, time.Second, "the deleted pods' cgroups and logs gone", func() error {
		out, err := kubectlErr(api, "get", "pods", "-A", "-o", "jsonpath={range .items[*]}{.metadata.uid} {end}")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		known := map[string]bool{}
		for _, uid := range strings.Fields(out) {
			known[uid] = true
		}
		var stale []string
		for _, h := range hosts {
			filepath.WalkDir(filepath.Join("/sys/fs/cgroup/memory", fsys.Tag(h.Root), "kubepods"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "pod") && !known[strings.TrimPrefix(d.Name(), "pod")] {
					stale = append(stale, p)
				}
				return nil
			})
		}
		logs, _ := os.ReadDir("/var/log/pods")
		for _, e := range logs {
			// namespace_name_uid
			if i := strings.LastIndex(e.Name(), "_"); i > 0 && !known[e.Name()[i+1:]] {
				stale = append(stale, filepath.Join("/var/log/pods", e.Name()))
			}
		}
		if len(stale) > 0 {
			return fmt.Errorf("of pods deleted: %v", stale)
		}
		return nil
	})
	t.Logf("the deleted pods' cgroups and logs gone from %d nodes after %s", len(hosts), waited.Round(time.Millisecond))
}
