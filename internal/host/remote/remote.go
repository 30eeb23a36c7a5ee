// Package remote runs commands on a host over SSH, as `kubeboot apply`
// reaches the hosts of a cluster: golang.org/x/crypto/ssh (no ssh
// program), host keys checked against known_hosts (an unknown or changed
// key is refused, with what to do), a key file or the SSH agent, a jump
// host, and sudo when the user is not root. Secrets go to commands on
// their standard input, never on a command line or into a file.
package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Target is how to reach one host.
type Target struct {
	Address string
	Port    int
	User    string
	// KeyPath is an unencrypted private key; empty means the SSH agent
	// ($SSH_AUTH_SOCK).
	KeyPath string
	// KnownHosts is the known_hosts file host keys are checked against.
	KnownHosts string
	// Bastion, when set, is the jump host the connection goes through.
	Bastion *Target
	// Timeout bounds the TCP connection and the handshake (10 s when 0).
	Timeout time.Duration
}

// String is user@address:port.
func (t Target) String() string {
	return t.User + "@" + net.JoinHostPort(t.Address, strconv.Itoa(t.Port))
}

// Host is a connection to one host.
type Host struct {
	target Target
	client *ssh.Client
	// own is the Dialer that Dial made for this host alone, closed with it.
	own *Dialer
}

// Dial connects to the host (through its bastion, if any) and checks its
// key. The connection to the bastion is the host's own and closes with
// it; a Dialer shares one among the hosts behind a bastion.
func Dial(ctx context.Context, t Target) (*Host, error) {
	d := &Dialer{}
	h, err := d.Dial(ctx, t)
	if err != nil {
		d.Close()
		return nil, err
	}
	h.own = d
	return h, nil
}

// Dialer connects to hosts, with one SSH connection to each bastion for
// every host behind it: sshd drops connections that are not yet
// authenticated past its MaxStartups (10:30:100 by default: 30 % of them
// from the 10th, all from the 100th), and apply reaches every host at
// once. The forwarded connections go as channels of that one. A Dialer
// is safe for concurrent use; Close ends the bastion connections, after
// the hosts reached through them are done with.
type Dialer struct {
	mu       sync.Mutex
	bastions map[string]*bastionConn
	closed   bool
}

// bastionConn is the connection to one bastion, ready once dialled.
type bastionConn struct {
	ready chan struct{}
	host  *Host
	err   error
}

