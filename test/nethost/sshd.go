package nethost

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHD is Debian's sshd running in a host, listening on the host's
// address only, with a host key of its own.
type SSHD struct {
	// Key is its host key.
	Key ssh.PublicKey
	cmd *exec.Cmd
	log *LockedBuffer
}

// LockedBuffer collects a running command's output, written and read
// from several goroutines.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// PrivsepDir is the directory sshd needs to exist (Debian's unit makes
// it; there is no unit here).
const PrivsepDir = "/run/sshd"

// StartSSHD runs /usr/sbin/sshd in h, its files under dir, letting root
// in with the keys in the authorized_keys file authorized. It returns
// once the server accepts connections.
func (h *Host) StartSSHD(dir, authorized string) (*SSHD, error) {
	if _, err := os.Stat(PrivsepDir); err != nil {
		return nil, fmt.Errorf("sshd needs %s: %w", PrivsepDir, err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, err
	}
	hostKey := filepath.Join(dir, h.Name+"-host-key")
	if err := os.WriteFile(hostKey, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, h.Name+"-sshd_config")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`ListenAddress %s:22
HostKey %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
Subsystem sftp /usr/lib/openssh/sftp-server
`, h.IP, hostKey, authorized)), 0o600); err != nil {
		return nil, err
	}
	s := &SSHD{log: &LockedBuffer{}}
	if s.Key, err = ssh.NewPublicKey(pub); err != nil {
		return nil, err
	}
	s.cmd = h.Command("/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := Start(s.cmd); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := h.DialContext(context.Background(), "tcp", h.IP+":22")
		if err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("sshd in %s does not answer: %v\n%s", h.Name, err, s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Log is what sshd wrote.
func (s *SSHD) Log() string { return s.log.String() }

// Stop ends sshd.
func (s *SSHD) Stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	forget(s.cmd.Process.Pid)
}

// OperatorKey writes an SSH key pair for an operator under dir: the
// private key file and an authorized_keys file that lets it in.
func OperatorKey(dir string) (keyFile, authorized string, pub ssh.PublicKey, err error) {
	raw, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return "", "", nil, err
	}
	if pub, err = ssh.NewPublicKey(raw); err != nil {
		return "", "", nil, err
	}
	keyFile, authorized = filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		return "", "", nil, err
	}
	return keyFile, authorized, pub, os.WriteFile(authorized, ssh.MarshalAuthorizedKey(pub), 0o600)
}

// WriteKnownHosts writes a known_hosts file with each address's key.
func WriteKnownHosts(file string, keys map[string]ssh.PublicKey) error {
	var b bytes.Buffer
	for addr, k := range keys {
		b.WriteString(knownhosts.Line([]string{addr}, k) + "\n")
	}
	return os.WriteFile(file, b.Bytes(), 0o600)
}
