// Package enginetest checks an engine's Main end to end in a test: that
// what its flags say reaches its run, and that a SIGTERM ends it.
package enginetest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// ServesReadyz runs main with args and --readyz on a free port of
// 127.0.0.1, and fails the test unless /readyz answers there (503: the
// engine waits for a cluster the test does not have), which only a run
// that read the parsed flags does; then it sends the test process a
// SIGTERM, which the engine's Main catches, and wants exit code 0.
func ServesReadyz(t *testing.T, main func(args []string) int, args ...string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// The test process's own hold on SIGTERM, beside the engine's: should
	// the engine's Main have returned (and dropped its own) before the
	// signal below, the test fails by its timeout rather than being
	// killed by Go's default handling.
	held := make(chan os.Signal, 1)
	signal.Notify(held, syscall.SIGTERM)
	defer signal.Stop(held)
	exit := make(chan int, 1)
	go func() { exit <- main(append(args, "--readyz="+addr)) }()
	client := &http.Client{Timeout: time.Second}

	url := fmt.Sprintf("http://%s/readyz", addr)
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case code := <-exit:
			t.Fatalf("exited %d before serving %s", code, url)
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("%s: %d before the engine is ready, want 503", url, resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not served within 10 s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d after SIGTERM, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after SIGTERM")
	}
}
