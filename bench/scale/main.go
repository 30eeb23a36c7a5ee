// Command scale measures a kubeboot cluster against SIG-scalability's SLOs
// with kubemark's hollow nodes: upstream's kubelet on a fake container
// runtime, one process per node, registered against a cluster of
// -control-planes network-namespace hosts. It times the nodes to Ready,
// watches them idle for flaps, then creates -pods-per-node pods per node
// through Deployments at -rate pods/s (the shape of clusterloader2's load
// test), scales them to half and deletes them, and prints pod startup
// latency from a watch, API call latency per resource and verb from each
// API server's apiserver_request_duration_seconds, and each process's
// peak memory and CPU.
//
//	make bench-scale && _output/kubeboot-bench-scale -nodes 100
//
// The binary is also the hollow node: `kubeboot-bench-scale hollow-node
// FLAGS` runs upstream's hollow-node command (k8s.io/kubernetes/cmd/
// kubemark), so the product binary carries no test fakes.
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubemark/app"
	"k8s.io/utils/ptr"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/bench/internal/hacluster"
	"github.com/kubeboot/kubeboot/bench/internal/slo"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/test/nethost"
)

const (
	hollowLabel = "kubeboot.io/hollow"
	namespace   = "scale-bench"
	inotifyFile = "/proc/sys/fs/inotify/max_user_instances"
)

type options struct {
	nodes, controlPlanes, podsPerNode, replicas, batch int
	rate                                               float64
	idle, timeout                                      time.Duration
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "hollow-node" {
		cmd := app.NewHollowNodeCommand()
		cmd.SetArgs(os.Args[2:])
		os.Exit(cli.Run(cmd))
	}
	var o options
	flag.IntVar(&o.nodes, "nodes", 100, "hollow nodes")
	flag.IntVar(&o.controlPlanes, "control-planes", 3, "control planes (stacked etcd)")
	flag.IntVar(&o.podsPerNode, "pods-per-node", 10, "pods per hollow node")
	flag.IntVar(&o.replicas, "replicas", 5, "pods per Deployment")
	flag.IntVar(&o.batch, "batch", 10, "hollow nodes started together, every 5 s")
	flag.Float64Var(&o.rate, "rate", 10, "pods created per second")
	flag.DurationVar(&o.idle, "idle", 5*time.Minute, "how long the Ready nodes are watched idle for flaps")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "how long each phase may take")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// bench is one run: the cluster, its clients and what is watched.
type bench struct {
	o       options
	c       *hacluster.Cluster
	cps     []*nethost.Host
	hollow  *nethost.Host
	client  kubernetes.Interface
	servers []kubernetes.Interface // one per API server
	mem     *memory
}

func run(o options) error {
	bin, err := benchutil.Binary()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The hollow host has a /tmp of its own (the hollow kubelets write
	// there, whatever TMPDIR says), so the cluster lives elsewhere.
	c, err := hacluster.New(bin, "/var/tmp", "kbscale-")
	if err != nil {
		return err
	}
	defer c.Close()
	restore, err := raiseInotify(8192)
	if err != nil {
		return err
	}
	defer restore()
	b := &bench{o: o, c: c}
	if err := b.controlPlanes(); err != nil {
		return err
	}
	if b.hollow, err = c.HostWith("hollow", "10.210.0.100", nethost.Options{PrivateDirs: []string{"/tmp"}}); err != nil {
		return err
	}
	if err := b.clients(); err != nil {
		return err
	}
	b.mem = watchMemory(append(slices.Clone(b.cps), b.hollow))
	defer b.mem.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := newNodeWatch(ctx, b.client)
	if err := b.startNodes(self, nodes); err != nil {
		return err
	}
	idleCPU := cpuReading(b.hosts())
	flaps := nodes.flaps()
	fmt.Printf("idle for %s with %d Ready hollow nodes...\n", o.idle, o.nodes)
	time.Sleep(o.idle)
	idleCPU.print("idle", b.hollow)
	flapsIdle := nodes.flaps() - flaps
	if err := b.load(ctx); err != nil {
		return err
	}
	fmt.Printf("\nNotReady transitions of hollow nodes while idle %s: %d; over the whole run: %d\n", o.idle, flapsIdle, nodes.flaps())
	b.mem.print(o.nodes)
	return nil
}

func (b *bench) hosts() []*nethost.Host { return append(slices.Clone(b.cps), b.hollow) }

// controlPlanes makes the first control plane (no metrics-server: it
// would scrape kubelets that serve no TLS) and joins the others.
func (b *bench) controlPlanes() (err error) {
	b.cps, err = b.c.ControlPlanes(b.o.controlPlanes, "10.210.0", "--skip-phases", "addon/metrics-server")
	return err
}

// clients builds the driver's clients from the administrator's
// kubeconfig: one through the first API server, and one per API server
// for its metrics. They dial through the first host's network namespace:
// the hosts' bridge has no address in this one.
func (b *bench) clients() error {
	cp1 := b.cps[0]
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(cp1.Root, "etc/kubernetes/admin.conf"))
	if err != nil {
		return err
	}
	cfg.Dial = cp1.DialContext
	cfg.QPS, cfg.Burst = 200, 400
	for i, h := range b.cps {
		c := rest.CopyConfig(cfg)
		c.Host = "https://" + h.IP + ":6443"
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			return err
		}
		if i == 0 {
			b.client = cs
		}
		b.servers = append(b.servers, cs)
	}
	return nil
}

