// Package testserver is the small HTTP server kubeboot's own tests run in
// pods: it answers with its hostname and what it saw of the request, and
// can delay its readiness.
package testserver

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Response is what the server answers on /.
type Response struct {
	Hostname   string              `json:"hostname"`
	RemoteAddr string              `json:"remoteAddr"`
	Method     string              `json:"method"`
	Path       string              `json:"path"`
	Host       string              `json:"host"`
	Headers    map[string][]string `json:"headers"`
}

// Main parses args and serves until the process is killed.
func Main(args []string) int {
	fs := flag.NewFlagSet("test-server", flag.ContinueOnError)
	port := fs.Int("port", 8080, "TCP port to listen on")
	readyAfter := fs.Duration("ready-after", 0, "answer /readyz with 503 until this long after start")
	get := fs.String("get", "", "instead of serving, GET this URL, print the body and exit non-zero unless it answers 200 (a client for tests)")
	keep := fs.String("keep", "", "before serving, print this file's content if it is there, else write a line naming this pod into it (a volume's test)")
	resolve := fs.String("resolve", "", "instead of serving, look this name up with the pod's resolv.conf and print its addresses (a client for tests)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *get != "" {
		return fetch(*get)
	}
	if *resolve != "" {
		addrs, err := net.LookupHost(*resolve)
		if err != nil {
			fmt.Fprintln(os.Stderr, "test-server:", err)
			return 1
		}
		fmt.Println(strings.Join(addrs, " "))
		return 0
	}
	host, _ := os.Hostname()
	if *keep != "" {
		if err := keepFile(*keep, host); err != nil {
			fmt.Fprintln(os.Stderr, "test-server:", err)
			return 1
		}
	}
	var ready atomic.Bool
	ready.Store(*readyAfter == 0)
	if *readyAfter > 0 {
		time.AfterFunc(*readyAfter, func() { ready.Store(true) })
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(Response{Hostname: host, RemoteAddr: r.RemoteAddr, Method: r.Method, Path: r.URL.Path, Host: r.Host, Headers: r.Header}) //nolint:errcheck
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	l, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "test-server:", err)
		return 1
	}
	fmt.Printf("test-server %s listening on %s\n", host, strings.TrimPrefix(l.Addr().String(), "[::]"))
	if err := http.Serve(l, mux); err != nil {
		fmt.Fprintln(os.Stderr, "test-server:", err)
		return 1
	}
	return 0
}

func fetch(url string) int {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test-server:", err)
		return 1
	}
	defer resp.Body.Close()
	if _, err := io.Copy(os.Stdout, resp.Body); err != nil {
		return 1
	}
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "test-server: %s answered %s\n", url, resp.Status)
		return 1
	}
	return 0
}

// keepFile prints the content of path, or writes a line naming host and
// the time into it when it is not there.
func keepFile(path, host string) error {
	b, err := os.ReadFile(path)
	if err == nil {
		fmt.Printf("kept %s: %s", path, b)
		return nil
	}
	if !os.IsNotExist(err) {
		return err
	}
	line := fmt.Sprintf("written by %s at %s\n", host, time.Now().UTC().Format(time.RFC3339Nano))
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %s", path, line)
	return nil
}
