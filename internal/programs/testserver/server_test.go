package testserver

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	var ready atomic.Bool
	ready.Store(true)
	s := httptest.NewServer(handler("pod-a", &ready))
	t.Cleanup(s.Close)
	return s
}

func TestBytes(t *testing.T) {
	s := newServer(t)
	for _, tc := range []struct {
		query  string
		status int
		n      int
	}{
		{"n=0", http.StatusOK, 0},
		{"n=1", http.StatusOK, 1},
		{"n=8388608", http.StatusOK, 8 << 20},
		{"n=100000", http.StatusOK, 100000},
		{"", http.StatusBadRequest, 0},
		{"n=-1", http.StatusBadRequest, 0},
		{"n=x", http.StatusBadRequest, 0},
		{"n=" + strconv.Itoa(maxBytes+1), http.StatusBadRequest, 0},
	} {
		t.Run(tc.query, func(t *testing.T) {
			resp, err := http.Get(s.URL + "/bytes?" + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.status != http.StatusOK {
				return
			}
			if len(body) != tc.n || resp.ContentLength != int64(tc.n) {
				t.Errorf("%d bytes, Content-Length %d; want %d", len(body), resp.ContentLength, tc.n)
			}
			if tc.n > 1<<16 && bytes.Count(body, body[:1]) == len(body) {
				t.Errorf("the body is one byte repeated")
			}
		})
	}
}

func TestDownload(t *testing.T) {
	s := newServer(t)
	var out bytes.Buffer
	if err := downloadBytes(s.URL+"/bytes?n=8388608", 10*time.Second, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "downloaded 8388608 bytes in ") || !strings.Contains(out.String(), " MiB/s)") {
		t.Errorf("output: %q", out.String())
	}
}

// TestDownloadRefuses: a transfer that stops short, stalls, is refused or
// cannot be checked is an error, never a count.
func TestDownloadRefuses(t *testing.T) {
	short := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write(make([]byte, 10))
		w.(http.Flusher).Flush()
		// Drop the connection, as a path that loses large packets would
		// end a transfer once the client's patience is out.
		if hj, ok := w.(http.Hijacker); ok {
			c, _, _ := hj.Hijack()
			c.Close()
		}
	}))
	defer short.Close()
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write(make([]byte, 10))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer stall.Close()
	unknown := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush() // chunked: no Content-Length
		w.Write(make([]byte, 10))
	}))
	defer unknown.Close()
	ten := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		w.Write(make([]byte, 10))
	}))
	defer ten.Close()
	s := newServer(t)
	for name, tc := range map[string]struct {
		url  string
		want string
	}{
		"stops short":             {short.URL + "/", "10 bytes received"},
		"stalls":                  {stall.URL + "/", "10 bytes received"},
		"refused":                 {s.URL + "/bytes?n=-5", "400 Bad Request"},
		"no length":               {unknown.URL + "/", "announced no length"},
		"other length than asked": {ten.URL + "/bytes?n=5", "the URL asked for 5"},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := downloadBytes(tc.url, time.Second, &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("printed %q", out.String())
			}
		})
	}
}

func TestRoot(t *testing.T) {
	s := newServer(t)
	resp, err := http.Get(s.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"hostname":"pod-a"`) || !strings.Contains(string(b), `"path":"/x"`) {
		t.Errorf("/x: %s", b)
	}
}

func TestMTU(t *testing.T) {
	// The loopback interface is there in every network namespace.
	if code := Main([]string{"--mtu", "lo"}); code != 0 {
		t.Errorf("--mtu lo exited %d", code)
	}
	if code := Main([]string{"--mtu", "no-such-interface0"}); code == 0 {
		t.Errorf("--mtu of an interface that is not there exited 0")
	}
}
