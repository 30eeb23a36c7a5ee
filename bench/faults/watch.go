package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeboot/kubeboot/bench/internal/history"
)

// watches record every event of both namespaces, as each API server
// delivers them: what resolves the requests whose outcome is unknown.
type watches struct {
	rec    *recorder
	mu     sync.Mutex
	events []history.Event
	last   map[string]int64 // the newest RV each watch saw
	gaps   int              // watches restarted from a list (410)
	// disorder lists events (or relists) whose RV was not above every RV
	// the same watch had delivered before: a watch must be ordered and
	// unique across its resumes (etcd's robustness tests found one that
	// went back in time after a resume, etcd #15271).
	disorder []string
	wg       sync.WaitGroup
}

func (w *watches) start(ctx context.Context, source string, cs kubernetes.Interface, ns string, from int64) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.run(ctx, source, cs, ns, from)
	}()
}

func (w *watches) add(e history.Event) {
	w.mu.Lock()
	w.events = append(w.events, e)
	k := e.Source + "/" + strconv.FormatBool(e.Log)
	if e.Type != "LISTED" && e.RV <= w.last[k] {
		w.disorder = append(w.disorder, fmt.Sprintf("%s: %s %s at rv %d after rv %d", k, e.Type, e.Key, e.RV, w.last[k]))
	}
	w.last[k] = max(w.last[k], e.RV)
	w.mu.Unlock()
}

// seen raises what a watch is known to have delivered up to (a bookmark,
// a relist's RV).
func (w *watches) seen(source string, log bool, rv int64, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := source + "/" + strconv.FormatBool(log)
	if rv < w.last[k] {
		w.disorder = append(w.disorder, fmt.Sprintf("%s: %s at rv %d after rv %d", k, what, rv, w.last[k]))
	}
	w.last[k] = max(w.last[k], rv)
}

func (w *watches) restarts() (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gaps, slices.Clone(w.disorder)
}

func (w *watches) newest(source string, log bool) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[source+"/"+strconv.FormatBool(log)]
}

func (w *watches) snapshot() []history.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]history.Event(nil), w.events...)
}

// run watches from RV from, resuming from the last event or bookmark
// after a break; a watch refused as too old (410) goes on from a list,
// whose items are recorded as events of their current versions.
func (w *watches) run(ctx context.Context, source string, cs kubernetes.Interface, ns string, from int64) {
	log := ns == logNS
	for ctx.Err() == nil {
		opts := metav1.ListOptions{ResourceVersion: strconv.FormatInt(from, 10), AllowWatchBookmarks: true}
		c, cancel := context.WithTimeout(ctx, 5*time.Minute)
		wi, err := cs.CoreV1().ConfigMaps(ns).Watch(c, opts)
		if err != nil {
			cancel()
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				from = w.relist(ctx, source, cs, ns)
				continue
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Error {
				if st := apierrors.FromObject(ev.Object); apierrors.IsGone(st) || apierrors.IsResourceExpired(st) {
					from = -1
				}
				break
			}
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			r := rv(cm)
			if ev.Type != watch.Bookmark && ours(cm.Name) {
				w.add(history.Event{Source: source, Type: string(ev.Type), Log: log, Key: cm.Name, Value: cm.Data["v"], RV: r, Recv: w.rec.since()})
			} else if ev.Type == watch.Bookmark {
				w.seen(source, log, r, "a bookmark")
			}
			from = max(from, r)
		}
		wi.Stop()
		cancel()
		if from == -1 {
			from = w.relist(ctx, source, cs, ns)
		}
	}
}

func (w *watches) relist(ctx context.Context, source string, cs kubernetes.Interface, ns string) int64 {
	w.mu.Lock()
	w.gaps++
	w.mu.Unlock()
	for ctx.Err() == nil {
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for i := range l.Items {
			cm := &l.Items[i]
			if !ours(cm.Name) {
				continue
			}
			w.add(history.Event{Source: source, Type: "LISTED", Log: ns == logNS, Key: cm.Name, Value: cm.Data["v"], RV: rv(cm), Recv: w.rec.since()})
		}
		n, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
		w.seen(source, ns == logNS, n, "a relist")
		return n
	}
	return 0
}
