// Package hacluster brings up a kubeboot cluster of network-namespace
// hosts for the benchmarks: a first control plane from `kubeboot init`,
// more control planes and workers joined with the join command init
// prints, each host reset and removed by Close.
package hacluster

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// Cluster is a cluster's hosts on one network, and what joining it takes.
type Cluster struct {
	Bin, Dir string
	// Prefix starts every host's network-namespace name.
	Prefix  string
	Network *nethost.Network
	Hosts   []*nethost.Host
	// Token, Hash and Key are the join command's; Seed is the first
	// control plane's API server (host:port).
	Token, Hash, Key string
	Seed             string
}

// New makes the cluster's network (named prefix+"net"), its hosts'
// directory under base (the temporary directory when empty), and
// becomes the subreaper of the nodes' daemons.
func New(bin, base, prefix string) (*Cluster, error) {
	if err := nethost.BecomeSubreaper(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(base, "kubeboot-bench-")
	if err != nil {
		return nil, err
	}
	network, err := nethost.NewNetwork(prefix + "net")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Cluster{Bin: bin, Dir: dir, Prefix: prefix, Network: network}, nil
}

// Host makes a host named name with address ip on the cluster's network.
func (c *Cluster) Host(name, ip string) (*nethost.Host, error) {
	return c.HostWith(name, ip, nethost.Options{})
}

// HostWith makes a host as Host does, shaped by o (its Network is the
// cluster's).
func (c *Cluster) HostWith(name, ip string, o nethost.Options) (*nethost.Host, error) {
	o.Network = c.Network
	h, err := nethost.NewWith(c.Prefix+name, ip, filepath.Join(c.Dir, name), c.Bin, o)
	if err == nil {
		c.Hosts = append(c.Hosts, h)
	}
	return h, err
}

// Close keeps each host's logs (KUBEBOOT_BENCH_LOGS), resets it and
// removes it, the last made first, then the network and the directory.
func (c *Cluster) Close() {
	for i := len(c.Hosts) - 1; i >= 0; i-- {
		h := c.Hosts[i]
		benchutil.KeepLogs(h, h.Name)
		nethost.Run(h.Kubeboot("reset", "--force")) //nolint:errcheck
		h.Close()
	}
	c.Network.Close()
	os.RemoveAll(c.Dir)
}

// Kubeboot runs kubeboot on h and returns its output; an error carries it.
func Kubeboot(h *nethost.Host, args ...string) (string, error) {
	out, err := nethost.Run(h.Kubeboot(args...))
	if err != nil {
		return out, fmt.Errorf("%s: kubeboot %s: %v\n%s", h.Name, strings.Join(args, " "), err, out)
	}
	return out, nil
}

// Init runs `kubeboot init --upload-certs` on h with extra flags, and
// keeps the join command's token, hash and certificate key; h's API
// server becomes the seed.
func (c *Cluster) Init(h *nethost.Host, name string, extra ...string) error {
	out, err := Kubeboot(h, append([]string{"init", "--node-name", name, "--upload-certs"}, extra...)...)
	if err != nil {
		return err
	}
	j, ok := nethost.ParseJoin(out)
	if !ok || j.CertificateKey == "" {
		return fmt.Errorf("no control-plane join command in init's output:\n%s", out)
	}
	c.Token, c.Hash, c.Key = j.Token, j.Hash, j.CertificateKey
	c.Seed = h.IP + ":6443"
	return nil
}

// ControlPlanes makes n control planes named cp1…cpN on the /24 whose
// first three numbers are net: cp1 at .2 from init with extra flags, the
// others at .10, .11, … joined to it; it prints how long each took.
func (c *Cluster) ControlPlanes(n int, net string, extra ...string) ([]*nethost.Host, error) {
	cp1, err := c.Host("cp1", net+".2")
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := c.Init(cp1, "cp1", extra...); err != nil {
		return nil, err
	}
	fmt.Printf("init cp1: %s\n", time.Since(start).Round(time.Millisecond))
	cps := []*nethost.Host{cp1}
	for i := 2; i <= n; i++ {
		name := fmt.Sprintf("cp%d", i)
		h, err := c.Host(name, fmt.Sprintf("%s.%d", net, 8+i))
		if err != nil {
			return nil, err
		}
		d, _, err := c.JoinControlPlane(h, name)
		if err != nil {
			return nil, err
		}
		fmt.Printf("join --control-plane %s: API server ready after %s\n", name, d.Round(time.Millisecond))
		cps = append(cps, h)
	}
	return cps, nil
}

// Join joins h as a worker named name.
func (c *Cluster) Join(h *nethost.Host, name string) (string, error) {
	return Kubeboot(h, "join", c.Seed, "--token", c.Token, "--discovery-token-ca-cert-hash", c.Hash, "--node-name", name)
}

// JoinControlPlane joins h as a control plane named name and returns the
// time from the join's start to its API server's /readyz, and the join's
// output.
func (c *Cluster) JoinControlPlane(h *nethost.Host, name string) (time.Duration, string, error) {
	start := time.Now()
	var ready time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for time.Since(start) < 3*time.Minute && ready == 0 {
			if APIReady(h) {
				ready = time.Since(start)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	out, err := Kubeboot(h, "join", c.Seed, "--token", c.Token, "--discovery-token-ca-cert-hash", c.Hash, "--control-plane", "--certificate-key", c.Key, "--node-name", name)
	<-done
	return ready, out, err
}

// APIReady tells whether h's API server answers /readyz with 200.
func APIReady(h *nethost.Host) bool {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: h.DialContext, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}} //nolint:gosec // readiness only
	resp, err := c.Get("https://" + h.IP + ":6443/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}