// startNodes starts the hollow nodes -batch at a time every 5 s and waits
// until all are Ready; it prints the time from each node's start to Ready.
func (b *bench) startNodes(self string, nodes *nodeWatch) error {
	pki := filepath.Join(b.cps[0].Root, "etc/kubernetes/pki")
	ca, err := certutil.CertsFromFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return err
	}
	caKey, err := keyutil.PrivateKeyFromFile(filepath.Join(pki, "ca.key"))
	if err != nil {
		return err
	}
	logs := filepath.Join(b.c.Dir, "hollow-logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	started := map[string]time.Time{}
	begin := time.Now()
	for i := range b.o.nodes {
		name := fmt.Sprintf("hollow-%04d", i)
		server := "https://" + b.cps[i%len(b.cps)].IP + ":6443"
		kc := filepath.Join(b.hollow.Root, name+".conf")
		if err := nodeKubeconfig(kc, name, server, ca[0], caKey); err != nil {
			return err
		}
		log, err := os.Create(filepath.Join(logs, name+".log"))
		if err != nil {
			return err
		}
		cmd := b.hollow.Command(self, "hollow-node", "--morph=kubelet", "--name="+name, "--kubeconfig="+kc,
			fmt.Sprintf("--kubelet-port=%d", 20000+i), "--kubelet-read-only-port=0", "--use-host-image-service=false",
			"--node-labels="+hollowLabel+"=true", "--register-with-taints="+hollowLabel+"=true:NoSchedule")
		cmd.Stdout, cmd.Stderr = log, log
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
		started[name] = time.Now()
		err = nethost.Start(cmd)
		log.Close()
		if err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		if (i+1)%b.o.batch == 0 && i+1 < b.o.nodes {
			time.Sleep(5 * time.Second)
		}
	}
	deadline := time.Now().Add(b.o.timeout)
	for nodes.readyCount() < b.o.nodes {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d hollow nodes Ready after %s (logs in %s)", nodes.readyCount(), b.o.nodes, b.o.timeout, logs)
		}
		time.Sleep(time.Second)
	}
	var toReady []time.Duration
	for name, t := range nodes.readyTimes() {
		toReady = append(toReady, t.Sub(started[name]))
	}
	fmt.Printf("%d hollow nodes Ready %s after the first start; start to Ready p50 %s, p99 %s, max %s\n", b.o.nodes,
		time.Since(begin).Round(time.Second), benchutil.Percentile(toReady, 50).Round(time.Millisecond),
		benchutil.Percentile(toReady, 99).Round(time.Millisecond), slices.Max(toReady).Round(time.Millisecond))
	return nil
}

// nodeKubeconfig writes a kubeconfig for node name, its client
// certificate signed by the cluster's CA as system:node:<name> in
// system:nodes: what the Node authorizer and NodeRestriction want, with no
// TLS bootstrap round trip per node.
func nodeKubeconfig(file, name, server string, ca *x509.Certificate, caKey any) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubernetes"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "kubernetes", AuthInfo: name}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, file)
}

