package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/supervisor"
)

// Client is the typed client of a node's daemon API (SocketFile). Every
// call answers once what it asked for is done or failed.
type Client struct {
	fs fsys.FS
	hc *http.Client
}

// NewClient returns the client of the daemon of the node under fs.
func NewClient(fs fsys.FS) *Client {
	sock := fs.Path(SocketFile)
	return &Client{fs: fs, hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableKeepAlives: true,
	}}}
}

// ErrNotRunning is the error of a call when no daemon runs for the root.
var ErrNotRunning = errors.New("the kubeboot daemon is not running")

// mode is how the client reaches the node's daemon.
type mode int

const (
	none   mode = iota // no daemon runs
	api                // the daemon serves SocketFile
	legacy             // a daemon of a release before the API: specs on disk, SIGHUP, its status file
)

func (c *Client) mode() (mode, int) {
	pid := Running(c.fs)
	if pid == 0 {
		return none, 0
	}
	if _, err := os.Stat(c.fs.Path(SocketFile)); err == nil {
		return api, pid
	}
	// The API's daemon makes its socket before it writes its pid: a
	// running daemon without one predates it. It keeps running across an
	// upgrade (the upgrade replaces the components under it), so the
	// upgrade and reset talk to it its own way.
	return legacy, pid
}

func (c *Client) notRunning() error {
	return fmt.Errorf("%w for %s", ErrNotRunning, c.fs.Path("/"))
}

// tooOld is the error of an operation a daemon before the API cannot do.
func (c *Client) tooOld(pid int, what string) error {
	return fmt.Errorf("the kubeboot daemon (pid %d) predates its API and cannot %s: restart it with this binary (`kubeboot daemon stop && kubeboot daemon start`)", pid, what)
}

// call sends one request and decodes its answer into out (when set).
func (c *Client) call(ctx context.Context, method, p string, q url.Values, in, out any) error {
	resp, err := c.do(ctx, method, p, q, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// do sends a request with in as its JSON body (none when nil) and returns
// the daemon's answer when it is a success; the caller closes its body.
// Any other answer is a statusError with the daemon's message.
func (c *Client) do(ctx context.Context, method, p string, q url.Values, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	u := "http://kubeboot" + apiVersion + p
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, syscall.ECONNREFUSED):
			return nil, fmt.Errorf("the kubeboot daemon does not answer on %s: it is stopping (its log: %s)", c.fs.Path(SocketFile), c.fs.Path(node.DaemonLogFile))
		}
		return nil, fmt.Errorf("the kubeboot daemon's API (%s): %w", c.fs.Path(SocketFile), err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var e apiError
	if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error != "" {
		return nil, statusError{resp.StatusCode, errors.New(e.Error)}
	}
	return nil, statusError{resp.StatusCode, fmt.Errorf("the kubeboot daemon answered %s to %s %s", resp.Status, method, p)}
}

func timeoutQuery(timeout time.Duration) url.Values {
	return url.Values{"timeout": {timeout.String()}}
}

// withTimeout gives the request a little longer than the daemon's own
// limit, so that the daemon's error (which says what did not happen)
// answers first.
func withTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, timeout+5*time.Second)
}

// Status is the daemon's status now.
func (c *Client) Status(ctx context.Context) (*StatusReport, error) {
	switch m, _ := c.mode(); m {
	case none:
		return nil, c.notRunning()
	case legacy:
		return ReadStatus(c.fs)
	}
	var r StatusReport
	if err := c.call(ctx, http.MethodGet, "/status", nil, nil, &r); err != nil {
		// A user the API does not answer reads the status file, as
		// anyone could before the API.
		var se statusError
		if errors.Is(err, syscall.EACCES) || errors.As(err, &se) && se.code == http.StatusForbidden {
			return ReadStatus(c.fs)
		}
		return nil, err
	}
	return &r, nil
}

// Watch calls f with the status at once and at every change until ctx
// ends, f returns false, or the daemon goes (an error then).
func (c *Client) Watch(ctx context.Context, f func(StatusReport) bool) error {
	switch m, pid := c.mode(); m {
	case none:
		return c.notRunning()
	case legacy:
		return c.tooOld(pid, "be watched")
	}
	resp, err := c.do(ctx, http.MethodGet, "/status", url.Values{"watch": {"true"}}, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r StatusReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return err
		}
		if !f(r) {
			return nil
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("the kubeboot daemon's watch: %w", err)
	}
	return errors.New("the node daemon is gone (it ended the watch)")
}

// Reload has the daemon re-read its spec directory now.
func (c *Client) Reload(ctx context.Context) error {
	switch m, pid := c.mode(); m {
	case none:
		return c.notRunning()
	case legacy:
		return hup(pid)
	}
	return c.call(ctx, http.MethodPost, "/reload", nil, nil, nil)
}

