package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/pkg/clusterfile"
	"github.com/kubeboot/kubeboot/pkg/remote"
	"github.com/kubeboot/kubeboot/pkg/remote/remotetest"
)

// fakeHosts are hosts of a cluster file that are in-process SSH servers
// on this machine, each with a root of its own.
type fakeHosts struct {
	t               *testing.T
	keyFile, known  string
	servers         []*remotetest.Server
	bastion         *remotetest.Server
	hosts           []clusterfile.Host
	calls, fakeExec string
}

// newFakeHosts makes n hosts, the first a control plane, the others
// workers, reached through a bastion when bastion is set. Their kubeboot
// is fakeExec: a script that writes each call to f.calls, passes every
// preflight, and runs what the test gives for the other steps.
func newFakeHosts(t *testing.T, n int, bastion bool, steps string) *fakeHosts {
	t.Helper()
	keyFile, pub := remotetest.ClientKey(t)
	f := &fakeHosts{t: t, keyFile: keyFile, calls: filepath.Join(t.TempDir(), "calls")}
	for range n {
		f.servers = append(f.servers, remotetest.NewServer(t, pub))
	}
	all := f.servers
	if bastion {
		f.bastion = remotetest.NewServer(t, pub)
		all = append(all, f.bastion)
	}
	f.known = remotetest.KnownHosts(t, all...)
	for i, s := range f.servers {
		addr, port, _ := net.SplitHostPort(s.Addr)
		p, _ := strconv.Atoi(port)
		h := clusterfile.Host{Address: addr, Role: clusterfile.RoleWorker, NodeName: fmt.Sprintf("w%d", i), Root: t.TempDir(),
			SSH: clusterfile.SSH{User: "root", Port: p, KeyPath: keyFile, KnownHosts: f.known}}
		if i == 0 {
			h.Role, h.NodeName = clusterfile.RoleControlPlane, "cp1"
		}
		if bastion {
			baddr, bport, _ := net.SplitHostPort(f.bastion.Addr)
			bp, _ := strconv.Atoi(bport)
			h.SSH.Bastion = &clusterfile.Bastion{Address: baddr, Port: bp, User: "root", KeyPath: keyFile}
		}
		f.hosts = append(f.hosts, h)
	}
	f.fakeExec = filepath.Join(t.TempDir(), "kubeboot")
	script := `#!/bin/sh
root=/
if [ "$1" = --root ]; then root=$2; shift 2; fi
echo "$root: $*" >> ` + remote.Quote(f.calls) + `
cat > /dev/null
case "$*" in
"init phase preflight"*|"join --node-checks-only"*) exit 0 ;;
"reset --force") rm -rf "$root/etc/kubernetes" "$root/var/lib/kubeboot"; exit 0 ;;
esac
` + steps + `
echo "no such step in this test: $*" >&2
exit 2
`
	if err := os.WriteFile(f.fakeExec, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// apply runs Apply on the hosts.
func (f *fakeHosts) apply(ctx context.Context, dryRun bool) (string, error) {
	var out strings.Builder
	_, err := Apply(ctx, ApplyOptions{Cluster: &clusterfile.Cluster{Source: "cluster.yaml", Hosts: f.hosts}, Binary: f.fakeExec, DryRun: dryRun,
		AdminKubeconfig: filepath.Join(f.t.TempDir(), "admin.conf"), Timeout: 10 * time.Second, Out: &out})
	return out.String(), err
}

// TestConnectThroughOneBastion: apply reaches twelve hosts behind one
// bastion through one SSH connection to it (sshd's default MaxStartups
// drops connections past ~10 at once).
func TestConnectThroughOneBastion(t *testing.T) {
	f := newFakeHosts(t, 12, true, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := f.apply(ctx, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(out, "] connected to "); n != 12 {
		t.Errorf("%d hosts connected, want 12:\n%s", n, out)
	}
	if n := f.bastion.Connections(); n != 1 {
		t.Errorf("the bastion had %d connections, want 1", n)
	}
}
