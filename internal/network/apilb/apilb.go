// Package apilb is the node-local API server load balancer: a TCP proxy on
// loopback that knows every API server of the cluster, so that a node's
// kubelet and kube-proxy keep working when one control plane is lost,
// without a load balancer or VIP outside the cluster (as k3s agents do).
//
// It starts from the endpoint the node joined through (the seed), learns
// the API servers from the default/kubernetes EndpointSlice (which every API
// server keeps its advertise address in) through itself, health-checks each
// one with GET /readyz verified against the cluster CA, and sends each new
// connection to a healthy server. When a server turns unhealthy, the
// connections to it are closed, so that clients reconnect through the
// balancer to another one. The seed stays a candidate: it is the address
// the operator gave, and the one that works where advertise addresses are
// not reachable from the node.
package apilb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/inetaf/tcpproxy"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

// Options configure a balancer.
type Options struct {
	// Listen is the address to listen on (127.0.0.1:6444).
	Listen string
	// Seed is host:port of the API server the node joined through.
	Seed string
	// CAData verifies the servers' certificates in health checks.
	CAData []byte
	// CAFile, when set, is where CAData was read from: it is read again
	// when it changes (a rotation of the cluster CA).
	CAFile string
	// FS holds the state file, at StateFile (a node path, under the
	// node's root); nil, or no StateFile, keeps no state.
	FS        fsys.FS
	StateFile string
	// Interval between health checks (default 1 s).
	Interval time.Duration
	Logf     func(format string, args ...any)
}

// Balancer is a running balancer.
type Balancer struct {
	o     Options
	proxy *tcpproxy.Proxy
	ln    net.Listener

	caMu   sync.Mutex
	health *http.Client
	caSeen fileVersion // of CAFile, when health was made

	mu      sync.Mutex
	servers map[string]*server // host:port -> server
	learned []string           // from the EndpointSlice, sorted
	next    int
}

type server struct {
	addr    string
	healthy bool
	checked bool

	mu    sync.Mutex
	conns map[*conn]struct{}
}

// conn is a proxied connection to a server, tracked so that it can be
// closed when the server turns unhealthy.
type conn struct {
	net.Conn
	s *server
}

func (c *conn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

func (s *server) closeAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.conns)
	for c := range s.conns {
		go c.Conn.Close()
	}
	return n
}

// New listens and starts proxying; Run then keeps the server list current.
func New(o Options) (*Balancer, error) {
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if _, _, err := net.SplitHostPort(o.Seed); err != nil {
		return nil, fmt.Errorf("seed %q: %w", o.Seed, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(o.CAData) {
		return nil, errors.New("no CA certificate to verify the API servers with")
	}
	b := &Balancer{o: o, servers: map[string]*server{}, health: healthClient(pool)}
	if o.CAFile != "" {
		b.caSeen, _ = versionOf(o.CAFile)
	}
	// What it learned before is read before the first set, which writes
	// the state file.
	b.set(b.readState())
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("the API server load balancer cannot listen on %s: %w", o.Listen, err)
	}
	b.ln = ln
	b.proxy = &tcpproxy.Proxy{ListenFunc: func(string, string) (net.Listener, error) { return ln, nil }}
	b.proxy.AddRoute(o.Listen, &tcpproxy.DialProxy{
		DialContext: b.dial,
		DialTimeout: 5 * time.Second,
		OnDialError: func(src net.Conn, err error) {
			o.Logf("no API server reachable for a connection from %s: %v", src.RemoteAddr(), err)
			src.Close()
		},
	})
	if err := b.proxy.Start(); err != nil {
		ln.Close()
		return nil, err
	}
	return b, nil
}

// Addr is the address the balancer listens on.
func (b *Balancer) Addr() string { return b.ln.Addr().String() }

// Close stops the balancer and closes every proxied connection.
func (b *Balancer) Close() error {
	err := b.proxy.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.servers {
		s.closeAll()
	}
	return err
}

// Servers lists the servers and whether each passed its last check.
func (b *Balancer) Servers() map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]bool{}
	for a, s := range b.servers {
		out[a] = s.healthy
	}
	return out
}

// set replaces the learned servers; the seed is never removed. The first
// set builds the server list even when it learns nothing new.
func (b *Balancer) set(learned []string) {
	learned = slices.Sorted(slices.Values(learned))
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.servers) > 0 && slices.Equal(learned, b.learned) {
		return
	}
	b.learned = learned
	want := map[string]bool{b.o.Seed: true}
	for _, a := range b.learned {
		want[a] = true
	}
	for a := range want {
		if _, ok := b.servers[a]; !ok {
			// A new server is tried before its first check: it was just
			// announced by a running API server, or it is the seed.
			b.servers[a] = &server{addr: a, healthy: true, conns: map[*conn]struct{}{}}
			b.o.Logf("API server %s added", a)
		}
	}
	for a, s := range b.servers {
		if !want[a] {
			delete(b.servers, a)
			if n := s.closeAll(); n > 0 {
				b.o.Logf("API server %s removed: closed its %d connections", a, n)
			} else {
				b.o.Logf("API server %s removed", a)
			}
		}
	}
	b.writeStateLocked()
}

// candidates orders the servers for a new connection: healthy ones first,
// rotating, then the others (all may be wrong at once: a server that just
// failed a check may be back).
func (b *Balancer) candidates() []*server {
	b.mu.Lock()
	defer b.mu.Unlock()
	var healthy, other []*server
	for _, s := range b.servers {
		if s.healthy {
			healthy = append(healthy, s)
		} else {
			other = append(other, s)
		}
	}
	sortServers := func(ss []*server) {
		sort.Slice(ss, func(i, j int) bool { return ss[i].addr < ss[j].addr })
	}
	sortServers(healthy)
	sortServers(other)
	if n := len(healthy); n > 0 {
		b.next = (b.next + 1) % n
		healthy = append(healthy[b.next:], healthy[:b.next]...)
	}
	return append(healthy, other...)
}

