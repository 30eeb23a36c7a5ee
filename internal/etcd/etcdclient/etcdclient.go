// Package etcdclient is a control plane's client of the cluster's etcd:
// the API server's etcd client certificate in the node's certificates
// dir, the local member's address and the others' — what snapshots, the
// etcd commands, a control plane's join and its reset share.
package etcdclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	etcdutil "k8s.io/kubernetes/cmd/kubeadm/app/util/etcd"
)

// Local is the local member's client URL.
var Local = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(kubeadmconstants.EtcdListenClientPort))

// files are the CA and the client certificate and key, host paths in
// certDir (the node's certificates dir under its root).
func files(certDir string) (ca, cert, key string) {
	return filepath.Join(certDir, "etcd/ca.crt"), filepath.Join(certDir, "apiserver-etcd-client.crt"), filepath.Join(certDir, "apiserver-etcd-client.key")
}

// TLS is the client configuration of the API server's etcd client
// certificate in certDir.
func TLS(certDir string) (*tls.Config, error) {
	ca, cert, key := files(certDir)
	c, err := transport.TLSInfo{CertFile: cert, KeyFile: key, TrustedCAFile: ca}.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the etcd client certificate in %s: %w", certDir, err)
	}
	return c, nil
}

// Config is a client configuration of endpoints, with certDir's
// certificate and etcd's own log silenced.
func Config(certDir string, dial time.Duration, endpoints ...string) (*clientv3.Config, error) {
	t, err := TLS(certDir)
	if err != nil {
		return nil, err
	}
	return &clientv3.Config{Endpoints: endpoints, DialTimeout: dial, TLS: t, Logger: zap.NewNop()}, nil
}

// Members is kubeadm's client of the cluster's membership (add a
// learner, promote, remove, list) through endpoints.
func Members(certDir string, endpoints ...string) (*etcdutil.Client, error) {
	ca, cert, key := files(certDir)
	return etcdutil.New(endpoints, ca, cert, key)
}

// List lists the members through ec, giving up after 20 s (kubeadm's
// client retries for minutes when no member answers).
func List(ctx context.Context, ec *etcdutil.Client) ([]etcdutil.Member, error) {
	type result struct {
		m   []etcdutil.Member
		err error
	}
	ch := make(chan result, 1)
	go func() {
		m, err := ec.ListMembers()
		ch <- result{m, err}
	}()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-time.After(20 * time.Second):
		return nil, fmt.Errorf("no answer within 20s")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// OthersClientURLs are the client URLs of the members other than the one
// whose peer URL is peer: each member serves clients on its peer
// address, at kubeadm's client port.
func OthersClientURLs(members []etcdutil.Member, peer string) []string {
	var out []string
	for _, m := range members {
		if m.PeerURL == peer {
			continue
		}
		u, err := url.Parse(m.PeerURL)
		if err != nil || u.Hostname() == "" {
			continue
		}
		out = append(out, "https://"+net.JoinHostPort(u.Hostname(), strconv.Itoa(kubeadmconstants.EtcdListenClientPort)))
	}
	return out
}
