package history

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// never is the Return of a write known to have taken effect at a time
// nobody saw: porcupine may place it anywhere after its call, as etcd's
// validate.go does with math.MaxInt64.
const never = time.Duration(math.MaxInt64)

// status is what an op counts as once the unknown outcomes are settled.
type status uint8

const (
	// void: a failed or unknown read, a failed write, a refused create,
	// an unknown write seen nowhere (it never took effect).
	void status = iota
	// answered: an OK answer, or a CAS's conflict.
	answered
	// resolved: an unknown write a watch showed; RV and Return from the
	// event. Not the error's time: a write whose client was told it timed
	// out can still be committed later (a proposal queued on a cut-off
	// follower is forwarded to the leader once the cut heals), as Jepsen's
	// indeterminate operations may take effect any time after their call.
	resolved
	// missed: an unknown write no watch showed but a read or a final
	// did; RV from that (0 for a create), Return never.
	missed
)

// rop is an op with its settled status.
type rop struct {
	Op
	st status
}

// sighting is what the watches, the reads and the finals show of one
// write: a create's name or a register's value, both unique.
type sighting struct {
	key      string
	rv       int64         // 0 while only a final's list of names showed it
	recv     time.Duration // the earliest watch event
	watched  bool
	writers  int  // ops that wrote it: more than one breaks the premise
	reported bool // one anomaly per sighting is enough
}

func (x *sighting) report(r *Result, format string, a ...any) {
	if !x.reported {
		x.reported = true
		r.Anomalies.add(format, a...)
	}
}

// sightings indexes every write shown anywhere, creates by name and
// register writes by value.
type sightings struct{ creates, values map[string]*sighting }

func note(r *Result, m map[string]*sighting, id, key string, rv int64, recv time.Duration, watched bool) {
	x := m[id]
	if x == nil {
		x = &sighting{key: key, rv: rv}
		m[id] = x
	}
	if key != x.key || rv != 0 && x.rv != 0 && rv != x.rv {
		x.report(r, "%q shown as %s@%d and as %s@%d", id, x.key, x.rv, key, rv)
	}
	if x.rv == 0 {
		x.rv = rv
	}
	if watched && (!x.watched || recv < x.recv) {
		x.recv, x.watched = recv, true
	}
}

// collect indexes what the watches, the OK reads and the finals show.
// DELETED events are left out: nothing deletes during the load.
func collect(r *Result, ops []Op, events []Event, finals []Final) sightings {
	s := sightings{map[string]*sighting{}, map[string]*sighting{}}
	for _, e := range events {
		switch {
		case e.Type == "DELETED":
		case e.Log:
			note(r, s.creates, e.Key, e.Key, e.RV, e.Recv, true)
		default:
			note(r, s.values, e.Value, e.Key, e.RV, e.Recv, true)
		}
	}
	for _, f := range finals {
		for name := range f.Creates {
			note(r, s.creates, name, name, 0, 0, false)
		}
		for k, it := range f.Registers {
			note(r, s.values, it.Value, k, it.RV, 0, false)
		}
	}
	for _, o := range ops {
		switch {
		case o.Outcome != OK:
		case o.Kind == Get:
			note(r, s.values, o.Value, o.Key, o.RV, 0, false)
		case o.Kind == List:
			for k, it := range o.Items {
				note(r, s.values, it.Value, k, it.RV, 0, false)
			}
		}
	}
	return s
}

// resolve settles every op's outcome (etcd's validate/patch_history.go)
// and returns the ops sorted by call. Names and values shown that no op
// wrote are reported here.
func resolve(r *Result, ops []Op, s sightings) []rop {
	h := make([]rop, 0, len(ops))
	for _, o := range ops {
		x := rop{Op: o}
		switch o.Kind {
		case Get, List:
			if o.Outcome == OK {
				x.st = answered
			}
		case Create:
			x.st = settle(r, &x.Op, &r.Creates, s.creates[o.Key])
		default:
			x.st = settle(r, &x.Op, &r.Writes, s.values[o.Value])
		}
		h = append(h, x)
	}
	for _, name := range sortedKeys(s.creates) {
		if s.creates[name].writers == 0 {
			r.Unexpected.add("%s: never sent", name)
		}
	}
	for _, v := range sortedKeys(s.values) {
		if x := s.values[v]; x.writers == 0 {
			x.report(r, "%s=%q: never written", x.key, v)
		}
	}
	slices.SortStableFunc(h, func(a, b rop) int { return cmp.Compare(a.Call, b.Call) })
	return h
}

// settle decides what one write counts as, given what was seen of it
// (nil: nothing), and fixes the RV and Return of an unknown one.
func settle(r *Result, o *Op, t *Tally, x *sighting) status {
	t.Attempted++
	what := o.Key
	if o.Kind != Create {
		what += "=" + o.Value
	}
	if x != nil {
		x.writers++
		switch {
		case x.writers > 1:
			x.report(r, "%s written twice", what)
		case x.key != o.Key:
			x.report(r, "%s shown under the key %s", what, x.key)
		case x.watched && x.recv < o.Call:
			x.report(r, "%s watched at %v, before its call at %v", what, x.recv, o.Call)
		}
	}
	switch o.Outcome {
	case OK:
		t.Acked++
		if x != nil && x.rv != 0 && x.rv != o.RV {
			x.report(r, "%s acked at rv %d, shown at rv %d", what, o.RV, x.rv)
		}
		return answered
	case Conflict:
		t.Conflict++
		switch {
		case o.Kind != CAS:
			r.Anomalies.add("%s: a conflict (%d) on a %s", what, o.Code, o.Kind)
			return void
		case x != nil:
			x.report(r, "%s refused (conflict) yet shown", what)
		}
		return answered
	case Fail:
		t.Failed++
		switch {
		case x == nil:
		case o.Kind == Create:
			r.Unexpected.add("%s: failed (%d) yet shown", what, o.Code)
		default:
			x.report(r, "%s failed (%d) yet shown", what, o.Code)
		}
		return void
	}
	// Unknown, or an outcome this package does not know: maybe applied.
	t.Unknown++
	switch {
	case x == nil:
		t.Dropped++
		return void
	case x.watched:
		t.Resolved++
		o.RV, o.Return = x.rv, max(x.recv, o.Call)
		return resolved
	}
	t.Missed++
	r.WatchMissed.add("%s: in no watch, yet read or listed at the end", what)
	o.RV, o.Return = x.rv, never
	return missed
}
