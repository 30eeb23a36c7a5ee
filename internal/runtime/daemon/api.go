package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/supervisor"
)

// SocketFile is the daemon's API: HTTP with JSON bodies on a unix socket,
// mode 0600, answering root and the daemon's own user only (the peer's
// credentials are checked on every connection; `dev up` runs a daemon as
// an unprivileged user). Every request answers once what it asked for is
// done, or failed, or its timeout passed; Client is its typed client.
//
//	GET    /v1/status[?watch=true]          StatusReport; with watch, one per line at each change
//	POST   /v1/reload                       re-read the spec directory now
//	POST   /v1/components/{name}/swap       hand the slot to a developer's process
//	POST   /v1/components/{name}/restore    take it back, answer once ready
//	POST   /v1/components/{name}/restart    {"why", "ready"}: restart, answer once running (ready)
//	PUT    /v1/components/{name}/spec       a changed spec: answer once it runs anew and is ready
//	DELETE /v1/components/{name}            remove its spec: answer once it is stopped
//
// The waiting requests take ?timeout= (a Go duration; 2m by default).
const SocketFile = node.RunDir + "/daemon.sock"

// maxSocketPath is the longest path a unix socket takes (sun_path less
// its terminating NUL).
const maxSocketPath = 107

// apiVersion prefixes every path.
const apiVersion = "/v1"

// defaultTimeout bounds a request that names no timeout.
const defaultTimeout = 2 * time.Minute

// restartRequestBody is the body of a restart.
type restartRequestBody struct {
	Why   string `json:"why"`
	Ready bool   `json:"ready"`
}

// apiError is the body of every answer that is not a success.
type apiError struct {
	Error string `json:"error"`
}

// listen makes the socket, 0600 from its creation on. It is called
// before the pid file names the daemon, so that a command that finds the
// daemon running finds its socket too; connections wait in the backlog
// until serve.
func listen(file string) (net.Listener, error) {
	if len(file) > maxSocketPath {
		return nil, fmt.Errorf("the kubeboot daemon's socket %s is longer than a unix socket's path may be (%d bytes): use a shorter --root", file, maxSocketPath)
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	// The daemon has not started a goroutine that creates files yet: the
	// mask is the process's, for these few lines only.
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", file)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("the kubeboot daemon's socket: %w", err)
	}
	// The file goes when the daemon lets its pid file go, not when the
	// server closes at the start of the stop: a daemon that holds its pid
	// without a socket would pass for one of before the API.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	return l, nil
}

// serve answers the API on l until ctx ends.
func (d *Daemon) serve(ctx context.Context, l net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+apiVersion+"/status", d.handleStatus)
	mux.HandleFunc("POST "+apiVersion+"/reload", func(w http.ResponseWriter, r *http.Request) {
		if !isRoot(r) {
			answer(w, nil, errForbidden)
			return
		}
		d.look()
		answer(w, nil, nil)
	})
	mux.HandleFunc("POST "+apiVersion+"/components/{name}/swap", d.waiting(d.swap))
	mux.HandleFunc("POST "+apiVersion+"/components/{name}/restore", d.waiting(d.restore))
	mux.HandleFunc("POST "+apiVersion+"/components/{name}/restart", d.waiting(d.restart))
	mux.HandleFunc("PUT "+apiVersion+"/components/{name}/spec", d.waiting(d.replaceSpec))
	mux.HandleFunc("DELETE "+apiVersion+"/components/{name}", d.waiting(d.stopComponent))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext:       rootOnly,
	}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		d.logf("[api] %v", err)
	}
}

type peerKey struct{}

var errForbidden = statusError{http.StatusForbidden, errors.New("the kubeboot daemon answers root and its own user only")}

