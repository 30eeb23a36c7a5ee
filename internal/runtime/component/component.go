// Package component owns the table of components a node runs and their
// lifecycle as data. A component is rendered once from the configuration
// into a Spec (its flags, dependencies, readiness probe); the same Spec is
// what `init` writes for the node daemon to run, what `reset` cleans up
// after, and what a developer prints to run the component by hand.
package component

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/poll"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/host/preflight"
)

// Spec is one component rendered for one node: everything needed to run
// it, as data.
type Spec struct {
	// Name is the component's name; the node daemon runs the kubeboot
	// binary with it as argv[0].
	Name string `json:"name"`
	// Role is the component's role in the table (the daemon's CPU group,
	// status); written with the spec.
	Role Role `json:"role,omitempty"`
	// Exec, when set, is the executable to run instead of the kubeboot
	// binary (a program kubeboot does not carry).
	Exec string `json:"exec,omitempty"`
	// Args are the flags, in order. Paths in them are host paths.
	Args []string `json:"args"`
	// After lists components that must be ready before this one starts;
	// one that does not run on this node does not hold it back (a
	// worker's kube-proxy is After the API server it does not run).
	After []string `json:"after,omitempty"`
	// Requires lists components that must run on this node and be ready
	// before this one starts; it waits for them to be handed to the daemon
	// too (a joining control plane's API server for its etcd member, which
	// starts only once it has joined).
	Requires []string `json:"requires,omitempty"`
	// Prestart starts the process before what it is After is ready and
	// holds it, once the runtime and package initialisation are done, until
	// the supervisor lets it go on (supervisor.WaitGate, which the
	// kubeboot binary calls before a component's own code): its start
	// overlaps its dependencies' instead of following it. Only for
	// components the kubeboot binary runs.
	Prestart bool `json:"prestart,omitempty"`
	// Uses lists components this one talks to but does not wait for at
	// its start (the API server retries etcd): Order puts them first all
	// the same, so that the daemon, which stops components in reverse
	// order, stops this one before them.
	Uses []string `json:"uses,omitempty"`
	// Probe tells when the component is ready. Renderers derive it from
	// the final flags (extraArgs included), as kubeadm's wait-control-plane
	// reads its manifests' --secure-port and --bind-address.
	Probe Probe `json:"probe"`
	// Ports are the TCP ports the component listens on per its final
	// flags; preflight checks that they are free.
	Ports []int `json:"ports,omitempty"`
	// Dirs are created (host paths, with their modes) before the start.
	Dirs []Dir `json:"dirs,omitempty"`
	// RestartOn are host paths the component reads only when it starts:
	// kubeconfigs that embed their client certificate, which client-go
	// never reads again. When one changes (a certificate renewal) the node
	// daemon restarts the component. Files a component reloads by itself
	// are not listed: the API server's serving, client-CA and proxy
	// certificates (dynamic certificates), certificate files named in a
	// kubeconfig or a flag (client-go reloads them), and etcd's (read at
	// every handshake).
	RestartOn []string `json:"restartOn,omitempty"`
	// Own is the typed configuration of one of kubeboot's own components
	// (InDaemon); nil for the upstream ones, whose flags are Args.
	Own *Own `json:"own,omitempty"`
}

// Dir is a directory a component needs.
type Dir struct {
	Path string      `json:"path"`
	Mode os.FileMode `json:"mode"`
}

// Probe is a readiness check: a unix socket or a TCP address accepting a
// connection, and (or) an HTTP(S) GET answering 200. Every check set must
// pass.
type Probe struct {
	URL    string `json:"url,omitempty"`
	Socket string `json:"socket,omitempty"`
	TCP    string `json:"tcp,omitempty"`
	// CAFile verifies the server; without it an https probe accepts any
	// certificate (controller-manager and scheduler serve self-signed ones,
	// and kubeadm's probes skip verification for them too).
	CAFile string `json:"caFile,omitempty"`
}

