package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeboot/kubeboot/bench/internal/history"
)

func TestClassify(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	dial := &url.Error{Op: "Post", URL: "https://10.0.0.1:6443", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	reset := &url.Error{Op: "Post", URL: "https://10.0.0.1:6443", Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
	for _, c := range []struct {
		kind history.Kind
		err  error
		want history.Outcome
	}{
		{history.Create, nil, history.OK},
		{history.CAS, apierrors.NewConflict(cm, "r", errors.New("stale")), history.Conflict},
		// A create's 409 (AlreadyExists) is not a CAS's: with unique names
		// the object exists, so it was maybe applied (and an anomaly).
		{history.Create, apierrors.NewAlreadyExists(cm, "c"), history.Unknown},
		{history.Create, apierrors.NewTooManyRequests("slow down", 1), history.Fail},
		{history.Get, apierrors.NewNotFound(cm, "r"), history.Fail},
		// A 5xx or a timeout may come after etcd applied the write.
		{history.Create, apierrors.NewInternalError(errors.New("etcdserver: request timed out")), history.Unknown},
		{history.Write, apierrors.NewServerTimeout(cm, "update", 1), history.Unknown},
		{history.Create, apierrors.NewTimeoutError("timeout", 1), history.Unknown},
		{history.Create, dial, history.Fail},
		{history.Create, reset, history.Unknown},
		{history.Create, context.DeadlineExceeded, history.Unknown},
		{history.Create, fmt.Errorf("wrapped: %w", dial), history.Fail},
	} {
		if got, _ := classify(c.kind, c.err); got != c.want {
			t.Errorf("classify(%s, %v) = %s, want %s", c.kind, c.err, got, c.want)
		}
	}
}

func TestWriteGaps(t *testing.T) {
	s := time.Second
	f := injected{Victim: "cp2", Inject: 10 * s, Heal: 20 * s}
	ack := func(target string, ret time.Duration) history.Op {
		return history.Op{Kind: history.Create, Target: target, Outcome: history.OK, Return: ret}
	}
	ops := []history.Op{
		ack("cp1", 9*s), ack("cp1", 11*s), ack("cp3", 12500*time.Millisecond), ack("cp1", 14*s), // majority: 2.5 s the longest...
		ack("cp2", 16*s), // the victim's own: not the majority's
		{Kind: history.Get, Target: "cp1", Outcome: history.OK, Return: 18 * s}, // a read: not a write
		{Kind: history.Create, Target: "cp1", Outcome: history.Unknown, Return: 18 * s},
		ack("cp3", 24*s), // ...then 10 s from 14 s to 24 s
		ack("lb", 10500*time.Millisecond), ack("lb", 23*s),
	}
	maj, lb := writeGaps(ops, f)
	if maj != 10*s {
		t.Errorf("majority gap %s, want 10s", maj)
	}
	if lb != 12500*time.Millisecond {
		t.Errorf("balancer gap %s, want 12.5s", lb)
	}
}
