package history

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// maxExamples is how many failures of each kind a Result keeps.
const maxExamples = 10

// Findings counts the failures of one kind and keeps the first few.
type Findings struct {
	N        int
	Examples []string
}

func (f *Findings) add(format string, a ...any) {
	f.N++
	if len(f.Examples) < maxExamples {
		f.Examples = append(f.Examples, fmt.Sprintf(format, a...))
	}
}

// Tally counts one kind of write by outcome, and the unknown ones by what
// became of them.
type Tally struct {
	Attempted, Acked, Conflict, Failed, Unknown int
	// Resolved: unknown, shown by a watch; counted as acknowledged.
	Resolved int
	// Missed: unknown, shown by no watch but by a read or a final; each
	// is also in WatchMissed.
	Missed int
	// Dropped: unknown, shown nowhere; it never took effect.
	Dropped int
}

// Result is the verdict on a history: the figures, and each kind of
// failure with a few examples.
type Result struct {
	Ops, Events, Finals int
	Creates, Writes     Tally
	// Registers and RegisterOps are porcupine's input; Slowest its
	// longest check of one register.
	Registers, RegisterOps int
	Slowest                time.Duration

	Lost        Findings // acknowledged creates absent from a final
	Unexpected  Findings // creates present that were refused or never sent
	WatchMissed Findings // unknown writes that took effect unseen by every watch
	Illegal     Findings // registers not linearizable
	RVBack      Findings // a worker saw a resourceVersion go back
	RVClock     Findings // resourceVersions out of real-time order
	Final       Findings // final register values other than the last write's
	Anomalies   Findings // anything else impossible
	Undecided   Findings // registers porcupine did not decide in time

	illegal []illegalRegister
}

type named struct {
	name string
	f    *Findings
}

// findings lists every kind of failure, Undecided last.
func (r *Result) findings() []named {
	return []named{
		{"lost", &r.Lost}, {"unexpected", &r.Unexpected}, {"watch missed", &r.WatchMissed},
		{"not linearizable", &r.Illegal}, {"rv back", &r.RVBack}, {"rv clock", &r.RVClock},
		{"final mismatch", &r.Final}, {"anomalies", &r.Anomalies}, {"undecided", &r.Undecided},
	}
}

// OK tells that nothing failed and porcupine decided every register.
func (r Result) OK() bool {
	for _, x := range r.findings() {
		if x.f.N > 0 {
			return false
		}
	}
	return true
}

// Print writes the figures, then the examples of each failure.
func (r Result) Print(w io.Writer) {
	verdict := "ok"
	for _, x := range r.findings() {
		switch {
		case x.f.N == 0:
		case x.f == &r.Undecided && verdict == "ok":
			verdict = "undecided"
		default:
			verdict = "FAIL"
		}
	}
	c, wr := r.Creates, r.Writes
	fmt.Fprintf(w, "  history: %d ops, %d watch events, %d final lists: %s\n", r.Ops, r.Events, r.Finals, verdict)
	fmt.Fprintf(w, "  creates: %d attempted, %d acked, %d failed, %d unknown (%d recovered, %d dropped); %d lost, %d unexpected\n",
		c.Attempted, c.Acked, c.Failed, c.Unknown, c.Resolved+c.Missed, c.Dropped, r.Lost.N, r.Unexpected.N)
	fmt.Fprintf(w, "  writes: %d attempted, %d acked, %d conflicts, %d failed, %d unknown (%d resolved, %d dropped)\n",
		wr.Attempted, wr.Acked, wr.Conflict, wr.Failed, wr.Unknown, wr.Resolved+wr.Missed, wr.Dropped)
	fmt.Fprintf(w, "  registers: %d keys, %d ops, slowest %v; %d not linearizable, %d undecided\n",
		r.Registers, r.RegisterOps, r.Slowest.Round(time.Millisecond), r.Illegal.N, r.Undecided.N)
	fmt.Fprintf(w, "  rv back %d, rv clock %d, final mismatches %d, watch missed %d, anomalies %d\n",
		r.RVBack.N, r.RVClock.N, r.Final.N, r.WatchMissed.N, r.Anomalies.N)
	for _, x := range r.findings() {
		if x.f.N > 0 {
			fmt.Fprintf(w, "    %s (%d): %s\n", x.name, x.f.N, strings.Join(x.f.Examples, "; "))
		}
	}
}