// rootOnly records whether the peer of a connection is root or the
// daemon's own user; handlers refuse the others. The socket's mode
// already keeps them out: this holds when someone loosens it.
func rootOnly(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *syscall.Ucred
	raw.Control(func(fd uintptr) {
		cred, _ = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	return context.WithValue(ctx, peerKey{}, cred != nil && (cred.Uid == 0 || int(cred.Uid) == os.Geteuid()))
}

func isRoot(r *http.Request) bool {
	ok, _ := r.Context().Value(peerKey{}).(bool)
	return ok
}

// statusError is an error with the HTTP status it answers with.
type statusError struct {
	code int
	err  error
}

func (e statusError) Error() string { return e.err.Error() }

// answer writes out as JSON, or err with its status (500 unless it says).
func answer(w http.ResponseWriter, out any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		code := http.StatusInternalServerError
		var se statusError
		if errors.As(err, &se) {
			code = se.code
		}
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(apiError{Error: err.Error()})
		return
	}
	if out == nil {
		out = struct{}{}
	}
	json.NewEncoder(w).Encode(out)
}

// waiting adapts an operation on one component that waits for its
// outcome: root only, the component named in the path, the request's
// timeout.
func (d *Daemon) waiting(op func(ctx context.Context, name string, r *http.Request, timeout time.Duration) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !isRoot(r) {
			answer(w, nil, errForbidden)
			return
		}
		timeout := defaultTimeout
		if t := r.URL.Query().Get("timeout"); t != "" {
			v, err := time.ParseDuration(t)
			if err != nil || v <= 0 {
				answer(w, nil, statusError{http.StatusBadRequest, fmt.Errorf("timeout %q: a positive Go duration is expected", t)})
				return
			}
			timeout = v
		}
		name := r.PathValue("name")
		if !validName(name) {
			answer(w, nil, statusError{http.StatusBadRequest, fmt.Errorf("%q is not a component's name", name)})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		answer(w, nil, op(ctx, name, r, timeout))
	}
}

// handleStatus answers the status, or with watch=true the status at
// once and again at every change, one JSON document per line, until the
// client goes.
func (d *Daemon) handleStatus(w http.ResponseWriter, r *http.Request) {
	if !isRoot(r) {
		answer(w, nil, errForbidden)
		return
	}
	if r.URL.Query().Get("watch") != "true" {
		answer(w, d.report(), nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	var last []byte
	for {
		changed := d.changes()
		rep := d.report()
		// Only Updated differs between reports of the same state.
		rep.Updated = time.Time{}
		b, _ := json.Marshal(rep)
		if string(b) != string(last) {
			last = b
			rep.Updated = time.Now()
			if enc.Encode(rep) != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		}
	}
}

// validName is a name that is one path element (the swap record and the
// spec are files named after it).
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

// known fails, with 404, when this node has no spec named name.
func (d *Daemon) known(name string) error {
	if _, err := os.Stat(d.fs.Path(component.SpecPath(name))); err != nil {
		return statusError{http.StatusNotFound, fmt.Errorf("this node runs no component %q (no spec %s)", name, d.fs.Path(component.SpecPath(name)))}
	}
	return nil
}

// swap records name as swapped out (SwapDir, which outlives the daemon)
// and waits until it is.
func (d *Daemon) swap(ctx context.Context, name string, _ *http.Request, timeout time.Duration) error {
	if err := d.known(name); err != nil {
		return err
	}
	if err := os.MkdirAll(d.fs.Path(SwapDir), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(d.fs.Path(path.Join(SwapDir, name)), nil, 0o644); err != nil {
		return err
	}
	d.look()
	return d.waitFor(ctx, "swap out "+name, timeout, func(c supervisor.Status) bool {
		return c.Name == name && c.State == StateSwapped
	})
}

func (d *Daemon) restore(ctx context.Context, name string, _ *http.Request, timeout time.Duration) error {
	if err := os.Remove(d.fs.Path(path.Join(SwapDir, name))); errors.Is(err, os.ErrNotExist) {
		return statusError{http.StatusConflict, fmt.Errorf("%s is not swapped out on this node", name)}
	} else if err != nil {
		return err
	}
	d.look()
	return d.waitFor(ctx, "run "+name+" again", timeout, func(c supervisor.Status) bool {
		return c.Name == name && c.State != StateSwapped && c.Ready
	})
}

// restart queues the restart with those the daemon makes itself (one at
// a time) and waits until a process started after the request runs.
func (d *Daemon) restart(ctx context.Context, name string, r *http.Request, timeout time.Duration) error {
	var body restartRequestBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return statusError{http.StatusBadRequest, fmt.Errorf("restart: %w", err)}
	}
	if err := d.known(name); err != nil {
		return err
	}
	asked := time.Now()
	d.restarts.enqueue(name, body.Why, "[restart]")
	return d.waitFor(ctx, "restart "+name, timeout, func(c supervisor.Status) bool {
		return c.Name == name && c.PID != 0 && c.Since.After(asked) && (c.Ready || !body.Ready)
	})
}

// replaceSpec writes a changed spec of a component and waits until a
// process started after the change is ready: the daemon restarts that
// component only.
func (d *Daemon) replaceSpec(ctx context.Context, name string, r *http.Request, timeout time.Duration) error {
	var spec component.Spec
	if err := json.NewDecoder(r.Body).Decode(&spec); err != nil {
		return statusError{http.StatusBadRequest, fmt.Errorf("spec: %w", err)}
	}
	if spec.Name != name {
		return statusError{http.StatusBadRequest, fmt.Errorf("the spec is %q's, not %q's", spec.Name, name)}
	}
	if err := d.known(name); err != nil {
		return err
	}
	changed := time.Now()
	if err := d.store.Write(spec); err != nil {
		return err
	}
	d.look()
	return d.waitFor(ctx, "run the new "+name, timeout, func(c supervisor.Status) bool {
		return c.Name == name && c.Ready && c.Since.After(changed)
	})
}

// stopComponent removes a component's spec and waits until it no longer
// runs.
func (d *Daemon) stopComponent(ctx context.Context, name string, _ *http.Request, timeout time.Duration) error {
	if err := os.Remove(d.fs.Path(component.SpecPath(name))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	d.look()
	return d.waitUntil(ctx, "stop "+name, timeout, func(r StatusReport) bool {
		return !slices.ContainsFunc(r.Components, func(c supervisor.Status) bool { return c.Name == name && c.PID != 0 })
	})
}

// waitFor waits until some component's status satisfies ok.
func (d *Daemon) waitFor(ctx context.Context, what string, timeout time.Duration, ok func(supervisor.Status) bool) error {
	return d.waitUntil(ctx, what, timeout, func(r StatusReport) bool { return slices.ContainsFunc(r.Components, ok) })
}

// waitUntil waits, woken by each change of status (no polling), until
// the status satisfies ok, or ctx ends.
func (d *Daemon) waitUntil(ctx context.Context, what string, timeout time.Duration, ok func(StatusReport) bool) error {
	for {
		changed := d.changes()
		if ok(d.report()) {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return statusError{http.StatusGatewayTimeout, fmt.Errorf("the kubeboot daemon did not %s within %s; see %s", what, timeout, d.fs.Path(node.DaemonLogFile))}
			}
			return ctx.Err()
		case <-changed:
		}
	}
}
