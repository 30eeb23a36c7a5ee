// Package history records what clients asked of a Kubernetes API under
// faults and checks it: no acknowledged write lost, none applied that was
// never asked, every register's history linearizable, and no client
// seeing a resourceVersion go back. It needs no cluster: bench/faults
// records, this package judges (the shape of etcd's tests/robustness
// validate package and Jepsen's set and register checkers).
package history

import "time"

// Kind is what a request did.
type Kind string

const (
	// Create makes a ConfigMap of the log namespace with a unique name.
	Create Kind = "create"
	// Write replaces a register (a ConfigMap of the register namespace)
	// without a precondition; a register's first create is a Write too.
	Write Kind = "write"
	// CAS replaces a register if its resourceVersion is still ExpectRV.
	CAS Kind = "cas"
	// Get reads one register (a quorum read: no resourceVersion).
	Get Kind = "get"
	// List reads every register (no resourceVersion: the watch cache,
	// after it caught up with etcd's current revision).
	List Kind = "list"
)

// Outcome is what the client learnt of a request.
type Outcome string

const (
	// OK is a 2xx answer.
	OK Outcome = "ok"
	// Conflict is a CAS refused for a stale resourceVersion (409): the
	// register was not changed.
	Conflict Outcome = "conflict"
	// Fail is a request that surely did nothing: never sent, or refused
	// before any storage (4xx other than a CAS's 409, 429).
	Fail Outcome = "fail"
	// Unknown is a request sent whose answer never came or was a 5xx or a
	// timeout: it may or may not have taken effect.
	Unknown Outcome = "unknown"
)

// Item is a register's value and resourceVersion as read.
type Item struct {
	Value string `json:"value"`
	RV    int64  `json:"rv"`
}

// Op is one request and its outcome. A client (Proc) has one request
// outstanding at a time; after an Unknown outcome the worker goes on as
// a new Proc, as Jepsen's clients do, so every Proc stays sequential.
type Op struct {
	ID     int    `json:"id"`
	Worker string `json:"worker"`
	Proc   int    `json:"proc"`
	// Target is where the request went: "lb" or a control plane's name.
	Target string `json:"target"`
	Kind   Kind   `json:"kind"`
	// Key is the object's name (Create, Write, CAS, Get); empty for List.
	Key string `json:"key,omitempty"`
	// Value is the value written (unique over the whole history).
	Value    string `json:"value,omitempty"`
	ExpectRV int64  `json:"expectRV,omitempty"`
	// Call and Return are times since the history's start; Return is
	// when the answer (or the error) came.
	Call    time.Duration `json:"call"`
	Return  time.Duration `json:"return"`
	Outcome Outcome       `json:"outcome"`
	Code    int           `json:"code,omitempty"`
	Err     string        `json:"err,omitempty"`
	// RV is the object's resourceVersion in an OK answer (the one
	// written, or the one read); ListRV the list's.
	RV     int64 `json:"rv,omitempty"`
	ListRV int64 `json:"listRV,omitempty"`
	// Items is a List's answer, by register name; a Get's is Value/RV.
	Items map[string]Item `json:"items,omitempty"`
}

// Event is one watch event of either namespace, as a watch straight to
// one API server delivered it.
type Event struct {
	Source string `json:"source"`
	// Type is ADDED, MODIFIED or DELETED.
	Type string `json:"type"`
	// Log tells an event of the log namespace (creates) from one of the
	// register namespace.
	Log   bool          `json:"log"`
	Key   string        `json:"key"`
	Value string        `json:"value"`
	RV    int64         `json:"rv"`
	Recv  time.Duration `json:"recv"`
}

// Final is what one API server listed at the end, every fault healed: the
// log namespace's names and the registers.
type Final struct {
	Server    string
	Creates   map[string]bool
	Registers map[string]Item
}
