package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// familyService is a Service over the client pods asking for the
// families given (RequireDualStack: both, or the test fails).
const familyService = `apiVersion: v1
kind: Service
metadata: {name: clients, namespace: default}
spec:
  ipFamilyPolicy: %s
  selector: {role: client}
  ports: [{port: 80, targetPort: 9090}]
`

// clientsDenied denies every ingress to the client pods.
const clientsDenied = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: clients-denied, namespace: default}
spec:
  podSelector: {matchLabels: {role: client}}
  policyTypes: [Ingress]
`

// families says which IP families the addresses are of, "4", "6" or "46".
func families(addrs []string) string {
	var v4, v6 bool
	for _, a := range addrs {
		ip := net.ParseIP(strings.Trim(a, "[]"))
		switch {
		case ip == nil:
		case ip.To4() != nil:
			v4 = true
		default:
			v6 = true
		}
	}
	out := ""
	if v4 {
		out += "4"
	}
	if v6 {
		out += "6"
	}
	return out
}

// urlHost is an address as a URL's host holds it.
func urlHost(ip string) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]"
	}
	return ip
}

// stackCase is one cluster of TestDualStack or TestIPv6Only: a control
// plane and a worker on one network at linkMTU, with the addresses and
// init flags given, and the families ("46" or "6") everything must have.
type stackCase struct {
	prefix             string
	cpIP, cpIP6, wIP   string
	wIP6, gateway6     string
	endpoint           string
	podCIDR, svcCIDR   string
	want               string
	policy, dnsService string
}

func testStack(t *testing.T, c stackCase) {
	requireE2E(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already; this test needs it free of other kubelets", n)
	}
	netw := newNetworkMTU(t, c.prefix+"-net", linkMTU)
	cp := newHostWith(t, c.prefix+"-cp", c.cpIP, nethost.Options{Network: netw, IPv6: c.cpIP6, Gateway6: c.gateway6})
	w := newHostWith(t, c.prefix+"-w1", c.wIP, nethost.Options{Network: netw, IPv6: c.wIP6, Gateway6: c.gateway6})
	nodes := map[string]*nethost.Host{"cp": cp, "w1": w}
	netBefore := map[string]map[string]bool{}
	for n, h := range nodes {
		netBefore[n] = netState(t, h)
	}

	// The flags a kubeadm user types for these networks; nothing else.
	start := time.Now()
	out := kb(t, cp, "init", "--node-name", "cp", "--pod-network-cidr", c.podCIDR, "--service-cidr", c.svcCIDR)
	t.Logf("init took %s", time.Since(start).Round(time.Millisecond))
	j, ok := nethost.ParseJoin(out)
	if !ok {
		t.Fatalf("no join command in init's output:\n%s", out)
	}
	start = time.Now()
	kb(t, w, "join", c.endpoint, "--token", j.Token, "--discovery-token-ca-cert-hash", j.Hash, "--node-name", "w1")
	took := waitNodeReady(t, w, cp, "w1", start)
	t.Logf("w1 Ready %s after join started", took.Round(time.Millisecond))

	t.Run("nodes have addresses and pod subnets of each family", func(t *testing.T) {
		var nodeList corev1.NodeList
		if err := json.Unmarshal([]byte(kubectlOn(t, cp, cp, "get", "nodes", "-o", "json")), &nodeList); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodeList.Items {
			var internal []string
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					internal = append(internal, a.Address)
				}
			}
			if got := families(internal); got != c.want {
				t.Errorf("node %s: InternalIPs %v (families %s, want %s)", n.Name, internal, got, c.want)
			}
			if got := families(cidrIPs(n.Spec.PodCIDRs)); got != c.want {
				t.Errorf("node %s: podCIDRs %v (families %s, want %s)", n.Name, n.Spec.PodCIDRs, got, c.want)
			}
			t.Logf("node %s: InternalIPs %v, podCIDRs %v", n.Name, internal, n.Spec.PodCIDRs)
		}
	})

	app := fmt.Sprintf(familyService, c.policy)
	for n := range nodes {
		app += "---\n" + fmt.Sprintf(clientPod, images.TestServer, n)
	}
	f := filepath.Join(cp.Root, "app.yaml")
	os.WriteFile(f, []byte(app), 0o644)
	kubectlOn(t, cp, cp, "apply", "-f", f)
	os.Remove(f)
	kubectlOn(t, cp, cp, "wait", "--for=condition=Ready", "pod/client-cp", "pod/client-w1", "--timeout=120s")

	ips := map[string][]string{}
	t.Run("pods have an address of each family", func(t *testing.T) {
		for n := range nodes {
			var pod corev1.Pod
			if err := json.Unmarshal([]byte(kubectlOn(t, cp, cp, "get", "pod", "client-"+n, "-o", "json")), &pod); err != nil {
				t.Fatal(err)
			}
			for _, p := range pod.Status.PodIPs {
				ips[n] = append(ips[n], p.IP)
			}
			if got := families(ips[n]); got != c.want {
				t.Errorf("pod on %s: podIPs %v (families %s, want %s)", n, ips[n], got, c.want)
			}
			t.Logf("pod on %s: %v", n, ips[n])
		}
	})

	// The overlay carries IPv6 pods over the nodes' IPv6 addresses: an
	// outer IPv6 header leaves the pods 70 bytes less than the link.
	t.Run("pods' MTU leaves room for VXLAN over IPv6", func(t *testing.T) {
		want := linkMTU - vxlanOverheadIPv6
		for n, h := range nodes {
			out, err := testServerIn(cp, "default", "client-"+n, "--mtu", "eth0")
			if err != nil || out != strconv.Itoa(want) {
				t.Errorf("eth0 of a pod on %s: MTU %q (%v), want %d (the node's %d less VXLAN over IPv6's %d)", n, out, err, want, linkMTU, vxlanOverheadIPv6)
			}
			vx := vxlanLinks(t, h)
			for l, mtu := range vx {
				if mtu != want {
					t.Errorf("node %s: VXLAN link %s has MTU %d, want %d", n, l, mtu, want)
				}
			}
			t.Logf("node %s: pod eth0 MTU %s, VXLAN links %v", n, out, vx)
		}
	})

	t.Run("pod to pod across nodes, each family", func(t *testing.T) {
		for _, p := range [][2]string{{"cp", "w1"}, {"w1", "cp"}} {
			for _, ip := range ips[p[1]] {
				base := "http://" + urlHost(ip) + ":9090"
				took, err := within(20*time.Second, 300*time.Millisecond, func() error {
					return reaches(cp, "default", "client-"+p[0], base+"/", "client-"+p[1])
				})
				if err != nil {
					t.Errorf("from a pod on %s to a pod on %s (%s): %v", p[0], p[1], ip, err)
					continue
				}
				out, err := testServerIn(cp, "default", "client-"+p[0], "--download", fmt.Sprintf("%s/bytes?n=%d", base, transferBytes), "--timeout", "60s")
				if err != nil {
					t.Errorf("%d MiB from a pod on %s to a pod on %s (%s): %v: %s", transferBytes>>20, p[1], p[0], ip, err, out)
					continue
				}
				t.Logf("from a pod on %s to a pod on %s over %s: GET answered after %s; %s", p[1], p[0], ip, took.Round(time.Millisecond), out)
			}
		}
	})

	t.Run("a Service of the families asked, by DNS name", func(t *testing.T) {
		var svc corev1.Service
		if err := json.Unmarshal([]byte(kubectlOn(t, cp, cp, "get", "service", "clients", "-o", "json")), &svc); err != nil {
			t.Fatal(err)
		}
		if got := families(svc.Spec.ClusterIPs); got != c.want {
			t.Fatalf("Service %s: clusterIPs %v (families %s, want %s)", c.policy, svc.Spec.ClusterIPs, got, c.want)
		}
		t.Logf("Service (%s): clusterIPs %v", c.policy, svc.Spec.ClusterIPs)
		for n := range nodes {
			// Through each cluster IP, from a pod on every node.
			for _, ip := range svc.Spec.ClusterIPs {
				url := "http://" + urlHost(ip) + "/"
				if _, err := within(30*time.Second, 300*time.Millisecond, func() error {
					out, err := testServerIn(cp, "default", "client-"+n, "--get", url, "--timeout", "2s")
					if err != nil || !strings.Contains(out, `"hostname":"client-`) {
						return fmt.Errorf("%v: %s", err, out)
					}
					return nil
				}); err != nil {
					t.Errorf("from a pod on %s to the Service's %s: %v", n, ip, err)
				}
			}
			// Its name resolves to every cluster IP.
			name := "clients.default.svc.cluster.local"
			if _, err := within(30*time.Second, 300*time.Millisecond, func() error {
				out, err := testServerIn(cp, "default", "client-"+n, "--resolve", name)
				got := strings.Fields(out)
				if err != nil || len(got) != len(svc.Spec.ClusterIPs) || slices.ContainsFunc(svc.Spec.ClusterIPs, func(ip string) bool { return !slices.Contains(got, ip) }) {
					return fmt.Errorf("%s resolves to %q (%v), want %v", name, out, err, svc.Spec.ClusterIPs)
				}
				return nil
			}); err != nil {
				t.Errorf("DNS from a pod on %s: %v", n, err)
			}
		}
		if c.dnsService != "" {
			dns := strings.TrimSpace(kubectlOn(t, cp, cp, "get", "service", "-n", "kube-system", "kube-dns", "-o", "jsonpath={.spec.clusterIP}"))
			if dns != c.dnsService {
				t.Errorf("cluster DNS at %s, want %s", dns, c.dnsService)
			}
		}
	})

	// kube-router before v2.1.1 left IPv6 policies unapplied: a policy
	// must hold on each family.
	t.Run("NetworkPolicy on each family", func(t *testing.T) {
		applyOn(t, cp, clientsDenied)
		for _, ip := range ips["w1"] {
			url := "http://" + urlHost(ip) + ":9090/"
			took, err := within(policyDeadline, 200*time.Millisecond, func() error { return refused(cp, "default", "client-cp", url) })
			if err != nil {
				t.Errorf("default-deny: a pod on cp still reaches %s: %v", ip, err)
				continue
			}
			t.Logf("default-deny: %s refused %s after the write", ip, took.Round(time.Millisecond))
		}
		kubectlOn(t, cp, cp, "delete", "networkpolicy", "clients-denied")
		for _, ip := range ips["w1"] {
			url := "http://" + urlHost(ip) + ":9090/"
			if _, err := within(policyDeadline, 200*time.Millisecond, func() error { return reaches(cp, "default", "client-cp", url, "client-w1") }); err != nil {
				t.Errorf("policy deleted: a pod on cp does not reach %s again: %v", ip, err)
			}
		}
	})

	t.Run("reset leaves nothing of the network", func(t *testing.T) {
		for _, n := range []string{"w1", "cp"} {
			checkNetworkMade(t, nodes[n], netBefore[n])
			kb(t, nodes[n], "reset", "--force")
			nethost.Reap()
			if files := listAll(nodes[n].Root); len(files) != 0 {
				t.Errorf("left under %s's root: %v", n, files)
			}
			checkNetworkGone(t, nodes[n], netBefore[n])
		}
	})
}

