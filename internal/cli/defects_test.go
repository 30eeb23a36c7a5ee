package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, nil)
	return out.String(), errOut.String(), code
}

// TestCheckExpirationTellsMissingFromInvalid: a certificate that exists
// but cannot be read is !INVALID! and fails the command with the reason;
// an absent one is !MISSING!.
func TestCheckExpirationTellsMissingFromInvalid(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "kubeboot.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nencryptionAlgorithm: ECDSA-P256\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"certs", "kubeconfig"} {
		if _, e, code := run(t, "init", "phase", phase, "all", "--root", root, "--config", cfg); code != 0 {
			t.Fatalf("init phase %s: %s", phase, e)
		}
	}
	pki := filepath.Join(root, "etc/kubernetes/pki")
	if err := os.WriteFile(filepath.Join(pki, "apiserver.crt"), []byte("junk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(pki, "front-proxy-client.crt")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "certs", "check-expiration", "--root", root, "--config", cfg)
	if code == 0 {
		t.Errorf("check-expiration succeeded with an unreadable certificate")
	}
	for _, want := range []string{"!INVALID! apiserver ", "!MISSING! front-proxy-client ", "\netcd-server "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "apiserver.crt is unreadable") {
		t.Errorf("error does not name the unreadable file: %s", errOut)
	}
}

// TestTokenJoinCommandWithoutCurrentContext: a kubeconfig without a
// current context is an error, not a panic, and no token is created
// (nothing dials an API server).
func TestTokenJoinCommandWithoutCurrentContext(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "admin.conf")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: k
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user: {token: x}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, "token", "create", "--print-join-command", "--kubeconfig", kc)
	if code == 0 || !strings.Contains(errOut, "admin.conf") || !strings.Contains(errOut, "context") {
		t.Errorf("exit %d, stderr %q; want an error naming the file and its missing context", code, errOut)
	}
}
