package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubeboot/kubeboot/bench/internal/history"
)

const (
	logNS = "faults-log" // creates, one ConfigMap each
	regNS = "faults-reg" // registers
)

// recorder numbers requests and keeps their records; every time is since
// base (monotonic).
type recorder struct {
	base  time.Time
	mu    sync.Mutex
	ops   []history.Op
	procs int
}

func (r *recorder) since() time.Duration { return time.Since(r.base) }

func (r *recorder) newProc() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.procs++
	return r.procs
}

func (r *recorder) add(op history.Op) {
	r.mu.Lock()
	op.ID = len(r.ops)
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []history.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]history.Op(nil), r.ops...)
}

// target is one way to the API: through the worker's load balancer or
// straight to one control plane, dialled from inside a host.
type target struct {
	name string
	cfg  *rest.Config // the admin's, with Host and Dial set
}

// client is a REST client of its own (its own connections: a stuck
// HTTP/2 connection stalls one worker only). client-go shares transports
// between configs alike, but not between configs with a Dial: each gets
// a dial holder of its own, which keys its transport cache.
func (t target) client() (*rest.RESTClient, error) {
	c := rest.CopyConfig(t.cfg)
	c.Timeout = 10 * time.Second
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.QPS, c.Burst = 1000, 1000
	return rest.RESTClientFor(c)
}

// worker is one client loop: one request at a time, at most one per
// tick (a tick missed while a request runs is counted, not queued).
type worker struct {
	name   string
	target string
	rc     *rest.RESTClient
	rec    *recorder
	proc   int
	seq    int
	missed int
}

func (w *worker) record(op history.Op, err error, call time.Duration) history.Op {
	op.Worker, op.Proc, op.Target, op.Call, op.Return = w.name, w.proc, w.target, call, w.rec.since()
	op.Outcome, op.Code = classify(op.Kind, err)
	if err != nil {
		op.Err = err.Error()
	}
	w.rec.add(op)
	if op.Outcome == history.Unknown {
		w.proc = w.rec.newProc() // this client may still have a request in flight
	}
	return op
}

// classify says what an error tells of a request's effect. Client-go
// retries nothing (MaxRetries(0)): a retried write would be two.
func classify(kind history.Kind, err error) (history.Outcome, int) {
	if err == nil {
		return history.OK, 200
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := int(st.Status().Code)
		switch {
		case code == 409 && kind == history.CAS:
			return history.Conflict, code
		case code == 409: // impossible here (unique names, no retries): maybe applied, and an anomaly
			return history.Unknown, code
		case code >= 400 && code < 500 && code != 408:
			return history.Fail, code
		}
		return history.Unknown, code
	}
	// Refused or unreachable before anything was sent.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" || errors.Is(err, syscall.ECONNREFUSED) {
		return history.Fail, 0
	}
	return history.Unknown, 0
}

// ours tells the bench's ConfigMaps (creates, registers, the fence) from
// those the cluster makes in every namespace (kube-root-ca.crt).
func ours(name string) bool {
	return strings.HasPrefix(name, "c-") || strings.HasPrefix(name, "r-") || name == "fence"
}

func configMap(ns, name, value string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: map[string]string{"v": value}}
}

func rv(o metav1.Object) int64 {
	n, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
	return n
}

func (w *worker) do(ctx context.Context, req *rest.Request, into runtime.Object) error {
	return req.MaxRetries(0).Do(ctx).Into(into)
}

// create makes the next ConfigMap of the log namespace.
func (w *worker) create(ctx context.Context) {
	w.seq++
	name := fmt.Sprintf("c-%s-%d", w.name, w.seq)
	call := w.rec.since()
	var out corev1.ConfigMap
	err := w.do(ctx, w.rc.Post().Namespace(logNS).Resource("configmaps").Body(configMap(logNS, name, name, nil)), &out)
	op := history.Op{Kind: history.Create, Key: name, Value: name}
	if err == nil {
		op.RV = rv(&out)
	}
	w.record(op, err, call)
}

// get reads a register with a quorum read.
func (w *worker) get(ctx context.Context, key string) history.Op {
	call := w.rec.since()
	var out corev1.ConfigMap
	err := w.do(ctx, w.rc.Get().Namespace(regNS).Resource("configmaps").Name(key), &out)
	op := history.Op{Kind: history.Get, Key: key}
	if err == nil {
		op.Value, op.RV = out.Data["v"], rv(&out)
	}
	return w.record(op, err, call)
}

// put replaces a register, on the condition that its resourceVersion is
// still expect when expect is not 0.
func (w *worker) put(ctx context.Context, key string, expect int64) {
	w.seq++
	value := fmt.Sprintf("%s-%d", w.name, w.seq)
	cm := configMap(regNS, key, value, map[string]string{"gen": genLabel(key)})
	op := history.Op{Kind: history.Write, Key: key, Value: value}
	if expect != 0 {
		op.Kind, op.ExpectRV = history.CAS, expect
		cm.ResourceVersion = strconv.FormatInt(expect, 10)
	}
	call := w.rec.since()
	var out corev1.ConfigMap
	err := w.do(ctx, w.rc.Put().Namespace(regNS).Resource("configmaps").Name(key).Body(cm), &out)
	if err == nil {
		op.RV = rv(&out)
	}
	w.record(op, err, call)
}

// cas reads a register and replaces it on the resourceVersion read.
func (w *worker) cas(ctx context.Context, key string) {
	if g := w.get(ctx, key); g.Outcome == history.OK {
		w.put(ctx, key, g.RV)
	}
}

// list reads one generation of registers (no resourceVersion: served by
// the watch cache once it caught up with etcd's current revision); a
// register of keys it lacks is recorded as read empty, which no write
// made.
func (w *worker) list(ctx context.Context, gen int, keys []string) {
	call := w.rec.since()
	var out corev1.ConfigMapList
	err := w.do(ctx, w.rc.Get().Namespace(regNS).Resource("configmaps").Param("labelSelector", "gen="+strconv.Itoa(gen)), &out)
	op := history.Op{Kind: history.List}
	if err == nil {
		op.ListRV, _ = strconv.ParseInt(out.ResourceVersion, 10, 64)
		op.Items = map[string]history.Item{}
		for i := range out.Items {
			op.Items[out.Items[i].Name] = history.Item{Value: out.Items[i].Data["v"], RV: rv(&out.Items[i])}
		}
		for _, k := range keys {
			if _, ok := op.Items[k]; !ok {
				op.Items[k] = history.Item{}
			}
		}
	}
	w.record(op, err, call)
}

// loop runs f every period until ctx ends, one call at a time.
func (w *worker) loop(ctx context.Context, period time.Duration, f func(ctx context.Context)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		f(context.WithoutCancel(ctx)) // a request runs to its answer or its timeout
		// The ticker keeps one tick and drops the rest: count them all.
		if n := int(time.Since(start) / period); n > 0 {
			w.missed += n
			select {
			case <-t.C:
			default:
			}
		}
	}
}
