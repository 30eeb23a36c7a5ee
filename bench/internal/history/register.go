package history

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// regState is one register: its value and resourceVersion.
type regState struct {
	Value string
	RV    int64
}

// regInput is a request to a register. A List's answer enters as one read
// per register it returned, with the List's call and return.
type regInput struct {
	Kind     Kind // Write, CAS, Get or List
	Value    string
	ExpectRV int64
}

// regOutput is its answer; a write's Value is its input's.
type regOutput struct {
	Value    string
	RV       int64
	Conflict bool
}

// opRef names the recorded op behind a porcupine operation in the HTML.
type opRef struct {
	ID             int
	Worker, Target string
	Outcome        Outcome
}

// step is a register's sequential specification: a read sees the state,
// a write moves the RV forward, a CAS applies only on the RV it expects
// and is refused only on another.
func step(s regState, in regInput, out regOutput) (bool, regState) {
	switch {
	case in.Kind == Get || in.Kind == List:
		return out.Value == s.Value && out.RV == s.RV, s
	case out.Conflict:
		return s.RV != in.ExpectRV, s
	case in.Kind == CAS && s.RV != in.ExpectRV, out.RV <= s.RV:
		return false, s
	}
	return true, regState{in.Value, out.RV}
}

func registerModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return regState{} },
		Step: func(s, in, out any) (bool, any) {
			return step(s.(regState), in.(regInput), out.(regOutput))
		},
		Hash: func(s any) uint64 {
			h := fnv.New64a()
			h.Write([]byte(s.(regState).Value))
			return h.Sum64() ^ uint64(s.(regState).RV)
		},
		DescribeOperation: func(in, out any) string {
			i, o := in.(regInput), out.(regOutput)
			switch {
			case i.Kind == Get || i.Kind == List:
				return fmt.Sprintf("%s → %q@%d", i.Kind, o.Value, o.RV)
			case o.Conflict:
				return fmt.Sprintf("cas(%q if @%d) → conflict", i.Value, i.ExpectRV)
			case i.Kind == CAS:
				return fmt.Sprintf("cas(%q if @%d) → @%d", i.Value, i.ExpectRV, o.RV)
			}
			return fmt.Sprintf("write(%q) → @%d", i.Value, o.RV)
		},
		DescribeState: func(s any) string {
			return fmt.Sprintf("%q@%d", s.(regState).Value, s.(regState).RV)
		},
		DescribeOperationMetadata: func(m any) string {
			ref, ok := m.(opRef)
			if !ok {
				return ""
			}
			return fmt.Sprintf("op %d, %s via %s, %s", ref.ID, ref.Worker, ref.Target, ref.Outcome)
		},
	}
}

// illegalRegister keeps what VisualizeFailures draws.
type illegalRegister struct {
	key  string
	info porcupine.LinearizationInfo
}

// checkRegisters checks each register's history for linearizability on
// its own, so that the timeout bounds each one.
func checkRegisters(r *Result, h []rop, timeout time.Duration) {
	byKey := map[string][]porcupine.Operation{}
	clients := map[string]map[int]int{} // per key, Proc → porcupine's client
	add := func(o rop, key string, in regInput, out regOutput) {
		ids := clients[key]
		if ids == nil {
			ids = map[int]int{}
			clients[key] = ids
		}
		id, ok := ids[o.Proc]
		if !ok {
			id = len(ids)
			ids[o.Proc] = id
		}
		byKey[key] = append(byKey[key], porcupine.Operation{
			ClientId: id, Input: in, Output: out, Call: int64(o.Call), Return: int64(o.Return),
			Metadata: opRef{o.ID, o.Worker, o.Target, o.Outcome},
		})
	}
	for _, o := range h {
		switch {
		case o.st == void || o.Kind == Create:
		case o.Kind == List:
			for _, k := range sortedKeys(o.Items) {
				add(o, k, regInput{Kind: List}, regOutput{Value: o.Items[k].Value, RV: o.Items[k].RV})
			}
		case o.Kind == Get:
			add(o, o.Key, regInput{Kind: Get}, regOutput{Value: o.Value, RV: o.RV})
		default:
			add(o, o.Key, regInput{o.Kind, o.Value, o.ExpectRV}, regOutput{RV: o.RV, Conflict: o.Outcome == Conflict})
		}
	}
	model := registerModel()
	for _, k := range sortedKeys(byKey) {
		start := time.Now()
		res, info := porcupine.CheckOperationsVerbose(model, byKey[k], timeout)
		r.Slowest = max(r.Slowest, time.Since(start))
		r.Registers++
		r.RegisterOps += len(byKey[k])
		switch res {
		case porcupine.Illegal:
			r.Illegal.add("%s", k)
			r.illegal = append(r.illegal, illegalRegister{k, info})
		case porcupine.Unknown:
			r.Undecided.add("%s", k)
		}
	}
}

// VisualizeFailures writes porcupine's HTML of each register found not
// linearizable into dir, as register-<key>.html, and returns the paths.
func (r Result) VisualizeFailures(dir string) ([]string, error) {
	var paths []string
	model := registerModel()
	for _, f := range r.illegal {
		p := filepath.Join(dir, "register-"+filepath.Base(f.key)+".html")
		if err := porcupine.VisualizePath(model, f.info, p); err != nil {
			return paths, fmt.Errorf("history: drawing register %s: %w", f.key, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