// String names what the probe checks.
func (p Probe) String() string {
	var parts []string
	if p.Socket != "" {
		parts = append(parts, "unix://"+p.Socket)
	}
	if p.TCP != "" {
		parts = append(parts, "tcp://"+p.TCP)
	}
	if p.URL != "" {
		parts = append(parts, p.URL)
	}
	return strings.Join(parts, " and ")
}

// Empty reports whether the probe checks nothing (ready once started).
func (p Probe) Empty() bool { return p.URL == "" && p.Socket == "" && p.TCP == "" }

// Check performs the probe once.
func (p Probe) Check(ctx context.Context) error {
	for network, addr := range map[string]string{"unix": p.Socket, "tcp": p.TCP} {
		if addr == "" {
			continue
		}
		c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
		if err != nil {
			return err
		}
		c.Close()
	}
	if p.URL == "" {
		return nil
	}
	client, err := p.client()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", p.URL, resp.StatusCode)
	}
	return nil
}

func (p Probe) client() (*http.Client, error) {
	tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // self-signed serving certs, see CAFile
	if p.CAFile != "" {
		pem, err := os.ReadFile(p.CAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no certificate", p.CAFile)
		}
		tlsConfig = &tls.Config{RootCAs: pool}
	}
	return &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true},
	}, nil
}

// WaitReady polls the probe until it passes, ctx ends, or timeout passes.
// progress, when set, is called about every 5 s with the time waited and
// the probe's last error (see poll.Progress).
func (p Probe) WaitReady(ctx context.Context, timeout time.Duration, progress func(time.Duration, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := poll.Until(ctx, 50*time.Millisecond, 5*time.Second, progress, p.Check)
	var exp *poll.Expired
	if errors.As(err, &exp) {
		return fmt.Errorf("not ready after %s: %v", exp.Waited.Round(100*time.Millisecond), exp.Last)
	}
	return err
}

// Args is an ordered flag list that later values override, so that
// extraArgs from the configuration replace kubeboot's defaults in place.
type Args struct {
	names  []string
	values map[string]string
}

// Set adds or replaces --name=value.
func (a *Args) Set(name, value string) {
	if a.values == nil {
		a.values = map[string]string{}
	}
	if _, ok := a.values[name]; !ok {
		a.names = append(a.names, name)
	}
	a.values[name] = value
}

// Get returns the value of --name.
func (a *Args) Get(name string) (string, bool) {
	v, ok := a.values[name]
	return v, ok
}

// port is --name as a port number, or def when unset or malformed (the
// component itself refuses a malformed one, with its own message).
func (a *Args) port(name string, def int) int {
	if v, ok := a.Get(name); ok {
		if p, err := strconv.Atoi(v); err == nil && p > 0 && p < 65536 {
			return p
		}
	}
	return def
}

// probeHost is where this node reaches a server bound to bind: loopback
// when bind is empty or unspecified (0.0.0.0, ::), else bind itself.
func probeHost(bind string) string {
	ip := net.ParseIP(bind)
	switch {
	case bind == "":
		return "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() == nil:
		return "::1"
	case ip != nil && ip.IsUnspecified():
		return "127.0.0.1"
	}
	return bind
}

// urlHostPort reads the first URL of a comma-separated flag value (etcd's
// listen-*-urls), preferring a loopback one, as host:port to dial from
// this node, with its scheme.
func urlHostPort(list string) (scheme, hostport string, port int, ok bool) {
	var first *url.URL
	for _, raw := range strings.Split(list, ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Port() == "" {
			continue
		}
		if first == nil {
			first = u
		}
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
			first = u
			break
		}
	}
	if first == nil {
		return "", "", 0, false
	}
	p, err := strconv.Atoi(first.Port())
	if err != nil {
		return "", "", 0, false
	}
	return first.Scheme, net.JoinHostPort(probeHost(first.Hostname()), first.Port()), p, true
}