// Check judges a history. ops: every request, in any order. events:
// every watch event from all sources (duplicates across sources
// expected). finals: each API server's final listing (at least one).
// timeout: porcupine's limit per register.
//
// Unknown writes are settled first: shown by a watch, one counts as
// acknowledged at the event's RV; shown nowhere, it is dropped; shown
// only by a read or a final, it is a WatchMissed failure, and it still
// enters every check that needs no time for it (porcupine's, with its RV
// as read and no return). This needs no wildcard RV: values are unique,
// so whatever showed a value showed its RV too. A write dropped yet
// applied and overwritten before any read, final or watch event saw it
// goes unnoticed, and a CAS refused because of it looks illegal: the
// check trusts the union of the watches to hold every change.
func Check(ops []Op, events []Event, finals []Final, timeout time.Duration) Result {
	r := Result{Ops: len(ops), Events: len(events), Finals: len(finals)}
	if len(finals) == 0 {
		r.Anomalies.add("no final list")
	}
	sights := collect(&r, ops, events, finals)
	checkAnswers(&r, ops, sights)
	h := resolve(&r, ops, sights)
	checkLost(&r, h, finals)
	checkRegisters(&r, h, timeout)
	checkWorkers(&r, h)
	checkClock(&r, h)
	checkFinals(&r, h, finals)
	return r
}

// acked tells an op with an RV known to have taken effect at a known
// time: an OK answer or a resolved unknown.
func (o rop) acked() bool { return o.st == resolved || o.st == answered && o.Outcome == OK }

// checkAnswers finds answers impossible in this history, whatever their
// outcome counts as: registers are made before the load and never
// deleted, so none is ever not found (404); names and values are
// unique, so no create or plain write meets an existing object (409).
// And every acknowledged create must be in some watch: the watches are
// what unknown writes are resolved by, so they are checked too (a
// register's value may be overwritten during a watch's relist, a create
// stays).
func checkAnswers(r *Result, ops []Op, s sightings) {
	for _, o := range ops {
		switch {
		case o.Code == 404 && o.Kind != Create:
			r.Anomalies.add("op %d (%s %s %s): not found", o.ID, o.Worker, o.Kind, o.Key)
		case o.Code == 409 && (o.Kind == Create || o.Kind == Write):
			r.Anomalies.add("op %d (%s %s %s): already exists or modified (409)", o.ID, o.Worker, o.Kind, o.Key)
		case o.Kind == Create && o.Outcome == OK && (s.creates[o.Key] == nil || !s.creates[o.Key].watched):
			r.WatchMissed.add("%s: acknowledged, in no watch", o.Key)
		}
	}
}

// checkLost finds the creates taken as acknowledged (answered OK, or
// shown by a watch) that a server's final list lacks (Jepsen's set).
func checkLost(r *Result, h []rop, finals []Final) {
	for _, f := range finals {
		for _, o := range h {
			if o.Kind == Create && o.acked() && !f.Creates[o.Key] {
				r.Lost.add("%s on %s", o.Key, f.Server)
			}
		}
	}
}