// load creates the pods through Deployments at the rate asked, waits
// until all run, scales every Deployment to half, then deletes them, and
// prints pod startup latency and API call latency over the three phases.
func (b *bench) load(ctx context.Context) error {
	total := b.o.nodes * b.o.podsPerNode
	deployments := (total + b.o.replicas - 1) / b.o.replicas
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	pods := newPodWatch(ctx, b.client)
	before, err := b.scrape(ctx)
	if err != nil {
		return err
	}
	cpu := cpuReading(b.hosts())
	// One Deployment every replicas/rate seconds: pods arrive at rate/s.
	pace := time.Duration(float64(b.o.replicas) / b.o.rate * float64(time.Second))
	start := time.Now()
	err = b.paced(deployments, pace, func(i int) error {
		_, err := b.client.AppsV1().Deployments(namespace).Create(ctx, deployment(i, b.o.replicas), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	created := time.Since(start)
	if err := waitFor(b.o.timeout, func() bool { return pods.running() >= total }, func() string {
		return fmt.Sprintf("%d of %d pods Running", pods.running(), total)
	}); err != nil {
		return err
	}
	fmt.Printf("\n%d pods in %d Deployments created in %s (%.1f pods/s), all Running %s after the first\n", total, deployments,
		created.Round(time.Millisecond), float64(total)/created.Seconds(), time.Since(start).Round(time.Millisecond))
	half := int32(b.o.replicas / 2)
	err = b.paced(deployments, pace/2, func(i int) error {
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, half)
		_, err := b.client.AppsV1().Deployments(namespace).Patch(ctx, fmt.Sprintf("load-%04d", i), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return err
	}
	if err := waitFor(b.o.timeout, func() bool { return pods.live() <= deployments*int(half) }, func() string {
		return fmt.Sprintf("%d pods left, %d wanted", pods.live(), deployments*int(half))
	}); err != nil {
		return err
	}
	err = b.paced(deployments, pace/2, func(i int) error {
		err := b.client.AppsV1().Deployments(namespace).Delete(ctx, fmt.Sprintf("load-%04d", i), metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := waitFor(b.o.timeout, func() bool { return pods.live() == 0 }, func() string {
		return fmt.Sprintf("%d pods left", pods.live())
	}); err != nil {
		return err
	}
	window := time.Since(start)
	after, err := b.scrape(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("create, scale to half, delete: %s\n\n", window.Round(time.Second))
	startup := pods.tracker.Result()
	startup.Print(os.Stdout)
	fmt.Println()
	api := b.apiLatency(before, after)
	cpu.print(fmt.Sprintf("load (%d pods)", total), b.hollow)
	fmt.Printf("\nSLOs at %d hollow nodes, %d control planes, %d pods at %.0f pods/s: pod startup %s, API call latency %s\n",
		b.o.nodes, len(b.cps), total, b.o.rate, met(startup.Met()), met(api.Met()))
	return nil
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// paced calls f for 0..n-1, one every pace, and returns the first error.
func (b *bench) paced(n int, pace time.Duration, f func(i int) error) error {
	tick := time.NewTicker(max(pace, time.Millisecond))
	defer tick.Stop()
	for i := range n {
		if err := f(i); err != nil {
			return err
		}
		<-tick.C
	}
	return nil
}

func deployment(i, replicas int) *appsv1.Deployment {
	labels := map[string]string{"app": fmt.Sprintf("load-%04d", i)}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%04d", i)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{hollowLabel: "true"},
					Tolerations:  []corev1.Toleration{{Key: hollowLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					Containers:   []corev1.Container{{Name: "pause", Image: images.Pause}},
				},
			},
		},
	}
}

func waitFor(timeout time.Duration, done func() bool, progress func() string) error {
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %s", timeout, progress())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// scrape reads every API server's metrics.
func (b *bench) scrape(ctx context.Context) (map[string]slo.Scrape, error) {
	out := map[string]slo.Scrape{}
	for i, cs := range b.servers {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s's metrics: %w", b.cps[i].Name, err)
		}
		s, err := slo.ParseScrape(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s's metrics: %w", b.cps[i].Name, err)
		}
		out[b.cps[i].Name] = s
	}
	return out, nil
}

// apiLatency prints the API call latency over the load, summed over the
// API servers (one that restarted in between is left out, and said so).
func (b *bench) apiLatency(before, after map[string]slo.Scrape) slo.Report {
	sum, errs := slo.DeltaServers(before, after)
	for _, err := range errs {
		fmt.Printf("left out of the API call latency: %v\n", err)
	}
	r := slo.Evaluate(sum)
	r.Print(os.Stdout)
	return r
}

// nodeWatch follows the hollow nodes' Ready condition.
type nodeWatch struct {
	mu      sync.Mutex
	ready   map[string]time.Time // first Ready
	now     map[string]bool
	flapped int
}

func newNodeWatch(ctx context.Context, cs kubernetes.Interface) *nodeWatch {
	w := &nodeWatch{ready: map[string]time.Time{}, now: map[string]bool{}}
	lw := cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "nodes", "", func(o *metav1.ListOptions) { o.LabelSelector = hollowLabel + "=true" })
	_, ctl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &corev1.Node{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { w.saw(o.(*corev1.Node)) },
			UpdateFunc: func(_, o any) { w.saw(o.(*corev1.Node)) },
		},
	})
	go ctl.RunWithContext(ctx)
	return w
}

func (w *nodeWatch) saw(n *corev1.Node) {
	now := time.Now()
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ready {
		if _, ok := w.ready[n.Name]; !ok {
			w.ready[n.Name] = now
		}
	} else if w.now[n.Name] {
		w.flapped++
	}
	w.now[n.Name] = ready
}

func (w *nodeWatch) readyCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ready)
}

func (w *nodeWatch) readyTimes() map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]time.Time, len(w.ready))
	for k, v := range w.ready {
		out[k] = v
	}
	return out
}

