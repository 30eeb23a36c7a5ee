// Command faults puts a kubeboot HA cluster (3 control planes with
// stacked etcd, 1 worker; network-namespace hosts) under write and read
// load, injects faults in cycles — etcd's leader paused (SIGSTOP of its
// etcd and API server), a follower's and the leader's host cut off
// (every packet of its link dropped), the leader's node daemon killed
// with everything under it — heals each, and checks the history: no
// acknowledged write lost, none applied that was never asked, every
// register linearizable (porcupine), resourceVersions never going back,
// etcd's members equal at the end (HashKV), every API server listing
// every acknowledged write. It exits 1 on any violation. It prints, per
// fault, the longest write gap on the majority and through the worker's
// load balancer, and the times back to healthy.
//
//	go run ./bench/faults   (as root, after `make build`; alone on the machine)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/bench/internal/hacluster"
	"github.com/kubeboot/kubeboot/bench/internal/history"
	"github.com/kubeboot/kubeboot/test/nethost"
)

type options struct {
	cycles  int
	faults  string
	rate    float64
	regs    int
	rotate  time.Duration
	timeout time.Duration
	out     string
}

func main() {
	var o options
	flag.IntVar(&o.cycles, "cycles", 5, "cycles of every fault")
	flag.StringVar(&o.faults, "faults", "pause-leader,partition-follower,partition-leader,kill-leader", "the faults of a cycle, in order")
	flag.Float64Var(&o.rate, "rate", 1, "the load's scale (1: 24 creates/s, 8 CAS/s, 1 write/s, 16 reads/s)")
	flag.IntVar(&o.regs, "registers", 8, "registers written at once")
	flag.DurationVar(&o.rotate, "rotate", 30*time.Second, "how long a generation of registers is used before the next")
	flag.DurationVar(&o.timeout, "check-timeout", time.Minute, "the linearizability check's limit per register")
	flag.StringVar(&o.out, "out", os.Getenv("KUBEBOOT_BENCH_LOGS"), "where the history is written (none when empty)")
	check := flag.String("check", "", "check the history a run wrote into this directory again, and exit")
	flag.Parse()
	run := run
	if *check != "" {
		run = func(o options) error { return recheck(*check, o.timeout) }
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// bench is one run.
type bench struct {
	o       options
	c       *hacluster.Cluster
	cps     []*nethost.Host
	w1      *nethost.Host
	targets []target
	direct  map[string]kubernetes.Interface // per control plane
	members []*member
	ids     map[uint64]string
	rec     *recorder
	watches *watches
	undo    undo
	gens    int
	offered float64 // creates per second asked of the load
}

// injected is one fault as it happened.
type injected struct {
	Cycle                    int
	Fault, Victim            string
	LeaderBefore, LeaderNow  string
	TermBefore, TermNow      uint64
	Inject, Heal             time.Duration
	EtcdHealthy, APIsReady   time.Duration // after the heal
	GapMajority, GapBalancer time.Duration
}

func run(o options) error {
	var faults []fault
	for _, n := range strings.Split(o.faults, ",") {
		i := slices.IndexFunc(allFaults, func(f fault) bool { return f.name == n })
		if i < 0 {
			return fmt.Errorf("no fault %q", n)
		}
		faults = append(faults, allFaults[i])
	}
	bin, err := benchutil.Binary()
	if err != nil {
		return err
	}
	c, err := hacluster.New(bin, "", prefix)
	if err != nil {
		return err
	}
	defer c.Close()
	b := &bench{o: o, c: c}
	defer b.undo.run()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	busy0 := benchutil.BusyCPU()
	start := time.Now()
	if err := b.cluster(); err != nil {
		return err
	}
	if err := b.clients(); err != nil {
		return err
	}
	defer func() {
		for _, m := range b.members {
			m.c.Close()
		}
	}()
	if err := b.waitHealthy(ctx, 2*time.Minute); err != nil {
		return err
	}
	// Enough generations of registers for the longest run: each fault
	// takes 20–60 s; a run that outlasts them keeps writing the last.
	b.gens = int((time.Duration(o.cycles*len(faults))*90*time.Second+time.Minute)/o.rotate) + 1
	if err := b.setup(ctx); err != nil {
		return err
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	workers, err := b.load(loadCtx, &wg)
	if err != nil {
		stopLoad()
		return err
	}
	fmt.Printf("load on: %d workers; warm-up 15 s\n", len(workers))
	sleep(ctx, 15*time.Second)

	var done []injected
	var ferr error
cycles:
	for cycle := 1; cycle <= o.cycles; cycle++ {
		for _, f := range faults {
			if ctx.Err() != nil {
				ferr = ctx.Err()
				break cycles
			}
			in, err := b.inject(ctx, cycle, f, done)
			if err != nil {
				ferr = err
				break cycles
			}
			done = append(done, in)
			fmt.Printf("cycle %d %-18s victim %s (leader %s→%s, term +%d): etcd healthy %s, API servers ready %s after the heal\n",
				cycle, f.name, in.Victim, in.LeaderBefore, in.LeaderNow, in.TermNow-in.TermBefore, in.EtcdHealthy.Round(100*time.Millisecond), in.APIsReady.Round(100*time.Millisecond))
		}
	}
	stopLoad()
	wg.Wait()
	b.undo.run()
	if ferr != nil {
		b.write(b.rec.snapshot(), b.watches.snapshot(), done, nil) // what there is, to look at
		return ferr
	}
	return b.finish(ctx, workers, done, busy0, start)
}

// cluster makes cp1 (no metrics-server: not what is measured), joins cp2
// and cp3 as control planes and w1 as a worker.
func (b *bench) cluster() (err error) {
	t := time.Now()
	if b.cps, err = b.c.ControlPlanes(3, "10.226.0", "--skip-phases", "addon/metrics-server"); err != nil {
		return err
	}
	if b.w1, err = b.c.Host("w1", "10.226.0.5"); err != nil {
		return err
	}
	if _, err := b.c.Join(b.w1, "w1"); err != nil {
		return err
	}
	// The worker's balancer must know all three servers, not the seed only.
	lb := filepath.Join(b.w1.Root, "var/lib/kubeboot/apiserver-lb.json")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		raw, _ := os.ReadFile(lb)
		if n := strings.Count(string(raw), ":6443"); n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the worker's load balancer does not list three API servers: %s", raw)
		}
		time.Sleep(time.Second)
	}
	fmt.Printf("cluster up: 3 control planes, 1 worker, in %s\n", time.Since(t).Round(time.Second))
	return nil
}

// clients makes the load's targets — the worker's load balancer, and
// each control plane straight, dialled from inside its own host, so that
// each reaches its server through the server's own cut — and the etcd
// clients.
func (b *bench) clients() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(b.cps[0].Root, "etc/kubernetes/admin.conf"))
	if err != nil {
		return err
	}
	lb := rest.CopyConfig(cfg)
	lb.Host, lb.Dial = "https://127.0.0.1:6444", b.w1.DialContext
	b.targets = []target{{name: "lb", cfg: lb}}
	b.direct = map[string]kubernetes.Interface{}
	for _, h := range b.cps {
		d := rest.CopyConfig(cfg)
		d.Host, d.Dial = "https://"+h.IP+":6443", h.DialContext
		d.QPS, d.Burst = 200, 400
		b.targets = append(b.targets, target{name: nodeName(h), cfg: d})
		if b.direct[nodeName(h)], err = kubernetes.NewForConfig(d); err != nil {
			return err
		}
		m, err := newMember(h)
		if err != nil {
			return err
		}
		b.members = append(b.members, m)
	}
	b.ids, err = memberIDs(context.Background(), b.members)
	return err
}