// checkWorkers checks that no worker sees a resourceVersion go back: a
// read of a register is no older than what the worker saw of it, a list
// no older than anything it saw, a write newer than anything it saw.
// Only answers count: a resolved unknown was never seen by its worker.
func checkWorkers(r *Result, h []rop) {
	type seen struct {
		all int64
		key map[string]int64
	}
	workers := map[string]*seen{}
	back := func(o rop, what string, rv, prev int64) {
		r.RVBack.add("%s: op %d %s at rv %d after rv %d", o.Worker, o.ID, what, rv, prev)
	}
	for _, o := range h {
		if o.st != answered || o.Outcome != OK {
			continue
		}
		w := workers[o.Worker]
		if w == nil {
			w = &seen{key: map[string]int64{}}
			workers[o.Worker] = w
		}
		switch o.Kind {
		case Get:
			if o.RV < w.key[o.Key] {
				back(o, "get "+o.Key, o.RV, w.key[o.Key])
			}
			w.key[o.Key] = max(w.key[o.Key], o.RV)
		case List:
			if o.ListRV < w.all {
				back(o, "list", o.ListRV, w.all)
			}
			for _, k := range sortedKeys(o.Items) {
				if rv := o.Items[k].RV; rv < w.key[k] {
					back(o, "list item "+k, rv, w.key[k])
				}
				w.key[k] = max(w.key[k], o.Items[k].RV)
			}
		default:
			if o.RV <= w.all {
				back(o, string(o.Kind)+" "+o.Key, o.RV, w.all)
			}
			w.key[o.Key] = max(w.key[o.Key], o.RV)
		}
		w.all = max(w.all, o.RV, o.ListRV)
	}
}

// checkClock checks that resourceVersions follow real time across
// clients: a write called after another op returned has a higher RV than
// that op's, and a list at least as high. h is sorted by call; a sweep
// over the ops sorted by return keeps the highest RV returned so far.
func checkClock(r *Result, h []rop) {
	var byCall []rop
	for _, o := range h {
		if o.acked() {
			byCall = append(byCall, o)
		}
	}
	byReturn := slices.Clone(byCall)
	slices.SortStableFunc(byReturn, func(a, b rop) int { return cmp.Compare(a.Return, b.Return) })
	rvOf := func(o rop) int64 {
		if o.Kind == List {
			return o.ListRV
		}
		return o.RV
	}
	var top rop
	i := 0
	for _, b := range byCall {
		for ; i < len(byReturn) && byReturn[i].Return < b.Call; i++ {
			if rvOf(byReturn[i]) > rvOf(top) {
				top = byReturn[i]
			}
		}
		if b.Kind == Get || rvOf(b) > rvOf(top) || b.Kind == List && rvOf(b) == rvOf(top) {
			continue
		}
		r.RVClock.add("%s at rv %d, called at %v after %s returned rv %d at %v",
			b.name(), rvOf(b), b.Call, top.name(), rvOf(top), top.Return)
	}
}

// name tells an op in a failure: "op 12 (w1 cas r3)".
func (o rop) name() string {
	s := fmt.Sprintf("op %d (%s %s", o.ID, o.Worker, o.Kind)
	if o.Key != "" {
		s += " " + o.Key
	}
	return s + ")"
}

// checkFinals checks that each server lists every register at its write
// with the highest RV.
func checkFinals(r *Result, h []rop, finals []Final) {
	last := map[string]Item{}
	for _, o := range h {
		if (o.Kind == Write || o.Kind == CAS) && o.st != void && o.Outcome != Conflict && o.RV > last[o.Key].RV {
			last[o.Key] = Item{o.Value, o.RV}
		}
	}
	for _, f := range finals {
		for _, k := range sortedKeys(last) {
			if got, ok := f.Registers[k]; !ok {
				r.Final.add("%s on %s: absent, want %q@%d", k, f.Server, last[k].Value, last[k].RV)
			} else if got != last[k] {
				r.Final.add("%s on %s: %q@%d, want %q@%d", k, f.Server, got.Value, got.RV, last[k].Value, last[k].RV)
			}
		}
		for _, k := range sortedKeys(f.Registers) {
			if _, ok := last[k]; !ok {
				r.Final.add("%s on %s: never written", k, f.Server)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
