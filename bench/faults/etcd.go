package main

import (
	"context"
	"fmt"
	"net"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/etcd/etcdbackup"
	"github.com/kubeboot/kubeboot/test/nethost"
)

const etcdEndpoint = "https://127.0.0.1:2379"

// member is one control plane's etcd member, reached on loopback inside
// its own host: that keeps working while the host is cut off.
type member struct {
	host *nethost.Host
	c    *clientv3.Client
}

func newMember(h *nethost.Host) (*member, error) {
	cfg, err := etcdbackup.Client(fsys.NewRoot(h.Root), "/etc/kubernetes/pki")
	if err != nil {
		return nil, err
	}
	cfg.DialTimeout = 2 * time.Second
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
		return h.DialContext(ctx, "tcp", a)
	}))
	c, err := clientv3.New(*cfg)
	if err != nil {
		return nil, err
	}
	return &member{host: h, c: c}, nil
}

// etcdState is what every member said of the cluster.
type etcdState struct {
	leader  string // the host all agree leads; empty if they do not
	term    uint64
	healthy bool
	why     string
}

// etcdNow asks every member for its status and reads through it.
func etcdNow(ctx context.Context, ms []*member, ids map[uint64]string) etcdState {
	var st etcdState
	st.healthy = true
	leaders := map[string]bool{}
	for _, m := range ms {
		c, cancel := context.WithTimeout(ctx, time.Second)
		s, err := m.c.Status(c, etcdEndpoint)
		if err == nil && len(s.Errors) > 0 {
			err = fmt.Errorf("%v", s.Errors)
		}
		if err == nil {
			_, err = m.c.Get(c, "health") // a linearizable read: ReadIndex through the leader
		}
		cancel()
		if err != nil {
			st.healthy, st.why = false, fmt.Sprintf("%s: %v", nodeName(m.host), err)
			continue
		}
		leaders[ids[s.Leader]] = true
		st.term = max(st.term, s.RaftTerm)
	}
	if len(leaders) == 1 {
		for l := range leaders {
			st.leader = l
		}
	} else if st.healthy {
		st.healthy, st.why = false, fmt.Sprintf("members disagree on the leader: %v", leaders)
	}
	if st.leader == "" && st.healthy {
		st.healthy, st.why = false, "no leader"
	}
	return st
}

// memberIDs maps member IDs to the hosts (member names are node names).
func memberIDs(ctx context.Context, ms []*member) (map[uint64]string, error) {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := ms[0].c.MemberList(c)
	if err != nil {
		return nil, err
	}
	ids := map[uint64]string{}
	for _, m := range l.Members {
		ids[m.ID] = m.Name
	}
	return ids, nil
}

// hashes is each member's HashKV at the lowest revision all have.
func hashes(ctx context.Context, ms []*member) (int64, map[string]uint32, error) {
	rev := int64(0)
	for _, m := range ms {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := m.c.Status(c, etcdEndpoint)
		cancel()
		if err != nil {
			return 0, nil, fmt.Errorf("%s: %w", nodeName(m.host), err)
		}
		if rev == 0 || s.Header.Revision < rev {
			rev = s.Header.Revision
		}
	}
	out := map[string]uint32{}
	for _, m := range ms {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		h, err := m.c.HashKV(c, etcdEndpoint, rev)
		cancel()
		if err != nil {
			return rev, nil, fmt.Errorf("%s: HashKV at %d: %w", nodeName(m.host), rev, err)
		}
		out[nodeName(m.host)] = h.Hash
	}
	return rev, out, nil
}