// Dial connects to the host as the package's Dial does, through the
// Dialer's connection to its bastion.
func (d *Dialer) Dial(ctx context.Context, t Target) (*Host, error) {
	if t.Timeout == 0 {
		t.Timeout = 10 * time.Second
	}
	cfg, err := clientConfig(t)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(t.Address, strconv.Itoa(t.Port))
	h := &Host{target: t}
	var conn net.Conn
	if t.Bastion != nil {
		b := *t.Bastion
		if b.Timeout == 0 {
			b.Timeout = t.Timeout
		}
		bastion, err := d.bastion(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("through the bastion %s: %w", b.Address, err)
		}
		dctx, cancel := context.WithTimeout(ctx, t.Timeout)
		defer cancel()
		conn, err = bastion.client.DialContext(dctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("connecting to %s through the bastion %s: %w", addr, b.Address, err)
		}
	} else if conn, err = (&net.Dialer{Timeout: t.Timeout}).DialContext(ctx, "tcp", addr); err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	// The handshake may hang on a host that accepts and says nothing: it
	// ends with the time-out or ctx (a connection through a bastion has
	// no deadlines, so the connection is closed instead).
	_ = conn.SetDeadline(time.Now().Add(t.Timeout))
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	timer := time.AfterFunc(t.Timeout, func() { conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	timedOut, cancelled := !timer.Stop(), !stop()
	if timedOut || cancelled || err != nil {
		conn.Close()
		switch {
		case cancelled:
			err = ctx.Err()
		case timedOut:
			err = fmt.Errorf("no SSH handshake within %s", t.Timeout)
		}
		return nil, fmt.Errorf("ssh %s: %w", t, err)
	}
	_ = conn.SetDeadline(time.Time{})
	h.client = ssh.NewClient(c, chans, reqs)
	return h, nil
}

// bastion is the Dialer's connection to b: dialled by the first host
// that needs it while the others wait, and dialled again once it has
// failed or ended.
func (d *Dialer) bastion(ctx context.Context, b Target) (*Host, error) {
	key := b.key()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, errors.New("the dialer is closed")
	}
	c, ok := d.bastions[key]
	if !ok {
		c = &bastionConn{ready: make(chan struct{})}
		if d.bastions == nil {
			d.bastions = map[string]*bastionConn{}
		}
		d.bastions[key] = c
		d.mu.Unlock()
		h, err := d.Dial(ctx, b)
		d.mu.Lock()
		c.host, c.err = h, err
		switch {
		case err != nil:
			delete(d.bastions, key)
		case d.closed:
			h.Close()
			c.host, c.err = nil, errors.New("the dialer is closed")
		default:
			go func() {
				// A connection that ends (the bastion restarted, the
				// network dropped it) is dialled again by the next host.
				_ = h.client.Wait()
				d.mu.Lock()
				if d.bastions[key] == c {
					delete(d.bastions, key)
				}
				d.mu.Unlock()
			}()
		}
		close(c.ready)
	}
	d.mu.Unlock()
	select {
	case <-c.ready:
		return c.host, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends the connections to the bastions; the hosts reached through
// them lose theirs.
func (d *Dialer) Close() error {
	d.mu.Lock()
	d.closed = true
	var ready []*bastionConn
	for _, c := range d.bastions {
		ready = append(ready, c)
	}
	d.bastions = nil
	d.mu.Unlock()
	var errs []error
	for _, c := range ready {
		<-c.ready // a dial under way ends with its own time-out
		if c.host != nil {
			errs = append(errs, c.host.Close())
		}
	}
	return errors.Join(errs...)
}

// key tells apart the connections a Dialer shares: t as it is reached
// and authenticated.
func (t Target) key() string {
	k := strings.Join([]string{t.User, t.Address, strconv.Itoa(t.Port), t.KeyPath, t.KnownHosts}, "\x00")
	if t.Bastion != nil {
		k += "\x00via\x00" + t.Bastion.key()
	}
	return k
}

// clientConfig is the SSH configuration of t: its user, its keys, and the
// host key check.
func clientConfig(t Target) (*ssh.ClientConfig, error) {
	auth, err := authMethods(t.KeyPath)
	if err != nil {
		return nil, err
	}
	check, algorithms, err := hostKeyCheck(t)
	if err != nil {
		return nil, err
	}
	return &ssh.ClientConfig{User: t.User, Auth: auth, HostKeyCallback: check, HostKeyAlgorithms: algorithms, Timeout: t.Timeout}, nil
}

// authMethods are the key file's key, or the agent's keys.
func authMethods(keyPath string) ([]ssh.AuthMethod, error) {
	if keyPath != "" {
		b, err := os.ReadFile(keyPath)
		if err != nil {
			return nil, fmt.Errorf("the SSH key: %w", err)
		}
		signer, err := ssh.ParsePrivateKey(b)
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, fmt.Errorf("the SSH key %s is encrypted: add it to your SSH agent (ssh-add %s) and leave keyPath out", keyPath, keyPath)
		}
		if err != nil {
			return nil, fmt.Errorf("the SSH key %s: %w", keyPath, err)
		}
		return []ssh.AuthMethod{ssh.PublicKeys(signer)}, nil
	}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, errors.New("no SSH key: give ssh.keyPath, or run an SSH agent (SSH_AUTH_SOCK is not set)")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("the SSH agent at %s: %w", sock, err)
	}
	// The connection lives as long as the process: kubeboot apply is one run.
	return []ssh.AuthMethod{ssh.PublicKeysCallback(agent.NewClient(conn).Signers)}, nil
}

// hostKeyCheck checks the host's key against known_hosts, and offers
// only the key types known_hosts holds for the host: a host with
// several keys must not present one that known_hosts does not list, and
// be refused as changed.
func hostKeyCheck(t Target) (ssh.HostKeyCallback, []string, error) {
	cb, err := knownhosts.New(t.KnownHosts)
	if err != nil {
		return nil, nil, fmt.Errorf("known hosts %s: %w (create it with the hosts' keys: ssh-keyscan -p %d %s >> %s, after checking them)", t.KnownHosts, err, t.Port, t.Address, t.KnownHosts)
	}
	hostport := net.JoinHostPort(t.Address, strconv.Itoa(t.Port))
	var algorithms []string
	// The known keys, from the error a key nobody has gives.
	var ke *knownhosts.KeyError
	if errors.As(cb(hostport, &net.TCPAddr{IP: net.ParseIP(t.Address), Port: t.Port}, probeKey{}), &ke) {
		for _, k := range ke.Want {
			algorithms = append(algorithms, keyAlgorithms(k.Key.Type())...)
		}
	}
	check := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := cb(hostname, remote, key)
		if !errors.As(err, &ke) {
			return err
		}
		fp := ssh.FingerprintSHA256(key)
		if len(ke.Want) == 0 {
			return fmt.Errorf("the host key of %s is not in %s: it offers %s %s. Check that fingerprint with the host's owner, then add it: ssh-keyscan -p %d %s >> %s",
				hostname, t.KnownHosts, key.Type(), fp, t.Port, t.Address, t.KnownHosts)
		}
		w := ke.Want[0]
		return fmt.Errorf("the host key of %s has CHANGED: %s:%d has %s %s, the host offers %s %s. Someone may be in the middle; if the host was reinstalled, remove the old key (ssh-keygen -R %s -f %s) and add the new one after checking it",
			hostname, w.Filename, w.Line, w.Key.Type(), ssh.FingerprintSHA256(w.Key), key.Type(), fp, hostname, t.KnownHosts)
	}
	return check, algorithms, nil
}

