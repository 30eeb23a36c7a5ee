package remote

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func newKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A known key passes; an unknown one and a changed one are refused with
// the fingerprint and what to do; the key types offered are those
// known_hosts holds for the host.
func TestHostKeyCheck(t *testing.T) {
	known, other := newKey(t), newKey(t)
	file := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(file, []byte(knownhosts.Line([]string{"10.0.0.1"}, known)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(addr string, key ssh.PublicKey) (error, []string) {
		cb, algorithms, err := hostKeyCheck(Target{Address: addr, Port: 22, KnownHosts: file})
		if err != nil {
			t.Fatal(err)
		}
		return cb(addr+":22", &net.TCPAddr{IP: net.ParseIP(addr), Port: 22}, key), algorithms
	}
	if err, algorithms := check("10.0.0.1", known); err != nil || strings.Join(algorithms, ",") != ssh.KeyAlgoED25519 {
		t.Errorf("the known key: %v, offered %v", err, algorithms)
	}
	err, _ := check("10.0.0.1", other)
	if err == nil || !strings.Contains(err.Error(), "has CHANGED") || !strings.Contains(err.Error(), ssh.FingerprintSHA256(other)) || !strings.Contains(err.Error(), "ssh-keygen -R") {
		t.Errorf("a changed key: %v", err)
	}
	err, algorithms := check("10.0.0.2", other)
	if err == nil || !strings.Contains(err.Error(), "is not in "+file) || !strings.Contains(err.Error(), "ssh-keyscan -p 22 10.0.0.2 >> "+file) || algorithms != nil {
		t.Errorf("an unknown host: %v (offered %v)", err, algorithms)
	}
	if _, _, err := hostKeyCheck(Target{Address: "10.0.0.1", Port: 22, KnownHosts: filepath.Join(t.TempDir(), "none")}); err == nil || !strings.Contains(err.Error(), "ssh-keyscan") {
		t.Errorf("no known_hosts file: %v", err)
	}
}

// Commands of a user other than root run through sudo, which must not
// ask; quoting keeps them one word.
func TestCommand(t *testing.T) {
	if got := (&Host{target: Target{User: "root"}}).Command("kubeboot reset --force"); got != "kubeboot reset --force" {
		t.Errorf("as root: %q", got)
	}
	if got, want := (&Host{target: Target{User: "admin"}}).Command("cat '/a b'"), `sudo -n -- sh -c 'cat '\''/a b'\'''`; got != want {
		t.Errorf("as admin: %q, want %q", got, want)
	}
	for in, want := range map[string]string{"/usr/local/bin/kubeboot": "/usr/local/bin/kubeboot", "": "''", "a b": "'a b'", "it's": `'it'\''s'`, "$(x)": "'$(x)'"} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}