func (b *Balancer) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var errs []error
	for _, s := range b.candidates() {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, network, s.addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		wc := &conn{Conn: c, s: s}
		s.mu.Lock()
		s.conns[wc] = struct{}{}
		s.mu.Unlock()
		return wc, nil
	}
	return nil, errors.Join(errs...)
}

// Run health-checks the servers until ctx ends.
func (b *Balancer) Run(ctx context.Context) error {
	t := time.NewTicker(b.o.Interval)
	defer t.Stop()
	for {
		b.checkAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (b *Balancer) checkAll(ctx context.Context) {
	b.mu.Lock()
	var all []*server
	for _, s := range b.servers {
		all = append(all, s)
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	results := make([]bool, len(all))
	for i, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = b.check(ctx, s.addr)
		}()
	}
	wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, s := range all {
		was, now := s.healthy, results[i]
		s.healthy = now
		if !s.checked || was != now {
			state := "healthy"
			if !now {
				state = "unhealthy"
			}
			b.o.Logf("API server %s is %s", s.addr, state)
		}
		s.checked = true
		if was && !now {
			if n := s.closeAll(); n > 0 {
				b.o.Logf("closed %d connections to %s: their clients reconnect to another API server", n, s.addr)
			}
		}
	}
}

// check is one health check: the server's /readyz, anonymously, over TLS
// verified with the cluster CA.
func (b *Balancer) check(ctx context.Context, addr string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := b.healthClient().Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func healthClient(pool *x509.CertPool) *http.Client {
	return &http.Client{Timeout: 800 * time.Millisecond, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true,
		DialContext: (&net.Dialer{Timeout: 500 * time.Millisecond}).DialContext,
	}}
}

// fileVersion tells one content of a file from the next (writes go
// through a rename).
type fileVersion struct {
	mod  time.Time
	size int64
}

func versionOf(file string) (fileVersion, error) {
	st, err := os.Stat(file)
	if err != nil {
		return fileVersion{}, err
	}
	return fileVersion{st.ModTime(), st.Size()}, nil
}

// healthClient is the health checks' client, made again with the CAs of
// CAFile when it changed; an unreadable file keeps the CAs in use.
func (b *Balancer) healthClient() *http.Client {
	b.caMu.Lock()
	defer b.caMu.Unlock()
	if b.o.CAFile == "" {
		return b.health
	}
	v, err := versionOf(b.o.CAFile)
	if err != nil || v == b.caSeen {
		return b.health
	}
	data, err := os.ReadFile(b.o.CAFile)
	pool := x509.NewCertPool()
	if err != nil || !pool.AppendCertsFromPEM(data) {
		return b.health
	}
	b.caSeen, b.health = v, healthClient(pool)
	b.o.Logf("verifying the API servers with the CAs of %s, which changed", b.o.CAFile)
	return b.health
}

// Follow keeps the server list current from the default/kubernetes
// EndpointSlices (the address and port of every API server) until ctx
// ends. The client should reach the API through the balancer itself.
func (b *Balancer) Follow(ctx context.Context, client kubernetes.Interface) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(metav1.NamespaceDefault),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = discoveryv1.LabelServiceName + "=kubernetes" }))
	inf := f.Discovery().V1().EndpointSlices().Informer()
	update := func(any) {
		var addrs []string
		for _, obj := range inf.GetStore().List() {
			es, ok := obj.(*discoveryv1.EndpointSlice)
			if !ok {
				continue
			}
			addrs = append(addrs, sliceAddresses(es)...)
		}
		if len(addrs) > 0 {
			b.set(addrs)
		}
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: update, UpdateFunc: func(_, n any) { update(n) }, DeleteFunc: update}) //nolint:errcheck
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
}

// sliceAddresses lists host:port of a kubernetes EndpointSlice's ready
// endpoints.
func sliceAddresses(es *discoveryv1.EndpointSlice) []string {
	port := 0
	for _, p := range es.Ports {
		if p.Port != nil && (p.Name == nil || *p.Name == "https") {
			port = int(*p.Port)
		}
	}
	if port == 0 {
		return nil
	}
	var out []string
	for _, e := range es.Endpoints {
		if e.Conditions.Ready != nil && !*e.Conditions.Ready {
			continue
		}
		for _, a := range e.Addresses {
			out = append(out, net.JoinHostPort(a, strconv.Itoa(port)))
		}
	}
	return out
}

type state struct {
	Seed    string   `json:"seed"`
	Servers []string `json:"servers"`
}

func (b *Balancer) readState() []string {
	if b.o.FS == nil || b.o.StateFile == "" {
		return nil
	}
	data, err := b.o.FS.ReadFile(b.o.StateFile)
	if err != nil {
		return nil
	}
	var s state
	if json.Unmarshal(data, &s) != nil {
		return nil
	}
	return s.Servers
}

func (b *Balancer) writeStateLocked() {
	if b.o.FS == nil || b.o.StateFile == "" {
		return
	}
	s := state{Seed: b.o.Seed, Servers: b.learned}
	data, _ := json.MarshalIndent(s, "", "  ")
	if err := b.o.FS.WriteFile(b.o.StateFile, append(data, '\n'), 0o644); err != nil {
		b.o.Logf("writing %s: %v", b.o.FS.Path(b.o.StateFile), err)
	}
}