// keyAlgorithms are the signature algorithms of a key type.
func keyAlgorithms(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// probeKey is a key no host has.
type probeKey struct{}

func (probeKey) Type() string                        { return "kubeboot-probe" }
func (probeKey) Marshal() []byte                     { return []byte("kubeboot-probe") }
func (probeKey) Verify([]byte, *ssh.Signature) error { return errors.New("probe") }

// Close ends the connection, and the bastion's when Dial made it for
// this host alone.
func (h *Host) Close() error {
	if h == nil {
		return nil
	}
	var err error
	if h.client != nil {
		err = h.client.Close()
	}
	if h.own != nil {
		h.own.Close()
	}
	return err
}

// Root tells whether commands run as root without sudo.
func (h *Host) Root() bool { return h.target.User == "root" }

// Command is what Run runs for cmd: cmd itself as root, else through
// sudo, which must not ask for a password (sudo -n).
func (h *Host) Command(cmd string) string {
	if h.Root() {
		return cmd
	}
	return "sudo -n -- sh -c " + Quote(cmd)
}

// Run runs cmd (a shell command line) with stdin, writing its output to
// stdout and stderr. It ends the command when ctx ends.
func (h *Host) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) error {
	s, err := h.client.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	if stdout != nil && stdout == stderr {
		// As os/exec: one writer for both streams gets one Write at a
		// time (the session copies each stream in its own goroutine).
		w := &lockedWriter{w: stdout}
		stdout, stderr = w, w
	}
	s.Stdin, s.Stdout, s.Stderr = stdin, stdout, stderr
	if err := s.Start(h.Command(cmd)); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGTERM)
		s.Close()
		return ctx.Err()
	}
}

