package apiclient

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestRetry: transient errors are retried until the timeout, errors no
// retry mends end at once, and Forbidden only within its grace.
func TestRetry(t *testing.T) {
	defer func(g time.Duration) { forbiddenGrace = g }(forbiddenGrace)
	forbiddenGrace = 300 * time.Millisecond
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := []struct {
		name      string
		err       error
		timeout   time.Duration
		minCalls  int
		maxCalls  int
		maxLasted time.Duration
	}{
		{"invalid is final", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", field.ErrorList{field.Required(field.NewPath("data"), "")}), 5 * time.Second, 1, 1, time.Second},
		{"bad request is final", apierrors.NewBadRequest("no"), 5 * time.Second, 1, 1, time.Second},
		{"forbidden within its grace", apierrors.NewForbidden(gr, "x", errors.New("RBAC: not yet")), 5 * time.Second, 2, 10, 2 * time.Second},
		{"connection refused until the timeout", errors.New("connect: connection refused"), 500 * time.Millisecond, 3, 10, 2 * time.Second},
		{"server timeout until the timeout", apierrors.NewServerTimeout(gr, "create", 1), 500 * time.Millisecond, 3, 10, 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			start := time.Now()
			err := Retry(context.Background(), tc.timeout, func(context.Context) error { calls++; return tc.err })
			lasted := time.Since(start)
			if err == nil || err.Error() != tc.err.Error() {
				t.Fatalf("Retry returned %v, want %v", err, tc.err)
			}
			if calls < tc.minCalls || calls > tc.maxCalls || lasted > tc.maxLasted {
				t.Errorf("%d calls in %v, want %d..%d calls within %v", calls, lasted, tc.minCalls, tc.maxCalls, tc.maxLasted)
			}
		})
	}
	calls := 0
	if err := Retry(context.Background(), time.Second, func(context.Context) error {
		if calls++; calls < 3 {
			return apierrors.NewForbidden(gr, "x", errors.New("RBAC: not yet"))
		}
		return nil
	}); err != nil || calls != 3 {
		t.Errorf("a Forbidden that clears: err %v after %d calls, want success on the third", err, calls)
	}
}
