package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/grpclog"
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

// TestRenewReadsTheClusterConfiguration: without --config, `certs renew`
// renews with the cluster's kubeadm-config (here ECDSA keys), as kubeadm
// does, and says when it has to fall back to the defaults.
func TestRenewReadsTheClusterConfiguration(t *testing.T) {
	root := t.TempDir()
	clusterCfg := "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nencryptionAlgorithm: ECDSA-P256\nkubernetesVersion: v1.37.2\n"
	cfg := filepath.Join(root, "kubeboot.yaml")
	if err := os.WriteFile(cfg, []byte(clusterCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, e, code := run(t, "init", "phase", "certs", "all", "--root", root, "--config", cfg); code != 0 {
		t.Fatalf("init phase certs: %s", e)
	}
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/kube-system/configmaps/kubeadm-config" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "kubeadm-config", "namespace": "kube-system"},
			"data":     map[string]string{"ClusterConfiguration": clusterCfg},
		})
	}))
	defer api.Close()
	kubeconfigFor := func(server string) string {
		f := filepath.Join(t.TempDir(), "admin.conf")
		os.WriteFile(f, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster: {server: \""+server+"\", insecure-skip-tls-verify: true}\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: x}\n"), 0o600)
		return f
	}
	keyType := func() string {
		b, err := os.ReadFile(filepath.Join(root, "etc/kubernetes/pki/apiserver.key"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.SplitN(string(b), "\n", 2)[0]
	}
	out, e, code := run(t, "certs", "renew", "apiserver", "--root", root, "--kubeconfig", kubeconfigFor(api.URL))
	if code != 0 {
		t.Fatalf("renew: %s", e)
	}
	if strings.Contains(out, "Falling back") || keyType() != "-----BEGIN EC PRIVATE KEY-----" {
		t.Errorf("renewed with %s, want the cluster's ECDSA; output:\n%s", keyType(), out)
	}
	api.Close()
	out, e, code = run(t, "certs", "renew", "apiserver", "--root", root, "--kubeconfig", kubeconfigFor(api.URL))
	if code != 0 {
		t.Fatalf("renew: %s", e)
	}
	if !strings.Contains(out, "[renew] Error reading configuration from the Cluster") || !strings.Contains(out, "Falling back to default configuration") {
		t.Errorf("no fallback message with the cluster unreachable:\n%s", out)
	}
}

// `upgrade apply` and `upgrade node` are phase trees: their help lists
// the phases, --skip-phases names them, and each runs alone.
func TestUpgradePhases(t *testing.T) {
	out, _, code := run(t, "upgrade", "apply", "--help")
	if code != 0 || !strings.Contains(out, "etcd-snapshot") || !strings.Contains(out, "--skip-phases") {
		t.Errorf("upgrade apply --help (exit %d) lacks its phases:\n%s", code, out)
	}
	_, e, code := run(t, "upgrade", "node", "--root", t.TempDir(), "--binary", "x", "--skip-phases", "etcd-snapshot")
	if code == 0 || !strings.Contains(e, `unknown phase "etcd-snapshot"; phases are: preflight, binary, images, components, addon`) {
		t.Errorf("upgrade node --skip-phases etcd-snapshot (exit %d): %s", code, e)
	}
	_, e, code = run(t, "upgrade", "apply", "phase", "preflight", "--root", t.TempDir(), "--binary", "x")
	if code == 0 || !strings.Contains(e, "the kubeboot daemon is not running") {
		t.Errorf("upgrade apply phase preflight on no node (exit %d): %s", code, e)
	}
}

// TestGRPCWarningsAreQuiet: every command, not only join, keeps the
// gRPC warnings that k8s.io/apiserver sends to klog (stderr) out of its
// output; gRPC's errors still reach the command's stderr.
func TestGRPCWarningsAreQuiet(t *testing.T) {
	// As k8s.io/apiserver installs it at init: every severity printed.
	var installed bytes.Buffer
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(&installed, &installed, &installed))
	var out, errOut bytes.Buffer
	if code := Run([]string{"version"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, nil); code != 0 {
		t.Fatalf("version: exit %d: %s", code, errOut.String())
	}
	grpclog.Warningf("[core] addrConn.createTransport failed to connect: connection refused")
	grpclog.Errorf("a real error")
	if installed.Len() != 0 {
		t.Errorf("gRPC still logs through what was installed before: %q", installed.String())
	}
	if strings.Contains(errOut.String(), "connection refused") || !strings.Contains(errOut.String(), "a real error") {
		t.Errorf("the command's stderr: %q; want gRPC's error and not its warning", errOut.String())
	}
}

// TestDaemonRestartRefusesBeforeItSays: `daemon restart NAME` of a
// component the node does not run says so, and never "Restarting NAME".
func TestDaemonRestartRefusesBeforeItSays(t *testing.T) {
	out, errOut, code := run(t, "daemon", "restart", "no-such-component", "--root", t.TempDir())
	if code == 0 || !strings.Contains(errOut, `runs no component "no-such-component"`) {
		t.Errorf("exit %d, stderr %q; want a refusal naming the component", code, errOut)
	}
	if strings.Contains(out, "Restarting") {
		t.Errorf("it said it restarts before refusing: %q", out)
	}
}