// lockedWriter serializes the Writes of two goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Output runs cmd and returns its standard output; its standard error is
// in the error when it fails.
func (h *Host) Output(ctx context.Context, cmd string) (string, error) {
	var out, errb bytes.Buffer
	if err := h.Run(ctx, cmd, nil, &out, &errb); err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", cmd, err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Facts are what Probe reads of a host.
type Facts struct {
	// Machine is its hardware name (uname -m: x86_64, aarch64).
	Machine string
	// Hostname is its name.
	Hostname string
	// Exists tells, for each path Probe was asked about, whether it
	// exists (a file, a directory or anything else).
	Exists map[string]bool
}

// Probe reads, in one command, the host's machine, its name, and whether
// each of paths exists.
func (h *Host) Probe(ctx context.Context, paths ...string) (Facts, error) {
	var cmd strings.Builder
	cmd.WriteString("uname -m && hostname")
	for _, p := range paths {
		cmd.WriteString(" && if [ -e " + Quote(p) + " ]; then echo y; else echo n; fi")
	}
	out, err := h.Output(ctx, cmd.String())
	if err != nil {
		return Facts{}, err
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2+len(paths) || lines[0] == "" || lines[1] == "" {
		return Facts{}, fmt.Errorf("reading the host's machine, name and paths: %q", out)
	}
	f := Facts{Machine: lines[0], Hostname: lines[1], Exists: map[string]bool{}}
	for i, p := range paths {
		switch lines[2+i] {
		case "y":
			f.Exists[p] = true
		case "n":
			f.Exists[p] = false
		default:
			return Facts{}, fmt.Errorf("reading whether %s exists on the host: %q", p, lines[2+i])
		}
	}
	return f, nil
}

// ReadFile reads a regular file of the host; ok is false when there is
// none at that path.
func (h *Host) ReadFile(ctx context.Context, file string) (data []byte, ok bool, err error) {
	q := Quote(file)
	// The marker says the file is there: an empty file is not a missing one.
	out, err := h.Output(ctx, "if [ -f "+q+" ]; then echo y && cat "+q+"; else echo n; fi")
	if err != nil {
		return nil, false, err
	}
	switch marker, rest, _ := strings.Cut(out, "\n"); marker {
	case "y":
		return []byte(rest), true, nil
	case "n":
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("reading %s on the host: %q", file, out)
	}
}

// FileSHA256 is the hex sha256 of a file on the host, "" when it does
// not exist.
func (h *Host) FileSHA256(ctx context.Context, file string) (string, error) {
	out, err := h.Output(ctx, "if [ -f "+Quote(file)+" ]; then sha256sum "+Quote(file)+"; fi")
	if err != nil {
		return "", err
	}
	sum, _, _ := strings.Cut(strings.TrimSpace(out), " ")
	return sum, nil
}

// LocalFile is a file of this machine to copy to hosts, hashed once.
type LocalFile struct {
	Path   string
	SHA256 string // hex
	// Size and ModTime are the file's when it was hashed: Upload refuses
	// a file that has changed since.
	Size    int64
	ModTime time.Time
}

// HashFile reads path's sha256.
func HashFile(path string) (LocalFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return LocalFile{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return LocalFile{}, err
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return LocalFile{}, err
	}
	return LocalFile{Path: path, SHA256: hex.EncodeToString(sum.Sum(nil)), Size: st.Size(), ModTime: st.ModTime()}, nil
}

// unchanged says whether f is still the file local hashed.
func (local LocalFile) unchanged(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != local.Size || !st.ModTime().Equal(local.ModTime) {
		return fmt.Errorf("%s changed while it was being copied", local.Path)
	}
	return nil
}

// Upload writes the local file to dest on the host with mode, unless the
// host has it already (same sha256). It writes a temporary file next to
// dest and renames it once the whole file is there (its size checked on
// the host; SSH's message authentication vouches for the bytes) and the
// local file is still the one hashed, so that dest is never half-written
// or other than the file. The host does not hash the copy: sha256 of the
// ~210 MB binary costs it ~0.6 s of CPU. It reports whether it copied.
func (h *Host) Upload(ctx context.Context, local LocalFile, dest string, mode os.FileMode) (bool, error) {
	if have, err := h.FileSHA256(ctx, dest); err != nil {
		return false, err
	} else if have == local.SHA256 {
		return false, nil
	}
	f, err := os.Open(local.Path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := local.unchanged(f); err != nil {
		return false, err
	}
	tmp := path.Join(path.Dir(dest), "."+path.Base(dest)+".kubeboot-upload")
	cmd := fmt.Sprintf(`mkdir -p %[1]s && cat > %[2]s && [ "$(stat -c %%s %[2]s)" = %[3]d ] || { rm -f %[2]s; echo "the copy is not %[3]d bytes long" >&2; exit 1; }`,
		Quote(path.Dir(dest)), Quote(tmp), local.Size)
	var errb bytes.Buffer
	if err := h.Run(ctx, cmd, f, io.Discard, &errb); err != nil {
		return false, fmt.Errorf("copying %s to %s: %w: %s", local.Path, dest, err, strings.TrimSpace(errb.String()))
	}
	if err := local.unchanged(f); err != nil {
		_, _ = h.Output(ctx, "rm -f "+Quote(tmp))
		return false, err
	}
	if _, err := h.Output(ctx, fmt.Sprintf("chmod %o %s && mv -f %s %s || { rm -f %s; exit 1; }", mode.Perm(), Quote(tmp), Quote(tmp), Quote(dest), Quote(tmp))); err != nil {
		return false, fmt.Errorf("copying %s to %s: %w", local.Path, dest, err)
	}
	return true, nil
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
