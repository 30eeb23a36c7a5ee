// Package testserver is the small HTTP server kubeboot's own tests run in
// pods: it answers with its hostname and what it saw of the request, serves
// any number of bytes (/bytes?n=N, for transfers that a wrong MTU stalls),
// and can delay its readiness. Its client modes (--get, --download,
// --resolve, --mtu) are what tests exec in a pod, whose image holds this
// one program.
package testserver

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"strconv"
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
	download := fs.String("download", "", "instead of serving, GET this URL (a /bytes?n=N of another test-server), check that every byte the server announced arrived, print the count and the throughput (a client for tests)")
	timeout := fs.Duration("timeout", 0, "how long --get or --download may take (default 5s for --get, 60s for --download)")
	mtu := fs.String("mtu", "", "instead of serving, print the MTU of this network interface (the pod's eth0)")
	keep := fs.String("keep", "", "before serving, print this file's content if it is there, else write a line naming this pod into it (a volume's test)")
	resolve := fs.String("resolve", "", "instead of serving, look this name up with the pod's resolv.conf and print its addresses (a client for tests)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *get != "" {
		return fetch(*get, orDefault(*timeout, 5*time.Second))
	}
	if *download != "" {
		if err := downloadBytes(*download, orDefault(*timeout, 60*time.Second), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "test-server:", err)
			return 1
		}
		return 0
	}
	if *mtu != "" {
		i, err := net.InterfaceByName(*mtu)
		if err != nil {
			fmt.Fprintln(os.Stderr, "test-server:", err)
			return 1
		}
		fmt.Println(i.MTU)
		return 0
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
	l, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "test-server:", err)
		return 1
	}
	fmt.Printf("test-server %s listening on %s\n", host, strings.TrimPrefix(l.Addr().String(), "[::]"))
	if err := http.Serve(l, handler(host, &ready)); err != nil {
		fmt.Fprintln(os.Stderr, "test-server:", err)
		return 1
	}
	return 0
}

// maxBytes bounds /bytes: enough for any transfer test, too little to
// fill a node's disk or memory by a typo.
const maxBytes = 1 << 30

// handler serves the server's endpoints; ready says whether /readyz
// answers ok.
func handler(host string, ready *atomic.Bool) http.Handler {
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
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		if err != nil || n < 0 || n > maxBytes {
			http.Error(w, fmt.Sprintf("/bytes needs n, a count of bytes from 0 to %d", maxBytes), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		// The bytes are a pattern, not zeros, so that nothing on the way
		// can make them smaller than they are.
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = byte(i*7 + i>>8)
		}
		for n > 0 {
			b := chunk[:min(n, int64(len(chunk)))]
			if _, err := w.Write(b); err != nil {
				return
			}
			n -= int64(len(b))
		}
	})
	return mux
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// downloadBytes GETs url within timeout, reads the whole body, checks its
// length against the Content-Length the server announced (and against the
// URL's n, when there is one), and prints the count and throughput to out.
func downloadBytes(url string, timeout time.Duration, out io.Writer) error {
	c := &http.Client{Timeout: timeout}
	start := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s answered %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	got, err := io.Copy(io.Discard, resp.Body)
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("%s: %d bytes received in %s, then: %w", url, got, took.Round(time.Millisecond), err)
	}
	want := resp.ContentLength
	if n, err := nFromURL(url); err == nil {
		if want >= 0 && want != n {
			return fmt.Errorf("%s announced %d bytes, the URL asked for %d", url, want, n)
		}
		want = n
	}
	if want < 0 {
		return fmt.Errorf("%s announced no length: nothing to check %d bytes against", url, got)
	}
	if got != want {
		return fmt.Errorf("%s: %d bytes received of %d", url, got, want)
	}
	fmt.Fprintf(out, "downloaded %d bytes in %s (%.1f MiB/s)\n", got, took.Round(time.Millisecond), float64(got)/(1<<20)/took.Seconds())
	return nil
}

// nFromURL is the n query parameter of a /bytes URL.
func nFromURL(raw string) (int64, error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(u.Query().Get("n"), 10, 64)
}

func fetch(url string, timeout time.Duration) int {
	c := &http.Client{Timeout: timeout}
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
