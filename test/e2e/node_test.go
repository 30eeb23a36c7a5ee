package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/test/nethost"
)

const testApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: %[1]s
        imagePullPolicy: IfNotPresent
        args: ["--port", "8080"]
        ports: [{containerPort: 8080}]
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
---
apiVersion: v1
kind: Service
metadata: {name: web-nodeport, namespace: default}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: 30080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: default}
spec:
  containers:
  - name: client
    image: %[1]s
    imagePullPolicy: IfNotPresent
    args: ["--port", "9090"]
`

// podProcesses lists the processes of pods on this machine.
func podProcesses() []int { return nethost.PodProcesses() }

func TestSingleNode(t *testing.T) {
	requireE2E(t)
	if n := len(podProcesses()); n != 0 {
		t.Fatalf("%d pod processes run on this machine already; this test needs it free of other kubelets", n)
	}
	initial := machineState()
	// The host looks like one running systemd-resolved: its resolv.conf
	// names the local stub, and the stub's upstream list names a server
	// the test runs at the host's own address.
	h := newHostWith(t, "kbe2e-node", "10.204.0.2", nethost.Options{
		ResolvConf: "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch .\n", SystemdResolved: "nameserver 10.204.0.2\n"})
	stopDNS := serveUpstreamDNS(t, h, "10.204.0.2:53", "outside.test.", "192.0.2.10")
	defer stopDNS()
	t.Cleanup(func() {
		// Pods are not children of anything the host tracks: kill them too.
		for _, pid := range podProcesses() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	t.Run("preflight without runc", func(t *testing.T) {
		// kubeboot carries containerd: runc is the one runtime piece a
		// host must have.
		cmd := h.Kubeboot("init", "--node-name", "n1", "--single-node")
		cmd.Env = []string{"PATH=/nonexistent"}
		out, err := nethost.Run(cmd)
		if err == nil || !strings.Contains(out, "[ERROR FileExisting-runc]") || !strings.Contains(out, "apt-get install runc") || strings.Contains(out, "FileExisting-containerd") {
			t.Fatalf("init without runc: %v\n%s", err, out)
		}
		if files := listAll(h.Root); len(files) != 0 {
			t.Fatalf("a failed preflight wrote %v", files)
		}
	})

	var initEnd time.Time
	t.Run("init", func(t *testing.T) {
		start := time.Now()
		// A variable of init's environment must not reach the components.
		cmd := h.Kubeboot("init", "--node-name", "n1", "--single-node", "--manifests", initManifests(t))
		cmd.Env = append(os.Environ(), "E2E_INIT_SECRET=hunter2")
		out, err := nethost.Run(cmd)
		if err != nil {
			t.Fatalf("init: %v\n%s", err, out)
		}
		initEnd = time.Now()
		if !strings.Contains(out, "[addons] kubelet: serverTLSBootstrap=true: metrics-server") {
			t.Errorf("init does not say it turned serverTLSBootstrap on for metrics-server:\n%s", grepLines(out, "addons"))
		}
		t.Logf("init took %s", time.Since(start).Round(time.Millisecond))
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "healthy after") || strings.HasPrefix(l, "[images]") {
				t.Log(l)
			}
		}
		took := eventually(t, 60*time.Second, 200*time.Millisecond, "node Ready", func() error {
			out, err := kubectlErr(h, "get", "node", "n1", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
			if err != nil || out != "True" {
				return fmt.Errorf("Ready=%q %v", out, err)
			}
			return nil
		})
		t.Logf("node Ready %s after init returned", took.Round(time.Millisecond))
		took = eventually(t, 90*time.Second, 200*time.Millisecond, "CoreDNS Ready", func() error {
			out, err := kubectlErr(h, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.status.readyReplicas}")
			if err != nil || out != "2" {
				return fmt.Errorf("ready replicas %q %v", out, err)
			}
			return nil
		})
		t.Logf("CoreDNS Ready %s after node Ready", took.Round(time.Millisecond))
		checkRuntimeIsKubeboots(t, h, "n1")
		// As kubeadm on a systemd-resolved host: the kubelet hands pods the
		// resolver's upstream list, and CoreDNS forwards to it.
		kcfg, _ := os.ReadFile(filepath.Join(h.Root, "var/lib/kubelet/config.yaml"))
		if !strings.Contains(string(kcfg), "resolvConf: /run/systemd/resolve/resolv.conf") {
			t.Errorf("the kubelet's resolvConf is not systemd-resolved's upstream list:\n%s", grepLines(string(kcfg), "resolv"))
		}
		if corefile := kubectl(t, h, "-n", "kube-system", "get", "configmap", "coredns", "-o", "jsonpath={.data.Corefile}"); !strings.Contains(corefile, "forward . /etc/resolv.conf") {
			t.Errorf("CoreDNS does not forward to its resolv.conf:\n%s", corefile)
		}
		// Only this machine's cgroup v1 may be warned about.
		if w := grepLines(out, "WARNING"); strings.Contains(strings.ReplaceAll(w, "[WARNING SystemVerification]: cgroups v1", ""), "WARNING") {
			t.Errorf("init warns on a host whose resolver has upstream servers:\n%s", w)
		}
		// Each component runs under its own name, with its own environment.
		// kubeboot's own components run inside the daemon, with no process
		// of their own: here the certificate renewal, the scheduled
		// snapshots (both on by default) and the CA rotation's agent. The
		// pod network's engines are processes of their own.
		inDaemon := map[string]bool{"cert-renewer": false, "etcd-snapshotter": false, "ca-agent": false}
		var engines []string
		for _, c := range readStatus(t, h).Components {
			if c.Name == component.Flannel || c.Name == component.KubeRouter {
				engines = append(engines, c.Name)
			}
		}
		if len(engines) != 2 {
			t.Errorf("the pod network's engines in status: %v, want flannel and kube-router", engines)
		}
		for _, c := range readStatus(t, h).Components {
			if c.InProcess {
				if !component.IsInDaemon(c.Name) || c.PID != readStatus(t, h).PID {
					t.Errorf("%s runs in the daemon's process: %+v", c.Name, c)
				}
				inDaemon[c.Name] = true
				continue
			}
			if component.IsInDaemon(c.Name) {
				t.Errorf("%s runs as a process of its own (pid %d), not in the daemon", c.Name, c.PID)
			}
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.PID))
			if want := c.Name[:min(len(c.Name), 15)]; strings.TrimSpace(string(comm)) != want {
				t.Errorf("%s (pid %d) runs as %q, want %q (ps -C finds components by it)", c.Name, c.PID, strings.TrimSpace(string(comm)), want)
			}
			environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", c.PID))
			if strings.Contains(string(environ), "E2E_INIT_SECRET") || !strings.Contains(string(environ), "PATH=") {
				t.Errorf("%s's environment: %q", c.Name, environ)
			}
		}
		for name, seen := range inDaemon {
			if !seen {
				t.Errorf("%s does not run in the daemon's process", name)
			}
		}
		if ps, err := exec.Command("ps", "-C", "kube-apiserver,etcd,kubelet", "-o", "comm=").Output(); err != nil || !strings.Contains(string(ps), "kube-apiserver") || !strings.Contains(string(ps), "etcd") || !strings.Contains(string(ps), "kubelet") {
			t.Errorf("ps -C kube-apiserver,etcd,kubelet: %v %q", err, ps)
		}
		// The node daemon's systemd unit: valid for systemd, and where
		// systemd is not init (here), init says how to start the node.
		unit := filepath.Join(h.Root, "etc/systemd/system", fsys.Tag(h.Root)+".service")
		if o, err := exec.Command("systemd-analyze", "verify", unit).CombinedOutput(); err != nil || len(o) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, o)
		}
		if !strings.Contains(out, "after a reboot, start this node with `kubeboot --root "+h.Root+" daemon start`") {
			t.Errorf("init does not say how to start the node after a reboot:\n%s", grepLines(out, "systemd"))
		}
		out = kubectl(t, h, "get", "pods", "-n", "kube-system", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}")
		for _, p := range strings.Fields(out) {
			if !strings.HasSuffix(p, "=Running") {
				t.Errorf("kube-system pod not Running: %s", p)
			}
		}
	})

	t.Run("kubectl top", func(t *testing.T) { testMetrics(t, h, []string{"n1"}, initEnd) })
	t.Run("manifests directory", func(t *testing.T) { testManifests(t, h, "n1") })
	t.Run("foreign images", func(t *testing.T) { testForeignImages(t, h) })
	t.Run("volumes", func(t *testing.T) { testStorage(t, h, map[string]*nethost.Host{"n1": h}) })

	t.Run("workloads, services and DNS", func(t *testing.T) {
		f := filepath.Join(h.Root, "app.yaml")
		os.WriteFile(f, []byte(fmt.Sprintf(testApp, images.TestServer)), 0o644)
		kubectl(t, h, "apply", "-f", f)
		os.Remove(f)
		kubectl(t, h, "rollout", "status", "deployment/web", "--timeout=90s")
		kubectl(t, h, "wait", "--for=condition=Ready", "pod/client", "--timeout=90s")
		clusterIP := kubectl(t, h, "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
		get := func(url string) (string, error) {
			return kubectlErr(h, "exec", "client", "--", "/test-server", "--get", url)
		}
		// The pod's lo is up (containerd brings it up itself, with no
		// loopback plugin): the client answers itself on 127.0.0.1.
		eventually(t, 30*time.Second, 200*time.Millisecond, "the client answering itself on 127.0.0.1", func() error {
			if out, err := get("http://127.0.0.1:9090/"); err != nil || !strings.Contains(out, `"hostname":"client"`) {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
		// Cluster names from CoreDNS, names outside the cluster through it
		// from the host's upstream server.
		for name, want := range map[string]string{"kubernetes.default.svc.cluster.local": "10.96.0.1", "web.default.svc.cluster.local": clusterIP, "outside.test": "192.0.2.10"} {
			eventually(t, 30*time.Second, 300*time.Millisecond, "resolve "+name, func() error {
				out, err := kubectlErr(h, "exec", "client", "--", "/test-server", "--resolve", name)
				if err != nil || strings.TrimSpace(out) != want {
					return fmt.Errorf("%v: %q, want %s", err, out, want)
				}
				return nil
			})
		}
		for _, url := range []string{"http://" + clusterIP + "/", "http://web.default.svc.cluster.local/"} {
			seen := map[string]bool{}
			eventually(t, 30*time.Second, 200*time.Millisecond, "HTTP "+url, func() error {
				out, err := get(url)
				if err != nil {
					return fmt.Errorf("%v: %s", err, out)
				}
				var r struct{ Hostname string }
				if err := json.Unmarshal([]byte(out), &r); err != nil || !strings.HasPrefix(r.Hostname, "web-") {
					return fmt.Errorf("unexpected answer %q", out)
				}
				seen[r.Hostname] = true
				return nil
			})
			t.Logf("%s answered from %v", url, keys(seen))
		}
		// One masquerade rule set for the pod network (flannel's), none
		// per pod.
		nat, _ := nethost.Run(h.Command("iptables-save", "-t", "nat"))
		if !strings.Contains(nat, ":FLANNEL-POSTRTG") || !strings.Contains(nat, "-A FLANNEL-POSTRTG -s 10.244.0.0/16") {
			t.Errorf("no masquerade rule for the pod network:\n%s", grepLines(nat, "POSTR"))
		}
		if strings.Contains(nat, ":CNI-") {
			t.Errorf("per-pod CNI chains in the nat table:\n%s", grepLines(nat, "CNI-"))
		}
		// NodePort, from the host itself.
		webAnswers(t, h, "http://"+h.IP+":30080/", 30*time.Second, "NodePort from the host")
		pod := strings.Fields(kubectl(t, h, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}"))[0]
		if logs := kubectl(t, h, "logs", pod); !strings.Contains(logs, "listening on") {
			t.Errorf("kubectl logs %s: %q", pod, logs)
		}
	})

	podState := func() string {
		return kubectl(t, h, "get", "pods", "-A", "-o", "jsonpath={range .items[*]}{.metadata.uid}:{.status.containerStatuses[0].containerID}:{.status.containerStatuses[0].restartCount} {end}")
	}
	nodeReady := func(what string) {
		took := eventually(t, 60*time.Second, 200*time.Millisecond, "node Ready after "+what, func() error {
			out, err := kubectlErr(h, "get", "node", "n1", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
			if err != nil || out != "True" {
				return fmt.Errorf("Ready=%q %v", out, err)
			}
			return nil
		})
		t.Logf("node Ready %s after %s", took.Round(time.Millisecond), what)
	}

	t.Run("restart the kubelet, then the daemon", func(t *testing.T) {
		before := podState()
		var kubelet int
		for _, c := range readStatus(t, h).Components {
			if c.Name == "kubelet" {
				kubelet = c.PID
			}
		}
		syscall.Kill(kubelet, syscall.SIGTERM)
		eventually(t, 30*time.Second, 100*time.Millisecond, "kubelet restarted", func() error {
			for _, c := range readStatus(t, h).Components {
				if c.Name == "kubelet" && c.PID != kubelet && c.Ready {
					return nil
				}
			}
			return fmt.Errorf("not yet")
		})
		nodeReady("a kubelet restart")
		kb(t, h, "daemon", "stop")
		nethost.Reap()
		// A helper changed on disk is refused and rewritten at the start.
		portmap := filepath.Join(h.Root, "var/lib/kubeboot/helpers/current/portmap")
		original, err := os.ReadFile(portmap)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(portmap, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		kb(t, h, "daemon", "start")
		eventually(t, 10*time.Second, 100*time.Millisecond, "portmap rewritten", func() error {
			if b, _ := os.ReadFile(portmap); !bytes.Equal(b, original) {
				return fmt.Errorf("portmap still differs")
			}
			return nil
		})
		dlog, _ := os.ReadFile(filepath.Join(h.Root, "var/log/kubeboot/daemon.log"))
		if line := grepLines(lastDaemonRun(string(dlog)), "rewriting it"); !strings.Contains(line, "portmap") {
			t.Errorf("no log line of the rewritten helper:\n%s", lastDaemonRun(string(dlog)))
		} else {
			t.Log(strings.TrimSpace(line))
		}
		eventually(t, 60*time.Second, 200*time.Millisecond, "API after daemon restart", func() error {
			out, err := kubectlErr(h, "get", "--raw", "/readyz")
			if err != nil || strings.TrimSpace(out) != "ok" {
				return fmt.Errorf("%v %s", err, out)
			}
			return nil
		})
		nodeReady("a daemon restart")
		if after := podState(); after != before {
			clog, _ := os.ReadFile(filepath.Join(h.Root, "var/log/kubeboot/containerd.log"))
			t.Errorf("pods changed across the restarts:\nbefore %s\nafter  %s\ncontainerd's log since its restart:\n%s", before, after, grepLines(lastRun(string(clog)), "level="))
		}
		out, err := kubectlErr(h, "exec", "client", "--", "/test-server", "--get", "http://web.default.svc.cluster.local/")
		if err != nil {
			t.Errorf("service after the restarts: %v %s", err, out)
		}
	})

	t.Run("power loss", func(t *testing.T) {
		uids := func() string {
			return kubectl(t, h, "get", "pods", "-A", "-o", "jsonpath={range .items[*]}{.metadata.uid} {end}")
		}
		before := uids()
		// Every process of the node ends at once, as in a power loss; the
		// daemon, started again as the unit does, brings the node back
		// from its spec files.
		h.KillAll()
		start := time.Now()
		kb(t, h, "daemon", "start")
		eventually(t, 90*time.Second, 200*time.Millisecond, "API after the power loss", func() error {
			out, err := kubectlErr(h, "get", "--raw", "/readyz")
			if err != nil || strings.TrimSpace(out) != "ok" {
				return fmt.Errorf("%v %s", err, out)
			}
			return nil
		})
		nodeReady("a power loss")
		if after := uids(); after != before {
			t.Errorf("pods changed across the power loss:\nbefore %s\nafter  %s", before, after)
		}
		eventually(t, 90*time.Second, 500*time.Millisecond, "the service answers again", func() error {
			out, err := kubectlErr(h, "exec", "client", "--", "/test-server", "--get", "http://web.default.svc.cluster.local/")
			if err != nil {
				return fmt.Errorf("%v %s", err, out)
			}
			return nil
		})
		t.Logf("the node serves again %s after the daemon's start", time.Since(start).Round(time.Millisecond))
	})

	t.Run("reset leaves nothing", func(t *testing.T) {
		pods := podProcesses()
		if len(pods) == 0 {
			t.Fatal("no pod processes before reset: the test checks nothing")
		}
		out := kb(t, h, "reset", "--force")
		t.Log(out)
		time.Sleep(200 * time.Millisecond)
		nethost.Reap()
		if procs := h.Processes(); len(procs) != 0 {
			t.Errorf("node processes left: %v", procs)
		}
		if left := podProcesses(); len(left) != 0 {
			t.Errorf("pod processes left: %v", left)
		}
		mounts, _ := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", h.HolderPID()))
		if strings.Contains(string(mounts), h.Root) {
			t.Errorf("mounts left under %s:\n%s", h.Root, grepLines(string(mounts), h.Root))
		}
		links, _ := nethost.Run(h.Command("ip", "-o", "link"))
		if strings.Contains(links, "cni0") || strings.Contains(links, "veth") {
			t.Errorf("links left:\n%s", links)
		}
		rules, _ := nethost.Run(h.Command("iptables-save"))
		if strings.Contains(rules, "KUBE-") || strings.Contains(rules, "CNI-") || strings.Contains(rules, "KUBEBOOT-") {
			t.Errorf("iptables chains left:\n%s", grepLines(rules, "-"))
		}
		if files := listAll(h.Root); len(files) != 0 {
			t.Errorf("left under the root prefix: %v", files)
		}
		_, cgroups := cpugroup.Parent(h.Root)
		for _, d := range cgroups {
			if _, err := os.Stat(d); err == nil {
				t.Errorf("the node's cgroup %s is left", d)
			}
		}
		for p := range machineState() {
			if !initial[p] {
				t.Errorf("left on the machine: %s", p)
			}
		}
	})
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// serveUpstreamDNS runs, in the host's network namespace, a DNS server that
// answers name with an A record addr (and nothing else): the upstream
// resolver of a host, without leaving the test's namespaces.
func serveUpstreamDNS(t *testing.T, h *nethost.Host, listen, name, addr string) func() {
	t.Helper()
	var pc net.PacketConn
	if err := h.InNetns(func() (err error) {
		pc, err = net.ListenPacket("udp", listen)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		for _, q := range r.Question {
			if strings.EqualFold(q.Name, name) && q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.ParseIP(addr)})
			}
		}
		if len(m.Answer) == 0 {
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m) //nolint:errcheck
	})}
	go srv.ActivateAndServe() //nolint:errcheck
	return func() { srv.Shutdown() }
}

// checkRuntimeIsKubeboots checks that the containerd serving the node's
// kubelet is the one kubeboot carries (2.x, the kubeboot binary's own
// process), and that the pods' shims, pause processes and CNI plugins
// run from the helpers under the host's root, not from anything a
// distribution installed.
func checkRuntimeIsKubeboots(t *testing.T, h *nethost.Host, nodeName string) {
	t.Helper()
	rv := kubectl(t, h, "get", "node", nodeName, "-o", "jsonpath={.status.nodeInfo.containerRuntimeVersion}")
	if !strings.HasPrefix(rv, "containerd://2.") {
		t.Errorf("node %s's runtime is %q, want kubeboot's containerd 2.x", nodeName, rv)
	}
	self, err := filepath.EvalSymlinks(binary)
	if err != nil {
		t.Fatal(err)
	}
	helpersDir, err := filepath.EvalSymlinks(filepath.Join(h.Root, "var/lib/kubeboot/helpers/current"))
	if err != nil {
		t.Fatalf("the helpers' directory: %v", err)
	}
	for _, c := range readStatus(t, h).Components {
		if c.Name == "containerd" {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", c.PID)); exe != self {
				t.Errorf("containerd (pid %d) runs %q, want the kubeboot binary %s", c.PID, exe, self)
			}
		}
	}
	shims, pauses := 0, 0
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
		if err != nil || filepath.Base(exe) != "containerd-shim-runc-v2" {
			continue
		}
		if cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline")); !strings.Contains(string(cmdline), h.Root) {
			continue // another node's
		}
		shims++
		if exe != filepath.Join(helpersDir, "containerd-shim-runc-v2") {
			t.Errorf("shim %s runs %s, not kubeboot's helper in %s", p.Name(), exe, helpersDir)
		}
	}
	for _, pid := range podProcesses() {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe == "/pause" {
			pauses++
		}
	}
	if shims == 0 || pauses == 0 {
		t.Errorf("found %d shims and %d pause processes of kubeboot's helpers", shims, pauses)
	}
	t.Logf("runtime %s; %d shims and %d pause processes from the helpers in %s", rv, shims, pauses, helpersDir)
}

// lastRun is what a component's log holds since its last start.
func lastRun(log string) string {
	if i := strings.LastIndex(log, "==== "); i >= 0 {
		return log[i:]
	}
	return log
}

// lastDaemonRun is what the daemon's log holds since its last start.
func lastDaemonRun(log string) string {
	if i := strings.LastIndex(log, "kubeboot daemon started"); i >= 0 {
		return log[i:]
	}
	return log
}

// webAnswers waits until the test server of the web Deployment answers
// url from h's network.
func webAnswers(t *testing.T, h *nethost.Host, url string, within time.Duration, what string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: h.DialContext, DisableKeepAlives: true}}
	eventually(t, within, 200*time.Millisecond, what, func() error {
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"hostname":"web-`) {
			return fmt.Errorf("HTTP %d %s", resp.StatusCode, b)
		}
		return nil
	})
}
