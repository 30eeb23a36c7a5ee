package component

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// WaitReady polls until the probe passes, and on timeout names the last
// failure.
func TestWaitReady(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "etcd not ready", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	if err := (Probe{URL: srv.URL}).WaitReady(context.Background(), 10*time.Second, nil); err != nil || calls.Load() != 3 {
		t.Errorf("WaitReady: %v after %d probes", err, calls.Load())
	}

	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "etcd not ready", http.StatusInternalServerError)
	}))
	defer down.Close()
	err := (Probe{URL: down.URL}).WaitReady(context.Background(), 300*time.Millisecond, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "not ready after 300ms") && !strings.HasPrefix(err.Error(), "not ready after 400ms") || !strings.Contains(err.Error(), "500") {
		t.Errorf("WaitReady on a failing probe: %v", err)
	}
}