// prefix starts the hosts' network-namespace names.
const prefix = "kbbench-f"

// nodeName is the host's node name (its etcd member's name too).
func nodeName(h *nethost.Host) string { return strings.TrimPrefix(h.Name, prefix) }

func (b *bench) host(name string) *nethost.Host {
	for _, h := range b.cps {
		if nodeName(h) == name {
			return h
		}
	}
	return nil
}

// waitHealthy waits until every etcd member answers and agrees on the
// leader and every API server is ready.
func (b *bench) waitHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		st := etcdNow(ctx, b.members, b.ids)
		ready := true
		for _, h := range b.cps {
			ready = ready && hacluster.APIReady(h)
		}
		if st.healthy && ready {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not healthy after %s: etcd: %s; API servers ready: %t", timeout, st.why, ready)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func regKey(gen, k int) string { return fmt.Sprintf("r-%d-%d", gen, k) }

func genLabel(key string) string { return strings.Split(key, "-")[1] }

// setup makes the namespaces and every register (each create recorded as
// the register's first write), and starts the history's watches.
func (b *bench) setup(ctx context.Context) error {
	cs := b.direct["cp1"]
	for _, ns := range []string{logNS, regNS} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	b.rec = &recorder{base: time.Now()}
	b.watches = &watches{rec: b.rec, last: map[string]int64{}}
	l, err := cs.CoreV1().ConfigMaps(regNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	from, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
	for _, h := range b.cps {
		for _, ns := range []string{logNS, regNS} {
			b.watches.start(ctx, nodeName(h), b.direct[nodeName(h)], ns, from)
		}
	}
	t := time.Now()
	for g := range b.gens {
		for k := range b.o.regs {
			key := regKey(g, k)
			call := b.rec.since()
			cm, err := cs.CoreV1().ConfigMaps(regNS).Create(ctx, configMap(regNS, key, "init-"+key, map[string]string{"gen": strconv.Itoa(g)}), metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("register %s: %w", key, err)
			}
			b.rec.add(history.Op{Worker: "setup", Proc: 0, Target: "cp1", Kind: history.Write, Key: key, Value: "init-" + key, Call: call, Return: b.rec.since(), Outcome: history.OK, Code: 201, RV: rv(cm)})
		}
	}
	fmt.Printf("%d registers made in %s\n", b.gens*b.o.regs, time.Since(t).Round(time.Millisecond))
	return nil
}

// gen is the generation of registers in use now.
func (b *bench) gen() int { return min(int(b.rec.since()/b.o.rotate), b.gens-1) }

// load starts the workers: on each target, creators, a CAS loop, readers
// of one register and of a generation; through the balancer, also
// unconditional writes.
func (b *bench) load(ctx context.Context, wg *sync.WaitGroup) ([]*worker, error) {
	var ws []*worker
	every := func(perSecond float64) time.Duration {
		return time.Duration(float64(time.Second) / (perSecond * b.o.rate))
	}
	start := func(t target, kind string, i int, period time.Duration, f func(w *worker, ctx context.Context)) error {
		rc, err := t.client()
		if err != nil {
			return err
		}
		w := &worker{name: fmt.Sprintf("%s.%s%d", t.name, kind, i), target: t.name, rc: rc, rec: b.rec, proc: b.rec.newProc()}
		ws = append(ws, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, period, func(ctx context.Context) { f(w, ctx) })
		}()
		return nil
	}
	key := func(w *worker) string { return regKey(b.gen(), w.seq%b.o.regs) }
	for _, t := range b.targets {
		creators, rate := 1, 3.0
		if t.name == "lb" {
			creators, rate = 3, 5
		}
		b.offered += float64(creators) * rate * b.o.rate
		for i := range creators {
			if err := start(t, "create", i, every(rate), func(w *worker, ctx context.Context) { w.create(ctx) }); err != nil {
				return nil, err
			}
		}
		if err := start(t, "cas", 0, every(2), func(w *worker, ctx context.Context) { w.seq++; w.cas(ctx, key(w)) }); err != nil {
			return nil, err
		}
		if err := start(t, "get", 0, every(2), func(w *worker, ctx context.Context) { w.seq++; w.get(ctx, key(w)) }); err != nil {
			return nil, err
		}
		if err := start(t, "list", 0, every(2), func(w *worker, ctx context.Context) {
			g := b.gen()
			keys := make([]string, b.o.regs)
			for k := range keys {
				keys[k] = regKey(g, k)
			}
			w.list(ctx, g, keys)
		}); err != nil {
			return nil, err
		}
		if t.name == "lb" {
			if err := start(t, "write", 0, every(1), func(w *worker, ctx context.Context) { w.put(ctx, key(w), 0) }); err != nil {
				return nil, err
			}
		}
	}
	return ws, nil
}

// inject waits until the cluster is healthy, watches 5 s of it, injects
// f, holds it, heals it and times the way back to healthy.
func (b *bench) inject(ctx context.Context, cycle int, f fault, before []injected) (injected, error) {
	if err := b.waitHealthy(ctx, 2*time.Minute); err != nil {
		return injected{}, fmt.Errorf("before %s: %w", f.name, err)
	}
	sleep(ctx, 5*time.Second)
	st := etcdNow(ctx, b.members, b.ids)
	if !st.healthy {
		return injected{}, fmt.Errorf("before %s: etcd: %s", f.name, st.why)
	}
	victim := st.leader
	if !f.leader { // a follower, not the one cut last time
		var last string
		for _, in := range slices.Backward(before) {
			if in.Fault == f.name {
				last = in.Victim
				break
			}
		}
		victim = ""
		for _, h := range b.cps {
			if nodeName(h) != st.leader && (victim == "" || victim == last) {
				victim = nodeName(h)
			}
		}
	}
	in := injected{Cycle: cycle, Fault: f.name, Victim: victim, LeaderBefore: st.leader, TermBefore: st.term, Inject: b.rec.since()}
	undone := b.undo.len()
	heal, err := f.inject(b.host(victim), &b.undo)
	if err != nil {
		if heal != nil {
			heal() //nolint:errcheck
		}
		return in, fmt.Errorf("%s on %s: %w", f.name, victim, err)
	}
	sleep(ctx, f.hold)
	in.Heal = b.rec.since()
	healed := time.Now()
	if err := heal(); err != nil {
		return in, fmt.Errorf("healing %s on %s: %w", f.name, victim, err)
	}
	b.undo.truncate(undone)
	deadline := healed.Add(2 * time.Minute)
	for in.EtcdHealthy == 0 || in.APIsReady == 0 {
		if ctx.Err() != nil {
			return in, ctx.Err()
		}
		if time.Now().After(deadline) {
			return in, fmt.Errorf("after %s on %s: not healthy within 2 min: %s", f.name, victim, etcdNow(ctx, b.members, b.ids).why)
		}
		if in.EtcdHealthy == 0 && etcdNow(ctx, b.members, b.ids).healthy {
			in.EtcdHealthy = time.Since(healed)
		}
		if in.APIsReady == 0 && !slices.ContainsFunc(b.cps, func(h *nethost.Host) bool { return !hacluster.APIReady(h) }) {
			in.APIsReady = time.Since(healed)
		}
		time.Sleep(200 * time.Millisecond)
	}
	sleep(ctx, 5*time.Second)
	st = etcdNow(ctx, b.members, b.ids)
	in.LeaderNow, in.TermNow = st.leader, st.term
	return in, nil
}

// finish checks the history, prints the figures and writes the files.
func (b *bench) finish(ctx context.Context, workers []*worker, faults []injected, busy0 time.Duration, start time.Time) error {
	if err := b.waitHealthy(ctx, 2*time.Minute); err != nil {
		return fmt.Errorf("after the faults: %w", err)
	}
	end := b.rec.since()
	written := false
	defer func() {
		if !written { // what there is, to look at
			b.write(b.rec.snapshot(), b.watches.snapshot(), faults, nil)
		}
	}()
	// A fence written last in each namespace: once every watch has seen
	// it, it has seen every write before it.
	for _, ns := range []string{logNS, regNS} {
		fence, err := b.direct["cp1"].CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "fence", "fence", nil), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("the fence: %w", err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for _, h := range b.cps {
			for b.watches.newest(nodeName(h), ns == logNS) < rv(fence) {
				if time.Now().After(deadline) {
					return fmt.Errorf("%s's watch of %s did not reach the fence at %d within 30 s", nodeName(h), ns, rv(fence))
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	// Every API server lists everything, straight: after the fence, so
	// that a write committed late (an unknown one) is in the finals too.
	var finals []history.Final
	for _, h := range b.cps {
		f, err := finalList(ctx, nodeName(h), b.direct[nodeName(h)])
		if err != nil {
			return err
		}
		finals = append(finals, f)
	}
	// Members apply the same compaction at slightly different moments:
	// hashes taken meanwhile differ for that alone; ask again then.
	rev, hs, herr := hashes(ctx, b.members)
	for try := 0; try < 3 && herr == nil && !equal(hs); try++ {
		time.Sleep(2 * time.Second)
		rev, hs, herr = hashes(ctx, b.members)
	}
	ops, events := b.rec.snapshot(), slices.DeleteFunc(b.watches.snapshot(), func(e history.Event) bool { return e.Key == "fence" })
	for i := range faults {
		faults[i].GapMajority, faults[i].GapBalancer = writeGaps(ops, faults[i])
	}
	b.write(ops, events, faults, finals)
	written = true

	fmt.Printf("\nfaults under load: 3 control planes (stacked etcd) + 1 worker, %d faults in %s, machine busy %.2f cores\n",
		len(faults), time.Since(start).Round(time.Second), (benchutil.BusyCPU()-busy0).Seconds()/time.Since(start).Seconds())
	fmt.Printf("  %-5s %-18s %-7s %-11s %-5s %-8s %-8s %-8s %s\n", "cycle", "fault", "victim", "leader", "term", "gap.maj", "gap.lb", "etcd.ok", "readyz")
	for _, f := range faults {
		fmt.Printf("  %-5d %-18s %-7s %-11s +%-4d %-8s %-8s %-8s %s\n", f.Cycle, f.Fault, f.Victim, f.LeaderBefore+"→"+f.LeaderNow, f.TermNow-f.TermBefore,
			f.GapMajority.Round(10*time.Millisecond), f.GapBalancer.Round(10*time.Millisecond), f.EtcdHealthy.Round(100*time.Millisecond), f.APIsReady.Round(100*time.Millisecond))
	}
	byKind(ops, events, faults)
	b.summary(ops, workers, faults, end)
	relists, disorder := b.watches.restarts()
	fmt.Printf("  watches: %d events, %d restarted from a list, %d out of order\n", len(events), relists, len(disorder))
	ok := len(disorder) == 0
	for i, d := range disorder[:min(len(disorder), 10)] {
		fmt.Printf("    out of order %d: %s\n", i+1, d)
	}
	if herr != nil {
		fmt.Printf("  etcd HashKV: %v\n", herr)
		ok = false
	} else {
		eq := equal(hs)
		ok = ok && eq
		fmt.Printf("  etcd HashKV at revision %d: %v (%s)\n", rev, hs, map[bool]string{true: "equal", false: "DIFFERENT"}[eq])
	}
	res := history.Check(ops, events, finals, b.o.timeout)
	res.Print(os.Stdout)
	if b.o.out != "" {
		if files, err := res.VisualizeFailures(b.o.out); err == nil && len(files) > 0 {
			fmt.Printf("  porcupine's views of the failures: %s\n", strings.Join(files, " "))
		}
	}
	if !ok || !res.OK() {
		return fmt.Errorf("the history is not what a linearizable store that loses nothing gives (above)")
	}
	fmt.Println("  history: no acknowledged write lost, none unasked, registers linearizable, resourceVersions in order: OK")
	return nil
}

// finalList reads both namespaces from one API server (consistent reads,
// paged).
func finalList(ctx context.Context, name string, cs kubernetes.Interface) (history.Final, error) {
	f := history.Final{Server: name, Creates: map[string]bool{}, Registers: map[string]history.Item{}}
	for _, ns := range []string{logNS, regNS} {
		cont := ""
		for {
			l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			if err != nil {
				return f, fmt.Errorf("%s: the final list of %s: %w", name, ns, err)
			}
			for i := range l.Items {
				cm := &l.Items[i]
				if !ours(cm.Name) || cm.Name == "fence" {
					continue
				}
				if ns == logNS {
					f.Creates[cm.Name] = true
				} else {
					f.Registers[cm.Name] = history.Item{Value: cm.Data["v"], RV: rv(cm)}
				}
			}
			if cont = l.Continue; cont == "" {
				break
			}
		}
	}
	return f, nil
}

// writeGaps is the longest time without an acknowledged write, from the
// injection to 5 s after the heal: of the direct workers of the control
// planes that were not the victim, and of the balancer's workers.
func writeGaps(ops []history.Op, f injected) (majority, balancer time.Duration) {
	gap := func(keep func(op history.Op) bool) time.Duration {
		var acks []time.Duration
		for _, op := range ops {
			if op.Outcome == history.OK && op.Kind != history.Get && op.Kind != history.List && keep(op) && op.Return > f.Inject && op.Return < f.Heal+5*time.Second {
				acks = append(acks, op.Return)
			}
		}
		slices.Sort(acks)
		longest, last := time.Duration(0), f.Inject
		for _, a := range append(acks, f.Heal+5*time.Second) {
			longest, last = max(longest, a-last), a
		}
		return longest
	}
	majority = gap(func(op history.Op) bool { return op.Target != "lb" && op.Target != f.Victim })
	balancer = gap(func(op history.Op) bool { return op.Target == "lb" })
	return majority, balancer
}

// summary prints the load: offered and answered, by outcome.
func (b *bench) summary(ops []history.Op, workers []*worker, faults []injected, end time.Duration) {
	count := map[history.Kind]map[history.Outcome]int{}
	var lat []time.Duration
	healthyCreates, faulty := 0, time.Duration(0)
	for _, f := range faults {
		faulty += f.Heal + 5*time.Second + f.APIsReady - f.Inject
	}
	for _, op := range ops {
		if op.Kind == history.Create && op.Outcome == history.OK && !during(op, faults) {
			healthyCreates++
		}
		if count[op.Kind] == nil {
			count[op.Kind] = map[history.Outcome]int{}
		}
		count[op.Kind][op.Outcome]++
		if op.Outcome == history.OK && op.Worker != "setup" && !during(op, faults) {
			lat = append(lat, op.Return-op.Call)
		}
	}
	missed := 0
	for _, w := range workers {
		missed += w.missed
	}
	creates := count[history.Create]
	fmt.Printf("  load over %s: %d requests (%d ticks missed while a request ran); creates acknowledged %.1f/s over the run, %.1f/s outside the faults (%.0f/s offered)\n",
		end.Round(time.Second), len(ops), missed, float64(creates[history.OK])/end.Seconds(), float64(healthyCreates)/(end-faulty).Seconds(), b.offered)
	for _, k := range []history.Kind{history.Create, history.Write, history.CAS, history.Get, history.List} {
		c := count[k]
		fmt.Printf("    %-6s ok %d, conflict %d, failed %d, unknown %d\n", k, c[history.OK], c[history.Conflict], c[history.Fail], c[history.Unknown])
	}
	if len(lat) > 0 {
		fmt.Printf("  latency of answered requests outside faults: p50 %s, p99 %s\n",
			benchutil.Percentile(lat, 50).Round(time.Millisecond), benchutil.Percentile(lat, 99).Round(time.Millisecond))
	}
}

// during tells whether op overlaps a fault or the 5 s after its heal.
func during(op history.Op, faults []injected) bool {
	for _, f := range faults {
		if op.Return > f.Inject && op.Call < f.Heal+5*time.Second+f.APIsReady {
			return true
		}
	}
	return false
}

// write keeps the history for a later look (JSON lines).
func (b *bench) write(ops []history.Op, events []history.Event, faults []injected, finals []history.Final) {
	if b.o.out == "" {
		return
	}
	os.MkdirAll(b.o.out, 0o755) //nolint:errcheck
	put := func(name string, n int, item func(i int) any) {
		f, err := os.Create(filepath.Join(b.o.out, name))
		if err != nil {
			return
		}
		defer f.Close()
		enc := json.NewEncoder(f)
		for i := range n {
			enc.Encode(item(i)) //nolint:errcheck
		}
	}
	put("history.jsonl", len(ops), func(i int) any { return ops[i] })
	put("watch.jsonl", len(events), func(i int) any { return events[i] })
	put("faults.jsonl", len(faults), func(i int) any { return faults[i] })
	put("finals.jsonl", len(finals), func(i int) any { return finals[i] })
	fmt.Printf("  history written to %s\n", b.o.out)
}

func equal(hs map[string]uint32) bool {
	var first *uint32
	for _, h := range hs {
		if first == nil {
			first = &h
		} else if h != *first {
			return false
		}
	}
	return true
}

// byKind prints, per kind of fault, its cycles, the writes (creates,
// writes, CAS) acknowledged and unknown from its injection to 5 s after
// its heal, the unknown ones a watch showed applied, the longest gaps and
// the recovery times against the goals.
func byKind(ops []history.Op, events []history.Event, faults []injected) {
	seen := map[string]bool{} // creates by name, register writes by value
	for _, e := range events {
		if e.Log {
			seen[e.Key] = true
		} else {
			seen[e.Value] = true
		}
	}
	fmt.Printf("  %-18s %-6s %-7s %-16s %-14s %-14s %s\n", "fault", "cycles", "acked", "unknown→applied", "gap.maj max", "etcd.ok max", "readyz max")
	var kinds []string
	for _, f := range faults {
		if !slices.Contains(kinds, f.Fault) {
			kinds = append(kinds, f.Fault)
		}
	}
	for _, k := range kinds {
		var n, acked, unknown, applied int
		var gap, etcd, ready time.Duration
		for _, f := range faults {
			if f.Fault != k {
				continue
			}
			n++
			gap, etcd, ready = max(gap, f.GapMajority), max(etcd, f.EtcdHealthy), max(ready, f.APIsReady)
			for _, op := range ops {
				if op.Kind == history.Get || op.Kind == history.List || op.Call < f.Inject || op.Call > f.Heal+5*time.Second {
					continue
				}
				switch op.Outcome {
				case history.OK:
					acked++
				case history.Unknown:
					unknown++
					if op.Kind == history.Create && seen[op.Key] || op.Kind != history.Create && seen[op.Value] {
						applied++
					}
				}
			}
		}
		met := func(d, goal time.Duration) string {
			return fmt.Sprintf("%s (%s)", d.Round(10*time.Millisecond), map[bool]string{true: "met", false: "NOT met"}[d <= goal])
		}
		fmt.Printf("  %-18s %-6d %-7d %-16s %-14s %-14s %s\n", k, n, acked, fmt.Sprintf("%d→%d", unknown, applied),
			met(gap, 2*time.Second), met(etcd, 30*time.Second), met(ready, time.Minute))
	}
}

// recheck judges a history written by an earlier run (-out).
func recheck(dir string, timeout time.Duration) error {
	ops, err := readLines[history.Op](filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return err
	}
	events, err := readLines[history.Event](filepath.Join(dir, "watch.jsonl"))
	if err != nil {
		return err
	}
	faults, err := readLines[injected](filepath.Join(dir, "faults.jsonl"))
	if err != nil {
		return err
	}
	finals, err := readLines[history.Final](filepath.Join(dir, "finals.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		byKind(ops, events, faults)
		return fmt.Errorf("%s has no final lists (the run stopped before them): the history cannot be judged", dir)
	}
	if err != nil {
		return err
	}
	byKind(ops, events, faults)
	res := history.Check(ops, events, finals, timeout)
	res.Print(os.Stdout)
	if !res.OK() {
		return fmt.Errorf("the history is not what a linearizable store that loses nothing gives (above)")
	}
	return nil
}

func readLines[T any](file string) ([]T, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	dec := json.NewDecoder(f)
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