func (w *nodeWatch) flaps() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flapped
}

// podWatch feeds the load's pods to the startup tracker, stamping each
// event when it arrives (clusterloader2's method), and counts them.
type podWatch struct {
	mu      sync.Mutex
	tracker *slo.PodTracker
	pods    map[string]bool
	runs    map[string]bool
}

func newPodWatch(ctx context.Context, cs kubernetes.Interface) *podWatch {
	w := &podWatch{tracker: &slo.PodTracker{}, pods: map[string]bool{}, runs: map[string]bool{}}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", namespace, fields.Everything())
	_, ctl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { w.saw(o.(*corev1.Pod), false) },
			UpdateFunc: func(_, o any) { w.saw(o.(*corev1.Pod), false) },
			DeleteFunc: func(o any) {
				if p, ok := o.(*corev1.Pod); ok {
					w.saw(p, true)
				} else if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
					if p, ok := t.Obj.(*corev1.Pod); ok {
						w.saw(p, true)
					}
				}
			},
		},
	})
	go ctl.RunWithContext(ctx)
	return w
}

func (w *podWatch) saw(p *corev1.Pod, deleted bool) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	if deleted {
		delete(w.pods, key)
		return
	}
	w.pods[key] = true
	w.tracker.Observe(key, now, p.Status.Phase, p.Spec.NodeName)
	if p.Status.Phase == corev1.PodRunning {
		w.runs[key] = true
	}
}

// running is how many pods have been seen Running, ever.
func (w *podWatch) running() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.runs)
}

// live is how many pods exist now.
func (w *podWatch) live() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pods)
}

// raiseInotify raises the machine's limit of inotify instances (each
// kubelet takes two; 128 runs out near 50 nodes) and returns what puts it
// back.
func raiseInotify(n int) (func(), error) {
	b, err := os.ReadFile(inotifyFile)
	if err != nil {
		return nil, err
	}
	old := strings.TrimSpace(string(b))
	var cur int
	fmt.Sscan(old, &cur) //nolint:errcheck
	if cur >= n {
		return func() {}, nil
	}
	if err := os.WriteFile(inotifyFile, []byte(fmt.Sprint(n)), 0o644); err != nil { //nolint:gosec // a sysctl
		return nil, err
	}
	return func() { os.WriteFile(inotifyFile, []byte(old), 0o644) }, nil //nolint:errcheck,gosec
}

// cpu is a reading of the machine's and the hosts' processes' CPU.
type cpu struct {
	busy  time.Duration
	procs map[int]benchutil.ProcCPU
	hosts []*nethost.Host
	at    time.Time
}