// urlPorts are the ports of every URL of a comma-separated flag value.
func urlPorts(list string) []int {
	var ports []int
	for _, raw := range strings.Split(list, ",") {
		if u, err := url.Parse(strings.TrimSpace(raw)); err == nil {
			if p, err := strconv.Atoi(u.Port()); err == nil && !slices.Contains(ports, p) {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

// List renders the flags sorted by name, as kubeadm renders its manifests,
// so that a rendered spec is stable and easy to diff.
func (a *Args) List() []string {
	names := append([]string(nil), a.names...)
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "--" + n + "=" + a.values[n]
	}
	return out
}

// Store keeps rendered specs as JSON files in one directory, the way the
// kubelet keeps static pod manifests: the node daemon runs what is there.
type Store struct {
	FS fsys.FS
}

// SpecPath is the node path of one component's spec.
func SpecPath(name string) string { return path.Join(node.SpecDir, name+".json") }

// Write saves a spec, with its role from the table.
func (s Store) Write(spec Spec) error {
	if spec.Role == "" {
		spec.Role = RoleOf(spec.Name)
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	if err := s.FS.MkdirAll(node.SpecDir, 0o700); err != nil {
		return err
	}
	return s.FS.WriteFile(SpecPath(spec.Name), append(b, '\n'), 0o600)
}

// Load reads every spec, sorted so that each comes after its dependencies.
func (s Store) Load() ([]Spec, error) {
	entries, err := os.ReadDir(s.FS.Path(node.SpecDir))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var specs []Spec
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || e.Name() == RetiredNetAgent+".json" {
			continue
		}
		b, err := s.FS.ReadFile(path.Join(node.SpecDir, e.Name()))
		if err != nil {
			return nil, err
		}
		spec, err := s.decode(path.Join(node.SpecDir, e.Name()), b)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	return Order(specs)
}

// FlagValue is the value of flag name ("--name") in args, given as
// "--name=value" or "--name value"; "" when absent.
func FlagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// Get reads the spec of one component; ok is false when the node has none.
func (s Store) Get(name string) (spec Spec, ok bool, err error) {
	b, err := s.FS.ReadFile(SpecPath(name))
	if os.IsNotExist(err) {
		return Spec{}, false, nil
	}
	if err != nil {
		return Spec{}, false, err
	}
	spec, err = s.decode(SpecPath(name), b)
	return spec, err == nil, err
}

// decode reads a spec file. The spec of one of kubeboot's own components
// written before specs carried its typed configuration gets it from its
// flags.
func (s Store) decode(file string, b []byte) (Spec, error) {
	var spec Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return Spec{}, fmt.Errorf("%s: %w", s.FS.Path(file), err)
	}
	if spec.Own == nil {
		own, err := legacyOwn(spec.Name, spec.Args)
		if err != nil {
			return Spec{}, fmt.Errorf("%s: %w", s.FS.Path(file), err)
		}
		spec.Own = own
	}
	return spec, nil
}

// Order sorts specs so that every spec comes after the ones it names in
// After, Requires and Uses. A dependency missing from the list is ignored (it may run
// elsewhere); a cycle is an error.
func Order(specs []Spec) ([]Spec, error) {
	byName := map[string]Spec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	names := make([]string, 0, len(specs))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Spec
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(n string, chain []string) error
	visit = func(n string, chain []string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("components depend on each other in a cycle: %s", strings.Join(append(chain, n), " -> "))
		case 2:
			return nil
		}
		s, ok := byName[n]
		if !ok {
			return nil
		}
		state[n] = 1
		for _, d := range slices.Concat(s.After, s.Requires, s.Uses) {
			if err := visit(d, append(chain, n)); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, s)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PortChecks are preflight's checks that the specs' ports are free, each
// port once, in the specs' order.
func PortChecks(specs []Spec) []preflight.Check {
	var checks []preflight.Check
	var seen []int
	for _, s := range specs {
		for _, p := range s.Ports {
			if !slices.Contains(seen, p) {
				seen = append(seen, p)
				checks = append(checks, preflight.Port(p))
			}
		}
	}
	return checks
}
