package remote_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/kubeboot/kubeboot/internal/host/remote"
	"github.com/kubeboot/kubeboot/internal/host/remote/remotetest"
)

// Commands run with their exit status, standard input and both output
// streams (one writer for both takes one Write at a time: the session
// copies each stream in its own goroutine); Upload copies once, then
// skips a file with the same sha256; a host is reached through a
// bastion, each checked against known_hosts.
func TestRunUploadBastion(t *testing.T) {
	keyFile, pub := remotetest.ClientKey(t)
	hostSrv, bastionSrv := remotetest.NewServer(t, pub), remotetest.NewServer(t, pub)
	known := remotetest.KnownHosts(t, hostSrv, bastionSrv)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	h, err := remote.Dial(ctx, hostSrv.Target(keyFile, known))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// Both streams into one buffer, many writes each: the test fails
	// under -race (and loses or garbles lines without it) if they race.
	var out bytes.Buffer
	err = h.Run(ctx, `for i in $(seq 1 200); do echo "out $i"; echo "err $i" >&2; done; cat; exit 3`, strings.NewReader("from stdin\n"), &out, &out)
	var exit *ssh.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
		t.Errorf("exit status: %v", err)
	}
	got := out.String()
	for _, want := range []string{"out 1\n", "out 200\n", "err 1\n", "err 200\n", "from stdin\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(got, "\n"); n != 401 || strings.ContainsRune(got, 0) {
		t.Errorf("output: %d lines (want 401), NUL bytes: %v", n, strings.ContainsRune(got, 0))
	}

	// Upload: copied, then skipped; the content and mode are the file's.
	local := filepath.Join(t.TempDir(), "kubeboot")
	if err := os.WriteFile(local, bytes.Repeat([]byte("kubeboot\n"), 100000), 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "usr/local/bin/kubeboot")
	lf, err := remote.HashFile(local)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		copied, err := h.Upload(ctx, lf, dest, 0o755)
		if err != nil || copied != want {
			t.Fatalf("upload %d: copied %v (want %v), %v", i+1, copied, want, err)
		}
	}
	a, _ := os.ReadFile(local)
	b, _ := os.ReadFile(dest)
	st, err := os.Stat(dest)
	if err != nil || !bytes.Equal(a, b) || st.Mode().Perm() != 0o755 {
		t.Errorf("uploaded file: equal %v, %v, %v", bytes.Equal(a, b), st, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	// A file that changed after it was hashed is not copied.
	if err := os.WriteFile(local, []byte("another binary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Upload(ctx, remote.LocalFile{Path: local, SHA256: strings.Repeat("0", 64), Size: lf.Size, ModTime: lf.ModTime}, dest, 0o755); err == nil || !strings.Contains(err.Error(), "changed while it was being copied") {
		t.Errorf("a file changed since it was hashed: %v", err)
	}
	if b2, _ := os.ReadFile(dest); !bytes.Equal(b2, a) {
		t.Error("a file changed since it was hashed replaced dest")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	// Probe and ReadFile read the host as data: paths with spaces and
	// quotes, an empty file apart from a missing one.
	dir := t.TempDir()
	odd := filepath.Join(dir, "it's a file")
	empty := filepath.Join(dir, "empty")
	for f, data := range map[string]string{odd: "line 1\nline 2", empty: ""} {
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing")
	facts, err := h.Probe(ctx, odd, dir, missing)
	machine, _ := exec.Command("uname", "-m").Output()
	hostname, _ := os.Hostname()
	if err != nil || facts.Machine != strings.TrimSpace(string(machine)) || facts.Hostname != hostname ||
		!facts.Exists[odd] || !facts.Exists[dir] || facts.Exists[missing] || len(facts.Exists) != 3 {
		t.Errorf("Probe: %+v, %v", facts, err)
	}
	for f, want := range map[string]struct {
		data string
		ok   bool
	}{odd: {"line 1\nline 2", true}, empty: {"", true}, missing: {"", false}, dir: {"", false}} {
		data, ok, err := h.ReadFile(ctx, f)
		if err != nil || string(data) != want.data || ok != want.ok {
			t.Errorf("ReadFile(%s) = %q, %v, %v; want %q, %v", f, data, ok, err, want.data, want.ok)
		}
	}

	// Through the bastion.
	tg := hostSrv.Target(keyFile, known)
	bt := bastionSrv.Target(keyFile, known)
	tg.Bastion = &bt
	hb, err := remote.Dial(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Close()
	if o, err := hb.Output(ctx, "echo through"); err != nil || o != "through\n" {
		t.Errorf("through the bastion: %q, %v", o, err)
	}
	if forwarded := bastionSrv.Forwarded(); forwarded != 1 {
		t.Errorf("the bastion forwarded %d connections, want 1", forwarded)
	}
	// The bastion's own key is checked too.
	other := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(other, []byte(knownhosts.Line([]string{hostSrv.Addr}, hostSrv.HostKey)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bt.KnownHosts = other
	tg.KnownHosts = other
	if _, err := remote.Dial(ctx, tg); err == nil || !strings.Contains(err.Error(), "through the bastion") || !strings.Contains(err.Error(), "is not in") {
		t.Errorf("an unknown bastion: %v", err)
	}
}

// A host that accepts the connection and says nothing ends the dial at
// the time-out, directly and through a bastion (whose forwarded
// connection has no deadlines).
func TestDialSilentHost(t *testing.T) {
	keyFile, pub := remotetest.ClientKey(t)
	bastionSrv := remotetest.NewServer(t, pub)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent
		}
	}()
	known := remotetest.KnownHosts(t, bastionSrv)
	host, port, _ := net.SplitHostPort(l.Addr().String())
	p, _ := strconv.Atoi(port)
	silent := remote.Target{Address: host, Port: p, User: "root", KeyPath: keyFile, KnownHosts: known, Timeout: 300 * time.Millisecond}
	bt := bastionSrv.Target(keyFile, known)
	through := silent
	through.Bastion = &bt
	for what, tg := range map[string]remote.Target{"directly": silent, "through a bastion": through} {
		start := time.Now()
		_, err := remote.Dial(context.Background(), tg)
		if took := time.Since(start); err == nil || took > 5*time.Second {
			t.Errorf("%s: %v after %s", what, err, took)
		}
	}
}

// TestDialerSharesTheBastion: the hosts behind one bastion, dialled at
// once as apply does, go through one SSH connection to the bastion (past
// ~10 at once, sshd's default MaxStartups drops some); each host has its
// own forwarded channel, and the bastion's connection ends with Close.
func TestDialerSharesTheBastion(t *testing.T) {
	keyFile, pub := remotetest.ClientKey(t)
	bastionSrv := remotetest.NewServer(t, pub)
	hosts := make([]*remotetest.Server, 12)
	for i := range hosts {
		hosts[i] = remotetest.NewServer(t, pub)
	}
	known := remotetest.KnownHosts(t, append([]*remotetest.Server{bastionSrv}, hosts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := &remote.Dialer{}
	conns := make([]*remote.Host, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, s := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tg, bt := s.Target(keyFile, known), bastionSrv.Target(keyFile, known)
			tg.Bastion = &bt
			if conns[i], errs[i] = d.Dial(ctx, tg); errs[i] == nil {
				_, errs[i] = conns[i].Output(ctx, "true")
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("host %d: %v", i, err)
		}
	}
	if n, f := bastionSrv.Connections(), bastionSrv.Forwarded(); n != 1 || f != len(hosts) {
		t.Errorf("the bastion had %d connections (want 1) and forwarded %d (want %d)", n, f, len(hosts))
	}
	// A host closed leaves the others and the bastion's connection.
	conns[0].Close()
	if _, err := conns[1].Output(ctx, "true"); err != nil {
		t.Errorf("after another host closed: %v", err)
	}
	for _, c := range conns[1:] {
		c.Close()
	}
	if err := d.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	tg, bt := hosts[0].Target(keyFile, known), bastionSrv.Target(keyFile, known)
	tg.Bastion = &bt
	if _, err := d.Dial(ctx, tg); err == nil {
		t.Error("a closed dialer dialled")
	}
}