func hostProcesses(hosts []*nethost.Host) []int {
	var pids []int
	for _, h := range hosts {
		pids = append(pids, benchutil.NetnsProcesses(h.Name, h.HolderPID())...)
	}
	return pids
}

func cpuReading(hosts []*nethost.Host) cpu {
	return cpu{busy: benchutil.BusyCPU(), procs: benchutil.CPUOf(hostProcesses(hosts)), hosts: hosts, at: time.Now()}
}

// print prints the CPU each process group used since the reading, in
// cores, the hollow nodes' together and per node.
func (c cpu) print(what string, hollow *nethost.Host) {
	wall := time.Since(c.at)
	busy := benchutil.BusyCPU() - c.busy
	after := benchutil.CPUOf(hostProcesses(c.hosts))
	hollowPIDs := map[int]bool{}
	for _, p := range benchutil.NetnsProcesses(hollow.Name, hollow.HolderPID()) {
		hollowPIDs[p] = true
	}
	type group struct {
		n   int
		use time.Duration
	}
	groups := map[string]*group{}
	var hollowUse time.Duration
	hollowN := 0
	for pid, a := range after {
		d := a.Self + a.Children - c.procs[pid].Self - c.procs[pid].Children
		if hollowPIDs[pid] {
			hollowUse += d
			hollowN++
			continue
		}
		g := groups[a.Name]
		if g == nil {
			g = &group{}
			groups[a.Name] = g
		}
		g.n++
		g.use += d
	}
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return groups[names[i]].use > groups[names[j]].use })
	cores := func(d time.Duration) float64 { return d.Seconds() / wall.Seconds() }
	fmt.Printf("\nCPU, %s (%s; cores = CPU time ÷ wall time; the machine has 2):\n", what, wall.Round(time.Second))
	fmt.Printf("  %-30s      %5.2f cores\n", "machine busy", cores(busy))
	fmt.Printf("  %-30s x%-4d %5.2f cores (%.1f millicores per node)\n", "hollow nodes", hollowN, cores(hollowUse), 1000*cores(hollowUse)/float64(max(hollowN, 1)))
	for _, n := range names {
		if g := groups[n]; cores(g.use) >= 0.005 {
			fmt.Printf("  %-30s x%-4d %5.2f cores\n", n, g.n, cores(g.use))
		}
	}
}

// memory samples the hosts' processes' PSS every 20 s and keeps each
// process group's peak (summed over its processes) and the hollow nodes'.
type memory struct {
	mu     sync.Mutex
	peak   map[string]int64 // host/process name → KiB
	hollow int64
	quit   chan struct{}
	done   chan struct{}
}

func watchMemory(hosts []*nethost.Host) *memory {
	m := &memory{peak: map[string]int64{}, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			m.sample(hosts)
			select {
			case <-m.quit:
				return
			case <-time.After(20 * time.Second):
			}
		}
	}()
	return m
}

func (m *memory) sample(hosts []*nethost.Host) {
	sums := map[string]int64{}
	var hollow int64
	for _, h := range hosts {
		procs, total := benchutil.PSS(benchutil.NetnsProcesses(h.Name, h.HolderPID()))
		if strings.HasSuffix(h.Name, "hollow") {
			hollow = total
			continue
		}
		for _, p := range procs {
			sums[strings.TrimPrefix(h.Name, "kbscale-")+" "+p.Name] += p.KiB
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range sums {
		m.peak[k] = max(m.peak[k], v)
	}
	m.hollow = max(m.hollow, hollow)
}

func (m *memory) stop() {
	select {
	case <-m.quit:
	default:
		close(m.quit)
		<-m.done
	}
}

func (m *memory) print(nodes int) {
	m.stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.peak))
	for n := range m.peak {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return m.peak[names[i]] > m.peak[names[j]] })
	fmt.Printf("\nPeak memory (PSS, sampled every 20 s):\n")
	fmt.Printf("  %-36s %8.1f MiB (%.1f MiB per node)\n", fmt.Sprintf("hollow nodes (%d)", nodes), benchutil.MiB(m.hollow), benchutil.MiB(m.hollow)/float64(max(nodes, 1)))
	for _, n := range names {
		if m.peak[n] >= 1024 {
			fmt.Printf("  %-36s %8.1f MiB\n", n, benchutil.MiB(m.peak[n]))
		}
	}
}
