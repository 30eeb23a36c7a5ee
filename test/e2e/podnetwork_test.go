package e2e

import (
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// The pod network's tests run on links narrower than Ethernet's, as on
// many clouds and VPNs: a pod MTU copied from nowhere (1500) stalls large
// transfers there while small requests pass.
const (
	linkMTU = 1400
	// vxlanOverhead is what a VXLAN overlay (flannel's default backend)
	// takes of the node's MTU: outer IPv4, UDP, VXLAN and Ethernet headers.
	vxlanOverhead = 50
	podMTU        = linkMTU - vxlanOverhead
	// vxlanOverheadIPv6 is VXLAN's over an IPv6 underlay (an outer IPv6
	// header is 20 bytes longer), which carries IPv6 pod networks.
	vxlanOverheadIPv6 = 70
	// transferBytes is enough full-size segments that a path which loses
	// them cannot pass by luck.
	transferBytes = 8 << 20
	// policyDeadline bounds the time from a NetworkPolicy's write to its
	// effect on new connections.
	policyDeadline = 10 * time.Second
)

// newNetworkMTU makes a network whose links have the given MTU and removes
// it when the test ends (after the hosts on it).
func newNetworkMTU(t *testing.T, name string, mtu int) *nethost.Network {
	t.Helper()
	n, err := nethost.NewNetworkMTU(name, mtu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// newRouter makes a router between networks and removes it when the test
// ends (after the hosts behind it).
func newRouter(t *testing.T, name string, legs ...nethost.Leg) *nethost.Router {
	t.Helper()
	r, err := nethost.NewRouter(name, legs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// within retries f every interval until it succeeds or timeout passes,
// and says how long it took; unlike eventually it leaves failing to the
// caller, so that a test reports every pair that fails, not the first.
func within(timeout, interval time.Duration, f func() error) (time.Duration, error) {
	start := time.Now()
	for {
		err := f()
		if err == nil {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return time.Since(start), err
		}
		time.Sleep(interval)
	}
}

// testServerIn runs the test-server program in a pod's container (its
// client modes: --get, --download, --mtu), through the control plane's
// kubectl exec.
func testServerIn(cp *nethost.Host, namespace, pod string, args ...string) (string, error) {
	out, err := kubectlErr(cp, append([]string{"exec", "-n", namespace, pod, "--", "/test-server"}, args...)...)
	return strings.TrimSpace(out), err
}

// reaches says whether a pod's GET of url is answered by the test-server
// named want.
func reaches(cp *nethost.Host, namespace, pod, url, want string) error {
	out, err := testServerIn(cp, namespace, pod, "--get", url, "--timeout", "2s")
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if !strings.Contains(out, `"hostname":"`+want+`"`) {
		return fmt.Errorf("answered by another than %s: %s", want, out)
	}
	return nil
}

// refused says whether a pod's GET of url failed in the network: the
// client ran and got no answer (not kubectl exec failing).
func refused(cp *nethost.Host, namespace, pod, url string) error {
	out, err := testServerIn(cp, namespace, pod, "--get", url, "--timeout", "2s")
	switch {
	case err == nil:
		return fmt.Errorf("reached: %s", out)
	case !strings.Contains(out, "test-server:"):
		return fmt.Errorf("the client did not run: %v: %s", err, out)
	}
	return nil
}

// podIP is a pod's IP address.
func podIP(t *testing.T, cp *nethost.Host, namespace, pod string) string {
	t.Helper()
	ip := strings.TrimSpace(kubectlOn(t, cp, cp, "get", "pod", "-n", namespace, pod, "-o", "jsonpath={.status.podIP}"))
	if ip == "" {
		t.Fatalf("pod %s/%s has no IP", namespace, pod)
	}
	return ip
}

// applyOn applies a manifest with the control plane's kubectl, from
// stdin: nothing is written under any node's root.
func applyOn(t *testing.T, cp *nethost.Host, manifest string) {
	t.Helper()
	cmd := cp.Command(cp.Binary, "kubectl", "--kubeconfig", filepath.Join(cp.Root, "etc/kubernetes/admin.conf"), "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := nethost.Run(cmd); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, manifest)
	}
}

// vxlanLinks lists a host's VXLAN links (the overlay's device, whatever
// the engine names it) with their MTU.
func vxlanLinks(t *testing.T, h *nethost.Host) map[string]int {
	t.Helper()
	out, err := nethost.Run(h.Command("ip", "-d", "-o", "link", "show", "type", "vxlan"))
	if err != nil {
		t.Fatalf("ip link on %s: %v\n%s", h.Name, err, out)
	}
	links := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		links[name] = -1
		if i := slices.Index(f, "mtu"); i >= 0 && i+1 < len(f) {
			links[name], _ = strconv.Atoi(f[i+1])
		}
	}
	return links
}

// testPodNetwork: from the client pod on each node to the client pod on
// every other node, a small GET and a transfer of transferBytes (full-size
// segments, which a pod MTU above the path's stalls), on links of linkMTU
// between two subnets; every pod's eth0 and every node's overlay device
// has podMTU.
func testPodNetwork(t *testing.T, cp *nethost.Host, nodes map[string]*nethost.Host) {
	names := slices.Sorted(maps.Keys(nodes))
	ips := map[string]string{}
	for _, n := range names {
		ips[n] = podIP(t, cp, "default", "client-"+n)
		out, err := testServerIn(cp, "default", "client-"+n, "--mtu", "eth0")
		if err != nil || out != strconv.Itoa(podMTU) {
			t.Errorf("eth0 of a pod on %s: MTU %q (%v), want %d (the node's %d less VXLAN's %d)", n, out, err, podMTU, linkMTU, vxlanOverhead)
		} else {
			t.Logf("eth0 of a pod on %s (%s): MTU %s", n, ips[n], out)
		}
		vx := vxlanLinks(t, nodes[n])
		if len(vx) == 0 {
			t.Errorf("node %s has no VXLAN link: no overlay carries its pods' traffic", n)
		}
		for l, mtu := range vx {
			if mtu != podMTU {
				t.Errorf("node %s: VXLAN link %s has MTU %d, want %d", n, l, mtu, podMTU)
			}
		}
		t.Logf("node %s's VXLAN links: %v", n, vx)
	}
	for _, from := range names {
		for _, to := range names {
			if from == to {
				continue
			}
			base := "http://" + ips[to] + ":9090"
			took, err := within(20*time.Second, 300*time.Millisecond, func() error {
				return reaches(cp, "default", "client-"+from, base+"/", "client-"+to)
			})
			if err != nil {
				t.Errorf("GET from a pod on %s to a pod on %s (%s): %v", from, to, ips[to], err)
				continue
			}
			out, err := testServerIn(cp, "default", "client-"+from, "--download", fmt.Sprintf("%s/bytes?n=%d", base, transferBytes), "--timeout", "60s")
			if err != nil {
				t.Errorf("%d MiB from a pod on %s to a pod on %s: %v: %s", transferBytes>>20, to, from, err, out)
				continue
			}
			t.Logf("from a pod on %s to a pod on %s: GET answered after %s; %s", to, from, took.Round(time.Millisecond), out)
		}
	}
}

const netpolNamespace = "netpol"

// netpolPods: a server on w2 and two clients on w1, one labelled
// access=yes.
const netpolPods = `apiVersion: v1
kind: Namespace
metadata: {name: netpol}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: netpol, labels: {app: server}}
spec:
  nodeName: w2
  terminationGracePeriodSeconds: 1
  containers:
  - {name: server, image: %[1]s, imagePullPolicy: IfNotPresent, args: ["--port", "8080"]}
---
apiVersion: v1
kind: Pod
metadata: {name: client-yes, namespace: netpol, labels: {access: "yes"}}
spec:
  nodeName: w1
  terminationGracePeriodSeconds: 1
  containers:
  - {name: client, image: %[1]s, imagePullPolicy: IfNotPresent, args: ["--port", "9090"]}
---
apiVersion: v1
kind: Pod
metadata: {name: client-no, namespace: netpol}
spec:
  nodeName: w1
  terminationGracePeriodSeconds: 1
  containers:
  - {name: client, image: %[1]s, imagePullPolicy: IfNotPresent, args: ["--port", "9090"]}
`

const denyIngress = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: netpol}
spec:
  podSelector: {}
  policyTypes: [Ingress]
`

const allowLabelled = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-access, namespace: netpol}
spec:
  podSelector: {matchLabels: {app: server}}
  policyTypes: [Ingress]
  ingress:
  - from: [{podSelector: {matchLabels: {access: "yes"}}}]
`

// testNetworkPolicy: a default-deny ingress policy cuts a server pod off
// within policyDeadline, a policy allowing pods labelled access=yes lets
// those in and no other, and deleting the policies opens it again. The
// server and its clients sit on different nodes and subnets, so the
// policy holds on the overlay's traffic.
func testNetworkPolicy(t *testing.T, cp *nethost.Host) {
	defer func() {
		// Gone before the reset tests, which watch the other nodes' pods.
		if out, err := kubectlErr(cp, "delete", "namespace", netpolNamespace, "--timeout=90s"); err != nil {
			t.Errorf("deleting namespace %s: %v\n%s", netpolNamespace, err, out)
		}
	}()
	applyOn(t, cp, fmt.Sprintf(netpolPods, images.TestServer))
	kubectlOn(t, cp, cp, "wait", "-n", netpolNamespace, "--for=condition=Ready", "pod/server", "pod/client-yes", "pod/client-no", "--timeout=120s")
	url := "http://" + podIP(t, cp, netpolNamespace, "server") + ":8080/"
	reach := func(client string) func() error {
		return func() error { return reaches(cp, netpolNamespace, client, url, "server") }
	}
	blocked := func(client string) func() error {
		return func() error { return refused(cp, netpolNamespace, client, url) }
	}
	// effect waits up to policyDeadline for f, logs how long it took
	// since start, and fails the test if it did not come.
	effect := func(what string, start time.Time, f func() error) {
		t.Helper()
		if _, err := within(policyDeadline, 200*time.Millisecond, f); err != nil {
			t.Fatalf("%s: not within %s: %v", what, policyDeadline, err)
		}
		t.Logf("%s %s after the write", what, time.Since(start).Round(time.Millisecond))
	}

	for _, c := range []string{"client-yes", "client-no"} {
		if _, err := within(30*time.Second, 300*time.Millisecond, reach(c)); err != nil {
			t.Fatalf("with no policy, %s on w1 does not reach the server on w2: %v", c, err)
		}
	}

	start := time.Now()
	applyOn(t, cp, denyIngress)
	effect("default-deny: client-no refused", start, blocked("client-no"))
	if err := blocked("client-yes")(); err != nil {
		t.Errorf("default-deny: client-yes: %v", err)
	}

	start = time.Now()
	applyOn(t, cp, allowLabelled)
	effect("allow access=yes: client-yes reaches the server", start, reach("client-yes"))
	// The unlabelled client stays out, and not only once.
	for range 3 {
		if err := blocked("client-no")(); err != nil {
			t.Errorf("allow access=yes: client-no, unlabelled: %v", err)
			break
		}
	}

	start = time.Now()
	kubectlOn(t, cp, cp, "delete", "networkpolicy", "-n", netpolNamespace, "--all")
	effect("policies deleted: client-no reaches the server", start, reach("client-no"))
}

// builtinChains are the chains every iptables table has: the tables may
// stay once made, their builtin chains with them (at policy ACCEPT).
var builtinChains = []string{"INPUT", "OUTPUT", "FORWARD", "PREROUTING", "POSTROUTING"}

// netState lists what a host's network namespace holds of a network, one
// string each: links, routes (not the kernel's per-address ones in table
// local, nor IPv6 link-local ones, which come and go with the addresses),
// iptables chains and rules of both families, and ipsets where the ipset
// tool is installed. Before a node is made and after its reset, the
// lists must be equal.
func netState(t *testing.T, h *nethost.Host) map[string]bool {
	t.Helper()
	state := map[string]bool{}
	run := func(args ...string) []string {
		t.Helper()
		out, err := nethost.Run(h.Command(args[0], args[1:]...))
		if err != nil {
			t.Fatalf("%s on %s: %v\n%s", strings.Join(args, " "), h.Name, err, out)
		}
		return strings.Split(strings.TrimSpace(out), "\n")
	}
	for _, l := range run("ip", "-o", "link", "show") {
		if f := strings.Fields(l); len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			state["link "+name] = true
		}
	}
	for _, family := range []string{"-4", "-6"} {
		for _, l := range run("ip", family, "route", "show", "table", "all") {
			if l != "" && !strings.Contains(l, "table local") && !strings.Contains(l, "fe80::") {
				state["route "+l] = true
			}
		}
	}
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		table := ""
		for _, l := range run(save) {
			switch {
			case strings.HasPrefix(l, "*"):
				table = l[1:]
			case strings.HasPrefix(l, ":"):
				f := strings.Fields(l[1:])
				switch {
				case !slices.Contains(builtinChains, f[0]):
					state[save+" -t "+table+" chain "+f[0]] = true
				case len(f) > 1 && f[1] != "ACCEPT":
					// A policy the node set goes with it; one the host
					// had before (DROP on FORWARD, as Docker leaves) is
					// in the list before and stays.
					state[save+" -t "+table+" policy "+f[0]+" "+f[1]] = true
				}
			case strings.HasPrefix(l, "-A "):
				state[save+" -t "+table+" "+l] = true
			}
		}
	}
	if _, err := exec.LookPath("ipset"); err == nil {
		for _, l := range run("ipset", "list", "-n") {
			if l != "" {
				state["ipset "+l] = true
			}
		}
	}
	return state
}

// netAdded lists what a host's network namespace holds now that it did
// not before.
func netAdded(t *testing.T, h *nethost.Host, before map[string]bool) []string {
	t.Helper()
	var added []string
	for s := range netState(t, h) {
		if !before[s] {
			added = append(added, s)
		}
	}
	slices.Sort(added)
	return added
}

// checkNetworkMade checks, before a node's reset, that its pod network
// left marks a reset must remove (links, and kube-router's chains on
// every node), so that checkNetworkGone checks something.
func checkNetworkMade(t *testing.T, h *nethost.Host, before map[string]bool) {
	t.Helper()
	added := netAdded(t, h, before)
	var links, routerChains int
	for _, s := range added {
		switch {
		case strings.HasPrefix(s, "link "):
			links++
		case strings.Contains(s, " chain KUBE-ROUTER-"):
			routerChains++
		}
	}
	if links == 0 {
		t.Errorf("%s: the pod network made no link: the reset's check checks nothing", h.Name)
	}
	if routerChains == 0 {
		t.Errorf("%s: no KUBE-ROUTER-* chain: no NetworkPolicy controller runs on this node", h.Name)
	}
	t.Logf("%s before reset: %d entries of the pod network (%d links, %d kube-router chains), e.g. %v", h.Name, len(added), links, routerChains, added[:min(len(added), 8)])
}

// checkNetworkGone checks, after a node's reset, that its network
// namespace holds what it did before the node was made: no overlay or
// bridge link, no route to pod CIDRs, no chain or rule of flannel,
// kube-router, kube-proxy or kubeboot, no ipset; and the host's own
// links and routes still there.
func checkNetworkGone(t *testing.T, h *nethost.Host, before map[string]bool) {
	t.Helper()
	now := netState(t, h)
	var left, lost []string
	for s := range now {
		if !before[s] {
			left = append(left, s)
		}
	}
	for s := range before {
		if !now[s] {
			lost = append(lost, s)
		}
	}
	slices.Sort(left)
	slices.Sort(lost)
	if len(left) != 0 {
		t.Errorf("%s: the reset left of the pod network:\n%s", h.Name, strings.Join(left, "\n"))
	}
	if len(lost) != 0 {
		t.Errorf("%s: the reset removed what the host had before the node was made:\n%s", h.Name, strings.Join(lost, "\n"))
	}
}