// cidrIPs are the network addresses of CIDRs.
func cidrIPs(cidrs []string) []string {
	var out []string
	for _, c := range cidrs {
		ip, _, _ := strings.Cut(c, "/")
		out = append(out, ip)
	}
	return out
}

// TestDualStack: a cluster of both families from the flags a kubeadm user
// types (--pod-network-cidr and --service-cidr of one CIDR each), on hosts
// with an address of each: the nodes register both (found from each
// family's default route), pods get one of each and reach each other
// across nodes over both, a RequireDualStack Service gets two cluster IPs
// that answer and resolve.
func TestDualStack(t *testing.T) {
	testStack(t, stackCase{
		prefix: "kbd", cpIP: "10.208.0.2", cpIP6: "fd00:208::2", wIP: "10.208.0.3", wIP6: "fd00:208::3",
		endpoint: "10.208.0.2:6443",
		podCIDR:  "10.244.0.0/16,fd00:10:244::/56", svcCIDR: "10.96.0.0/16,fd00:10:96::/112",
		want: "46", policy: "RequireDualStack", dnsService: "10.96.0.10",
	})
}

// TestIPv6Only: a cluster of IPv6 alone, on hosts with no IPv4 address but
// loopback's; the worker joins the control plane at its IPv6 address.
func TestIPv6Only(t *testing.T) {
	testStack(t, stackCase{
		// A router's address as the default route's gateway, as on IPv6
		// hosts configured by router advertisements; nothing answers it.
		prefix: "kb6", cpIP: "fd00:209::2", wIP: "fd00:209::3", gateway6: "fd00:209::1",
		endpoint: "[fd00:209::2]:6443",
		podCIDR:  "fd00:10:244::/56", svcCIDR: "fd00:10:96::/112",
		want: "6", policy: "SingleStack", dnsService: "fd00:10:96::a",
	})
}