// Runs says why the daemon of this node could not act on name: the node
// has no such component, or no daemon runs. It is nil when it could.
func (c *Client) Runs(name string) error {
	if !fsys.Exists(c.fs, component.SpecPath(name)) {
		return fmt.Errorf("this node runs no component %q (no spec %s)", name, c.fs.Path(component.SpecPath(name)))
	}
	if m, _ := c.mode(); m == none {
		return c.notRunning()
	}
	return nil
}

// Swap hands one component's slot to a developer's own process: the
// daemon stops it and does not restart it until Restore, and components
// that come After it treat it as running elsewhere. It returns once the
// component is swapped out.
func (c *Client) Swap(ctx context.Context, name string, timeout time.Duration) error {
	if err := c.Runs(name); err != nil {
		return err
	}
	if m, pid := c.mode(); m == legacy {
		return c.tooOld(pid, "swap "+name+" out")
	}
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	return c.call(ctx, http.MethodPost, "/components/"+name+"/swap", timeoutQuery(timeout), nil, nil)
}

// Restore hands a swapped component back to the daemon and returns once
// it is ready. With no daemon running, the daemon runs it when it starts.
func (c *Client) Restore(ctx context.Context, name string, timeout time.Duration) error {
	switch m, pid := c.mode(); m {
	case none:
		if err := os.Remove(c.fs.Path(path.Join(SwapDir, name))); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s is not swapped out on this node", name)
		} else if err != nil {
			return err
		}
		return nil
	case legacy:
		return c.tooOld(pid, "restore "+name)
	}
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	return c.call(ctx, http.MethodPost, "/components/"+name+"/restore", timeoutQuery(timeout), nil, nil)
}

// Restart has the daemon stop one component and start it again at once
// (no back-off), logging why; it returns once a process started after the
// request runs, and when ready is set once it is ready. Components that
// depend on it keep running.
func (c *Client) Restart(ctx context.Context, name, why string, ready bool, timeout time.Duration) error {
	if err := c.Runs(name); err != nil {
		return err
	}
	if m, pid := c.mode(); m == legacy {
		return c.tooOld(pid, "restart "+name)
	}
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	return c.call(ctx, http.MethodPost, "/components/"+name+"/restart", timeoutQuery(timeout), restartRequestBody{Why: why, Ready: ready}, nil)
}

// ReplaceSpec hands the daemon a changed spec of a running component and
// returns once the daemon runs it anew (a process started after the
// change) and it is ready: the daemon restarts that component only.
func (c *Client) ReplaceSpec(ctx context.Context, spec component.Spec, timeout time.Duration) error {
	switch m, pid := c.mode(); m {
	case none:
		return c.notRunning()
	case legacy:
		changed := time.Now()
		if err := (component.Store{FS: c.fs}).Write(spec); err != nil {
			return err
		}
		return c.legacyWait(ctx, pid, timeout, "run the new "+spec.Name, func(r *StatusReport) bool {
			return slices.ContainsFunc(r.Components, func(s supervisor.Status) bool {
				return s.Name == spec.Name && s.Ready && s.Since.After(changed)
			})
		})
	}
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	return c.call(ctx, http.MethodPut, "/components/"+spec.Name+"/spec", timeoutQuery(timeout), spec, nil)
}

// StopComponent has the daemon stop one component for good (its spec is
// removed) and returns once it no longer runs. With no daemon running,
// it removes the spec.
func (c *Client) StopComponent(ctx context.Context, name string, timeout time.Duration) error {
	m, pid := c.mode()
	switch m {
	case api:
		ctx, cancel := withTimeout(ctx, timeout)
		defer cancel()
		return c.call(ctx, http.MethodDelete, "/components/"+name, timeoutQuery(timeout), nil, nil)
	}
	if err := os.Remove(c.fs.Path(component.SpecPath(name))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if m == none {
		return nil
	}
	return c.legacyWait(ctx, pid, timeout, "stop "+name, func(r *StatusReport) bool {
		return !slices.ContainsFunc(r.Components, func(s supervisor.Status) bool { return s.Name == name && s.PID != 0 })
	})
}

// legacyWait tells a daemon of a release before the API to re-read its
// specs (SIGHUP, which every release answers) and waits for a status file
// written after that which satisfies ok: the only way such a daemon
// tells what it did.
func (c *Client) legacyWait(ctx context.Context, pid int, timeout time.Duration, what string, ok func(*StatusReport) bool) error {
	sent := time.Now()
	if err := hup(pid); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		r, err := ReadStatus(c.fs)
		return err == nil && r.Updated.After(sent) && ok(r), nil
	})
	return pollError(ctx, err, "the kubeboot daemon did not %s within %s; see %s", what, timeout, c.fs.Path(node.DaemonLogFile))
}

func hup(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		return fmt.Errorf("signalling the kubeboot daemon (pid %d): %w", pid, err)
	}
	return nil
}
