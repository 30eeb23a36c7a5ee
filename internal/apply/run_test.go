package apply

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

	"github.com/kubeboot/kubeboot/internal/base/version"
	"github.com/kubeboot/kubeboot/internal/host/remote"
	"github.com/kubeboot/kubeboot/internal/host/remote/remotetest"
	"github.com/kubeboot/kubeboot/pkg/clusterfile"
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
	// res is the last apply's result.
	res *Result
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
	var err error
	f.res, err = Run(ctx, Options{Cluster: &clusterfile.Cluster{Source: "cluster.yaml", Hosts: f.hosts}, Binary: f.fakeExec, DryRun: dryRun,
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
	// The dry run returns its plan: init on the control plane, the others
	// join, nothing reset.
	if f.res == nil || f.res.Plan == nil || len(f.res.Plan.Hosts) != 12 {
		t.Fatalf("the dry run's result: %+v", f.res)
	}
	for i, st := range f.res.Plan.Hosts {
		want := JoinWorker
		if f.hosts[i].Role == clusterfile.RoleControlPlane {
			want = Init
		}
		if st.Action != want || st.Node != f.hosts[i].NodeName || st.Reset != "" || st.Host != target(&f.hosts[i]).String() || st.Root != f.hosts[i].Root {
			t.Errorf("step %d: %+v, want %s of %s", i, st, want, f.hosts[i].NodeName)
		}
	}
}

// TestRecordOnTheHost: apply records on the host the step it starts, with
// kubeboot's version, and its completion; connect reads it back, and a
// step that started and did not complete counts as state to reset.
func TestRecordOnTheHost(t *testing.T) {
	f := newFakeHosts(t, 1, false, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() *applyHost {
		t.Helper()
		a, err := newApplyRun(Options{Cluster: &clusterfile.Cluster{Hosts: f.hosts}, Binary: f.fakeExec})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.close)
		if err := a.connect(ctx); err != nil {
			t.Fatal(err)
		}
		return a.hosts[0]
	}
	h := connect()
	if h.record != nil || h.state {
		t.Fatalf("a new host: record %+v, state %v", h.record, h.state)
	}
	if err := h.startStep(ctx, "join"); err != nil {
		t.Fatal(err)
	}
	h = connect()
	if r := h.record; r == nil || r.Step != "join" || r.Kubeboot != version.Kubeboot || r.Started.IsZero() || !r.unfinished() || !h.state {
		t.Errorf("a step started: %+v, state %v", r, h.state)
	}
	if err := h.completeStep(ctx); err != nil {
		t.Fatal(err)
	}
	h = connect()
	if r := h.record; r == nil || r.Step != "join" || r.unfinished() || h.state {
		t.Errorf("a step completed: %+v, state %v", r, h.state)
	}
	b, err := os.ReadFile(filepath.Join(f.hosts[0].Root, "var/lib/kubeboot/apply.json"))
	if err != nil || !strings.Contains(string(b), `"completed"`) {
		t.Errorf("the record: %s, %v", b, err)
	}
}

// TestInitThatDidNotFinishIsRedone: an init that fails after it wrote the
// admin kubeconfig (its API server never served) does not lock apply out:
// the next apply plans a reset and init again, and does them.
func TestInitThatDidNotFinishIsRedone(t *testing.T) {
	f := newFakeHosts(t, 1, false, `case "$*" in init*)
	mkdir -p "$root/etc/kubernetes/kubeboot"
	echo "apiVersion: v1" > "$root/etc/kubernetes/admin.conf"
	echo "the API server did not start" >&2
	exit 1 ;;
esac`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := f.apply(ctx, false); err == nil || !strings.Contains(err.Error(), "the API server did not start") {
		t.Fatalf("the first apply: %v\n%s", err, out)
	}
	out, err := f.apply(ctx, true)
	if err != nil || !strings.Contains(out, "[cp1] plan: its init did not finish ("+filepath.Join(f.hosts[0].Root, "var/lib/kubeboot/apply.json")+" records no completion): reset, then init") {
		t.Fatalf("the plan after a failed init: %v\n%s", err, out)
	}
	os.Remove(f.calls)
	if out, err := f.apply(ctx, false); err == nil || !strings.Contains(err.Error(), "the API server did not start") {
		t.Fatalf("apply again: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(f.calls)
	var steps []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		_, call, _ := strings.Cut(l, ": ")
		steps = append(steps, strings.Join(strings.Fields(call)[:min(2, len(strings.Fields(call)))], " "))
	}
	if got := strings.Join(steps, ", "); got != "reset --force, init phase, init --config" {
		t.Errorf("apply again ran %s; want the reset, then init's preflight and init", got)
	}
}

// TestInterruptedApplySaysWhichHostsMayHaveChanged: apply cancelled while
// init runs on the first control plane says that host may have changed
// (its step had started and not finished), and no other.
func TestInterruptedApplySaysWhichHostsMayHaveChanged(t *testing.T) {
	started := filepath.Join(t.TempDir(), "started")
	f := newFakeHosts(t, 2, false, `case "$*" in init*)
	touch `+remote.Quote(started)+`
	sleep 30
	exit 0 ;;
esac`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(started); err == nil {
				cancel() // as Ctrl-C does
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	out, err := f.apply(ctx, false)
	if err == nil || !strings.Contains(err.Error(), "these hosts may have changed: cp1 (init)") {
		t.Errorf("the error: %v", err)
	}
	if !strings.Contains(out, "[apply] interrupted: these hosts may have changed: cp1 (init): the step had started there and had not finished") || strings.Contains(out, "w1 (") {
		t.Errorf("the output:\n%s", out)
	}
}
