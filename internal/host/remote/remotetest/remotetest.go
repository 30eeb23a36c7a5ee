// Package remotetest is an SSH server for tests of what goes over
// package remote: it runs on loopback, in the test's process, lets in one
// client key, runs each command with sh on this machine (as root runs it
// on a host) and forwards connections as a bastion does. It counts the
// connections and the forwarded channels it served.
package remotetest

import (
	"bytes"
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
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/kubeboot/kubeboot/internal/host/remote"
)

// Server is an SSH server on loopback.
type Server struct {
	// Addr is host:port; HostKey the key it offers.
	Addr    string
	HostKey ssh.PublicKey

	mu                     sync.Mutex
	connections, forwarded int
}

// NewServer serves SSH on loopback, to the client key only, until the
// test ends (its commands with it).
func NewServer(t testing.TB, client ssh.PublicKey) *Server {
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
	s := &Server{Addr: l.Addr().String(), HostKey: signer.PublicKey()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(c, cfg, &wg)
			}()
		}
	}()
	return s
}

// Connections is how many SSH connections it accepted (authenticated).
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

// Forwarded is how many connections it forwarded (direct-tcpip), as a
// bastion.
func (s *Server) Forwarded() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forwarded
}

// Target reaches the server as root with the key file, its host key
// checked against known.
func (s *Server) Target(keyFile, known string) remote.Target {
	host, port, _ := net.SplitHostPort(s.Addr)
	p, _ := strconv.Atoi(port)
	return remote.Target{Address: host, Port: p, User: "root", KeyPath: keyFile, KnownHosts: known, Timeout: 5 * time.Second}
}

func (s *Server) serve(c net.Conn, cfg *ssh.ServerConfig, wg *sync.WaitGroup) {
	conn, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		c.Close()
		return
	}
	defer conn.Close()
	s.mu.Lock()
	s.connections++
	s.mu.Unlock()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			ch, reqs, err := nc.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				session(ch, reqs)
			}()
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

// signals are the SSH signal names a session's command can be sent.
var signals = map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP}

// session runs the first exec request with sh, sends it the signals the
// client asks for, and returns its exit status; a client that closes the
// session ends the command, as sshd does.
func session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var cmd *exec.Cmd
	done := make(chan int, 1)
	for {
		select {
		case status := <-done:
			_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, uint32(status)))
			return
		case r, ok := <-reqs:
			if !ok {
				// The client went: the command's process group with it.
				if cmd != nil {
					syscall.Kill(-cmd.Process.Pid, syscall.SIGHUP)
					<-done
				}
				return
			}
			switch {
			case r.Type == "exec" && cmd == nil:
				var req struct{ Command string }
				if err := ssh.Unmarshal(r.Payload, &req); err != nil {
					r.Reply(false, nil)
					return
				}
				cmd = exec.Command("sh", "-c", req.Command)
				cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := cmd.Start(); err != nil {
					r.Reply(false, nil)
					return
				}
				r.Reply(true, nil)
				go func() {
					status := 0
					if err := cmd.Wait(); err != nil {
						status = 255
						var ee *exec.ExitError
						if errors.As(err, &ee) {
							status = ee.ExitCode()
						}
					}
					done <- status
				}()
			case r.Type == "signal" && cmd != nil:
				var req struct{ Signal string }
				if ssh.Unmarshal(r.Payload, &req) == nil && signals[req.Signal] != 0 {
					syscall.Kill(-cmd.Process.Pid, signals[req.Signal])
				}
				r.Reply(true, nil)
			default:
				r.Reply(false, nil)
			}
		}
	}
}

// ClientKey writes a client key file and returns it with its public key.
func ClientKey(t testing.TB) (string, ssh.PublicKey) {
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

// KnownHosts writes a known_hosts file with the servers' keys.
func KnownHosts(t testing.TB, servers ...*Server) string {
	t.Helper()
	var lines []string
	for _, s := range servers {
		lines = append(lines, knownhosts.Line([]string{s.Addr}, s.HostKey))
	}
	file := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
