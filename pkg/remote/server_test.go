package remote

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
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
)

// testServer is an SSH server on loopback that runs each "exec" request
// with sh here and forwards "direct-tcpip" channels (a bastion's work).
type testServer struct {
	addr    string
	hostKey ssh.PublicKey
	// forwarded counts the direct-tcpip channels it opened.
	mu        sync.Mutex
	forwarded int
}

func startServer(t *testing.T, client ssh.PublicKey) *testServer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if bytes.Equal(k.Marshal(), client.Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	cfg.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{addr: l.Addr().String(), hostKey: signer.PublicKey()}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(c, cfg)
			}()
		}
	}()
	return s
}

func (s *testServer) serve(c net.Conn, cfg *ssh.ServerConfig) {
	conn, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		c.Close()
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			ch, reqs, err := nc.Accept()
			if err != nil {
				return
			}
			go s.session(ch, reqs)
		case "direct-tcpip":
			var to struct {
				Host       string
				Port       uint32
				OriginHost string
				OriginPort uint32
			}
			if err := ssh.Unmarshal(nc.ExtraData(), &to); err != nil {
				nc.Reject(ssh.ConnectionFailed, err.Error())
				continue
			}
			up, err := net.Dial("tcp", net.JoinHostPort(to.Host, strconv.Itoa(int(to.Port))))
			if err != nil {
				nc.Reject(ssh.ConnectionFailed, err.Error())
				continue
			}
			ch, reqs, err := nc.Accept()
			if err != nil {
				up.Close()
				continue
			}
			s.mu.Lock()
			s.forwarded++
			s.mu.Unlock()
			go ssh.DiscardRequests(reqs)
			go func() { io.Copy(ch, up); ch.CloseWrite() }()
			go func() { io.Copy(up, ch); up.Close() }()
		default:
			nc.Reject(ssh.UnknownChannelType, "no")
		}
	}
}

// session runs the first exec request with sh and returns its exit
// status.
func (s *testServer) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for r := range reqs {
		if r.Type != "exec" {
			r.Reply(false, nil)
			continue
		}
		var req struct{ Command string }
		if err := ssh.Unmarshal(r.Payload, &req); err != nil {
			r.Reply(false, nil)
			return
		}
		r.Reply(true, nil)
		cmd := exec.Command("sh", "-c", req.Command)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
		status := 0
		if err := cmd.Run(); err != nil {
			status = 255
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			}
		}
		_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, uint32(status)))
		return
	}
}

// clientKey writes a client key file and returns it with its public key.
func clientKey(t *testing.T) (string, ssh.PublicKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return file, signer.PublicKey()
}

func (s *testServer) target(t *testing.T, key, known string) Target {
	host, port, _ := net.SplitHostPort(s.addr)
	p, _ := strconv.Atoi(port)
	return Target{Address: host, Port: p, User: "root", KeyPath: key, KnownHosts: known, Timeout: 5 * time.Second}
}

// Commands run with their exit status, standard input and both output
// streams (one writer for both takes one Write at a time: the session
// copies each stream in its own goroutine); Upload copies once, then
// skips a file with the same sha256; a host is reached through a
// bastion, each checked against known_hosts.
func TestRunUploadBastion(t *testing.T) {
	keyFile, pub := clientKey(t)
	hostSrv, bastionSrv := startServer(t, pub), startServer(t, pub)
	known := filepath.Join(t.TempDir(), "known_hosts")
	var lines []string
	for _, s := range []*testServer{hostSrv, bastionSrv} {
		lines = append(lines, knownhosts.Line([]string{s.addr}, s.hostKey))
	}
	if err := os.WriteFile(known, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	h, err := Dial(ctx, hostSrv.target(t, keyFile, known))
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
	lf, err := HashFile(local)
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
	if _, err := h.Upload(ctx, LocalFile{Path: local, SHA256: strings.Repeat("0", 64), Size: lf.Size, ModTime: lf.ModTime}, dest, 0o755); err == nil || !strings.Contains(err.Error(), "changed while it was being copied") {
		t.Errorf("a file changed since it was hashed: %v", err)
	}
	if b2, _ := os.ReadFile(dest); !bytes.Equal(b2, a) {
		t.Error("a file changed since it was hashed replaced dest")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	// Through the bastion.
	tg := hostSrv.target(t, keyFile, known)
	bt := bastionSrv.target(t, keyFile, known)
	tg.Bastion = &bt
	hb, err := Dial(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Close()
	if o, err := hb.Output(ctx, "echo through"); err != nil || o != "through\n" {
		t.Errorf("through the bastion: %q, %v", o, err)
	}
	bastionSrv.mu.Lock()
	forwarded := bastionSrv.forwarded
	bastionSrv.mu.Unlock()
	if forwarded != 1 {
		t.Errorf("the bastion forwarded %d connections, want 1", forwarded)
	}
	// The bastion's own key is checked too.
	other := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(other, []byte(lines[0]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bt.KnownHosts = other
	tg.KnownHosts = other
	if _, err := Dial(ctx, tg); err == nil || !strings.Contains(err.Error(), "through the bastion") || !strings.Contains(err.Error(), "is not in") {
		t.Errorf("an unknown bastion: %v", err)
	}
}

// A host that accepts the connection and says nothing ends the dial at
// the time-out, directly and through a bastion (whose forwarded
// connection has no deadlines).
func TestDialSilentHost(t *testing.T) {
	keyFile, pub := clientKey(t)
	bastionSrv := startServer(t, pub)
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
	known := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(known, []byte(knownhosts.Line([]string{bastionSrv.addr}, bastionSrv.hostKey)+"\n"), 0o600)
	host, port, _ := net.SplitHostPort(l.Addr().String())
	p, _ := strconv.Atoi(port)
	silent := Target{Address: host, Port: p, User: "root", KeyPath: keyFile, KnownHosts: known, Timeout: 300 * time.Millisecond}
	bt := bastionSrv.target(t, keyFile, known)
	through := silent
	through.Bastion = &bt
	for what, tg := range map[string]Target{"directly": silent, "through a bastion": through} {
		start := time.Now()
		_, err := Dial(context.Background(), tg)
		if took := time.Since(start); err == nil || took > 5*time.Second {
			t.Errorf("%s: %v after %s", what, err, took)
		}
	}
}
