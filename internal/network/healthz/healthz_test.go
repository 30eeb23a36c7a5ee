package healthz

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestReadyOnlyOnceSaid(t *testing.T) {
	var ready atomic.Bool
	h := Handler(&ready)
	get := func() int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return w.Code
	}
	if c := get(); c != http.StatusServiceUnavailable {
		t.Fatalf("before ready: %d", c)
	}
	ready.Store(true)
	if c := get(); c != http.StatusOK {
		t.Fatalf("once ready: %d", c)
	}
}
