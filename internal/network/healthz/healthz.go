// Package healthz serves the /readyz of kubeboot's pod network engines
// (packages flannel and kuberouter), which the node daemon probes.
package healthz

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// Serve answers GET /readyz on addr with 200 once ready holds true, 503
// before, until ctx ends.
func Serve(ctx context.Context, addr string, ready *atomic.Bool) {
	srv := &http.Server{Addr: addr, Handler: Handler(ready), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.Errorf("readyz on %s: %v", addr, err)
		}
	}()
	go func() { <-ctx.Done(); srv.Close() }()
}

// Handler is Serve's handler.
func Handler(ready *atomic.Bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}
