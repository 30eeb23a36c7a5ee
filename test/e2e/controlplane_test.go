package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"

	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// listenIn opens a TCP listener inside the host's network namespace, to
// occupy a port the way another program would.
func listenIn(t *testing.T, h *nethost.Host, port int) net.Listener {
	t.Helper()
	var l net.Listener
	if err := h.InNetns(func() (err error) {
		l, err = net.Listen("tcp", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return l
}

// anonymousGet sends an unauthenticated request to the API server from
// inside the host, trusting only the cluster CA.
func anonymousGet(t *testing.T, h *nethost.Host, url string) (int, string) {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(h.Root, "etc/kubernetes/pki/ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: h.DialContext, TLSClientConfig: &tls.Config{RootCAs: pool},
	}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func listAll(root string) []string {
	var out []string
	filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err == nil && p != root {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func readStatus(t *testing.T, h *nethost.Host) *daemon.StatusReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.Root, node.DaemonStatusFile))
	if err != nil {
		t.Fatal(err)
	}
	var r daemon.StatusReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func TestControlPlane(t *testing.T) {
	requireE2E(t)
	h := newHost(t, "kbe2e-cp", "10.201.0.2")
	init := []string{"init", "--node-name", "cp1", "--explain"}

	t.Run("bad input writes nothing", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.yaml")
		os.WriteFile(bad, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: 10.96.0.0/8\n"), 0o644)
		out, err := nethost.Run(h.Kubeboot("init", "--config", bad))
		if err == nil || !strings.Contains(out, "networking.podSubnet") {
			t.Fatalf("invalid config accepted or unclear: %v\n%s", err, out)
		}
		if files := listAll(h.Root); len(files) != 0 {
			t.Fatalf("a rejected config wrote %v", files)
		}
		l := listenIn(t, h, 6443)
		out, err = nethost.Run(h.Kubeboot(init...))
		l.Close()
		if err == nil || !strings.Contains(out, "[ERROR Port-6443]") || !strings.Contains(out, "port 6443 is in use") {
			t.Fatalf("occupied port not refused: %v\n%s", err, out)
		}
		if files := listAll(h.Root); len(files) != 0 {
			t.Fatalf("a failed preflight wrote %v", files)
		}
	})

	t.Run("withheld secrets are printed nowhere", func(t *testing.T) {
		const token, key = "abcdef.0123456789abcdef", "3b5f0c7f2d2a4a8e9c1d6e0f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b"
		out := kb(t, h, "init", "--node-name", "cp1", "--dry-run", "--upload-certs", "--token", token, "--certificate-key", key,
			"--skip-token-print", "--skip-certificate-key-print")
		if strings.Contains(out, "0123456789abcdef") || strings.Contains(out, key) {
			t.Errorf("a withheld secret is printed:\n%s", out)
		}
		if !strings.Contains(out, "--token <value withheld>") || !strings.Contains(out, "--certificate-key <value withheld>") {
			t.Errorf("the join commands do not say the values are withheld:\n%s", out)
		}
		if files := listAll(h.Root); len(files) != 0 {
			t.Fatalf("a dry run wrote %v", files)
		}
	})

	var token string
	t.Run("init", func(t *testing.T) {
		start := time.Now()
		out := kb(t, h, init...)
		t.Logf("init took %s", time.Since(start).Round(time.Millisecond))
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "healthy after") {
				t.Log(l)
			}
			if tok, ok := strings.CutPrefix(l, "[bootstrap-token] Using token: "); ok {
				token = tok
			}
		}
		if !strings.Contains(out, "kubeboot join 10.201.0.2:6443 --token") {
			t.Errorf("no join command in init's output:\n%s", out)
		}
		// --explain names every file written, each with what it is.
		written := 0
		for _, l := range strings.Split(out, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(l), "↳ wrote ")
			if !ok {
				continue
			}
			file, what, _ := strings.Cut(rest, " (mode ")
			written++
			if _, err := os.Stat(file); err != nil {
				t.Errorf("--explain names %s, which is not there: %v", file, err)
			}
			if _, desc, _ := strings.Cut(what, "): "); desc == "" {
				t.Errorf("--explain does not say what %s is: %s", file, l)
			}
		}
		if written < 30 {
			t.Errorf("--explain named %d files written; init writes more than 30", written)
		}
		for _, want := range []string{"pki/apiserver.crt (mode 0644): identity CN=kube-apiserver, signed by \"kubernetes\", for server authentication",
			"admin.conf (mode 0600): kubeconfig of CN=kubernetes-admin O=kubeadm:cluster-admins for https://10.201.0.2:6443",
			"kube-apiserver.json (mode 0600): the node daemon runs kube-apiserver, listening on ports [6443]"} {
			if !strings.Contains(out, want) {
				t.Errorf("--explain does not say %q:\n%s", want, grepLines(out, "↳"))
			}
		}
		t.Logf("--explain named %d files", written)
		again, err := nethost.Run(h.Kubeboot(init...))
		if err == nil || !strings.Contains(again, "run `kubeboot reset` first") {
			t.Errorf("a second init was not refused clearly: %v\n%s", err, again)
		}
	})
	if token == "" {
		t.Fatal("no bootstrap token printed")
	}

	t.Run("API", func(t *testing.T) {
		if out := kubectl(t, h, "get", "--raw", "/readyz"); strings.TrimSpace(out) != "ok" {
			t.Errorf("/readyz: %q", out)
		}
		if out := kubectl(t, h, "get", "namespaces", "-o", "name"); !strings.Contains(out, "namespace/kube-system") {
			t.Errorf("namespaces: %s", out)
		}
		if out := kubectl(t, h, "auth", "can-i", "*", "*"); strings.TrimSpace(out) != "yes" {
			t.Errorf("admin can-i: %q", out)
		}
		// Anonymous: no credentials, only the cluster CA to trust the server.
		code, body := anonymousGet(t, h, "https://10.201.0.2:6443/api/v1/namespaces/kube-public/configmaps/cluster-info")
		if code != 200 || !strings.Contains(body, "cluster-info") {
			t.Errorf("anonymous read of cluster-info: HTTP %d %s", code, body)
		}
		code, body = anonymousGet(t, h, "https://10.201.0.2:6443/api/v1/namespaces/kube-system/secrets")
		if code != 403 {
			t.Errorf("anonymous list of secrets: HTTP %d, want 403: %s", code, body)
		}
	})

	t.Run("cluster-info signature", func(t *testing.T) {
		id, secret, _ := strings.Cut(token, ".")
		var cm struct {
			Data map[string]string `json:"data"`
		}
		took := eventually(t, 30*time.Second, 200*time.Millisecond, "the bootstrap signer signs cluster-info", func() error {
			out := kubectl(t, h, "-n", "kube-public", "get", "configmap", "cluster-info", "-o", "json")
			if err := json.Unmarshal([]byte(out), &cm); err != nil {
				return err
			}
			if cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id] == "" {
				return errors.New("no signature for the token yet")
			}
			return nil
		})
		t.Logf("cluster-info signed %s after the check started", took.Round(time.Millisecond))
		content, sig := cm.Data[bootstrapapi.KubeConfigKey], cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id]
		if !jws.DetachedTokenIsValid(sig, content, id, secret) {
			t.Error("the signature does not verify with the token")
		}
		if jws.DetachedTokenIsValid(sig, content, id, "0123456789abcdef") {
			t.Error("the signature verifies with another token secret")
		}
		kc, err := clientcmd.Load([]byte(content))
		if err != nil || kc.Clusters[""] == nil || kc.Clusters[""].Server != "https://10.201.0.2:6443" {
			t.Errorf("cluster-info kubeconfig: %v %+v", err, kc)
		}
	})

	t.Run("token commands", func(t *testing.T) {
		out := kb(t, h, "token", "create", "--ttl", "1h", "--print-join-command")
		if !strings.Contains(out, "kubeboot join 10.201.0.2:6443 --token ") || !strings.Contains(out, "--discovery-token-ca-cert-hash sha256:") {
			t.Fatalf("token create: %s", out)
		}
		// One line, as kubeadm's: `ssh worker "$(... --print-join-command)"`.
		if line := strings.TrimSpace(out); strings.ContainsAny(line, "\\\n\t") {
			t.Errorf("token create --print-join-command is not one line: %q", out)
		}
		newTok := strings.Fields(out)[4]
		if list := kb(t, h, "token", "list"); !strings.Contains(list, newTok) || !strings.Contains(list, token) {
			t.Fatalf("token list lacks the tokens:\n%s", list)
		}
		kb(t, h, "token", "delete", newTok)
		if list := kb(t, h, "token", "list"); strings.Contains(list, newTok) {
			t.Fatalf("deleted token still listed:\n%s", list)
		}
	})

	t.Run("kill -9 each component", func(t *testing.T) {
		for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			var old int
			for _, c := range readStatus(t, h).Components {
				if c.Name == name {
					old = c.PID
				}
			}
			if old == 0 {
				t.Fatalf("%s has no pid in the status", name)
			}
			killed := time.Now()
			if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			took := eventually(t, 15*time.Second, 100*time.Millisecond, name+" restarted and the API ready", func() error {
				ready := false
				for _, c := range readStatus(t, h).Components {
					if c.Name == name && c.PID != 0 && c.PID != old && c.Ready {
						ready = true
					}
				}
				if !ready {
					return fmt.Errorf("%s not restarted and ready", name)
				}
				out, err := kubectlErr(h, "get", "--raw", "/readyz")
				if err != nil || strings.TrimSpace(out) != "ok" {
					return fmt.Errorf("/readyz: %v %s", err, out)
				}
				return nil
			})
			t.Logf("kill -9 %s: restarted and API ready %s after the kill", name, took.Round(time.Millisecond))
			_ = killed
		}
		if out := kb(t, h, "status"); !strings.Contains(out, "kube-apiserver") {
			t.Errorf("status: %s", out)
		}
	})

	t.Run("daemon restart keeps the cluster", func(t *testing.T) {
		var list strings.Builder
		list.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
		for i := 0; i < 200; i++ {
			if i > 0 {
				list.WriteString(",")
			}
			fmt.Fprintf(&list, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"persist-%03d","namespace":"default"},"data":{"i":"%d"}}`, i, i)
		}
		list.WriteString("]}")
		f := filepath.Join(h.Root, "cms.json")
		os.WriteFile(f, []byte(list.String()), 0o644)
		kubectl(t, h, "apply", "-f", f)
		os.Remove(f)
		stop := time.Now()
		kb(t, h, "daemon", "stop")
		nethost.Reap()
		// Containers outlive the daemon by design (their shims keep them
		// running); every other process of the node must be gone.
		for _, pid := range h.Processes() {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if !strings.Contains(string(cmdline), "containerd-shim") {
				t.Errorf("process left after daemon stop: %d %q", pid, cmdline)
			}
		}
		t.Logf("daemon stop took %s", time.Since(stop).Round(time.Millisecond))
		start := time.Now()
		kb(t, h, "daemon", "start")
		took := eventually(t, 60*time.Second, 100*time.Millisecond, "API ready after the daemon restart", func() error {
			out, err := kubectlErr(h, "get", "--raw", "/readyz")
			if err != nil || strings.TrimSpace(out) != "ok" {
				return fmt.Errorf("/readyz: %v %s", err, out)
			}
			return nil
		})
		t.Logf("API ready %s after daemon start", took.Round(time.Millisecond))
		_ = start
		out := kubectl(t, h, "get", "configmaps", "-n", "default", "-o", "name")
		if n := strings.Count(out, "configmap/persist-"); n != 200 {
			t.Fatalf("%d of 200 ConfigMaps survived the restart", n)
		}
	})

	t.Run("reset", func(t *testing.T) {
		out := kb(t, h, "reset", "--force")
		if !strings.Contains(out, "Deleted") {
			t.Errorf("reset did not report what it removed:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
		nethost.Reap()
		if procs := h.Processes(); len(procs) != 0 {
			t.Errorf("processes left after reset: %v", procs)
		}
		if files := listAll(h.Root); len(files) != 0 {
			t.Errorf("left under the root prefix: %v", files)
		}
		out = kb(t, h, "reset", "--force")
		if !strings.Contains(out, "Nothing to remove") {
			t.Errorf("second reset was not a no-op:\n%s", out)
		}
	})
}
