package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestLoadJoin(t *testing.T) {
	const hash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	load := func(args ...string) (*Config, error) {
		f := &JoinFlags{}
		fs := pflag.NewFlagSet("join", pflag.ContinueOnError)
		f.AddFlags(fs)
		fs.Bool("dry-run", false, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return LoadJoin(f, fs, fs.Args(), testHost)
	}
	t.Run("token flags, as kubeadm", func(t *testing.T) {
		c, err := load("10.0.0.1:6443", "--token", "abcdef.0123456789abcdef", "--discovery-token-ca-cert-hash", hash, "--node-name", "w1")
		if err != nil {
			t.Fatal(err)
		}
		d := c.Join.Discovery
		if d.BootstrapToken == nil || d.BootstrapToken.APIServerEndpoint != "10.0.0.1:6443" || d.BootstrapToken.Token != "abcdef.0123456789abcdef" ||
			d.TLSBootstrapToken != "abcdef.0123456789abcdef" || len(d.BootstrapToken.CACertHashes) != 1 || d.File != nil {
			t.Errorf("discovery %+v %+v", d, d.BootstrapToken)
		}
		if c.Join.NodeRegistration.Name != "w1" || c.Join.NodeRegistration.CRISocket != DefaultCRISocket || c.Join.ControlPlane != nil {
			t.Errorf("registration %+v", c.Join.NodeRegistration)
		}
		if c.Join.Timeouts == nil || c.Join.Timeouts.Discovery.Duration == 0 {
			t.Errorf("timeouts not defaulted")
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no pin", []string{"10.0.0.1:6443", "--token", "abcdef.0123456789abcdef"}, "caCertHashes"},
		{"bad pin", []string{"10.0.0.1:6443", "--token", "abcdef.0123456789abcdef", "--discovery-token-ca-cert-hash", "md5:12"}, "caCertHashes[0]"},
		{"bad token", []string{"10.0.0.1:6443", "--token", "nope", "--discovery-token-unsafe-skip-ca-verification"}, "discovery.bootstrapToken.token"},
		{"no port", []string{"10.0.0.1", "--token", "abcdef.0123456789abcdef", "--discovery-token-unsafe-skip-ca-verification"}, "host:port"},
		{"nothing", nil, "either discovery.bootstrapToken or discovery.file"},
		{"control-plane flags alone", []string{"10.0.0.1:6443", "--token", "abcdef.0123456789abcdef", "--discovery-token-unsafe-skip-ca-verification", "--certificate-key", "ab"}, "add --control-plane"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
	t.Run("config file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "join.yaml")
		os.WriteFile(f, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    token: abcdef.0123456789abcdef\n    apiServerEndpoint: 10.0.0.1:6443\n    caCertHashes: ["+hash+"]\n  tlsBootstrapToken: abcdef.0123456789abcdef\n"), 0o644)
		c, err := load("--config", f, "--node-name", "w2")
		if err != nil {
			t.Fatal(err)
		}
		if c.Join.NodeRegistration.Name != "w2" || c.Join.Discovery.BootstrapToken.APIServerEndpoint != "10.0.0.1:6443" {
			t.Errorf("%+v", c.Join)
		}
		if _, err := load("--config", f, "10.0.0.2:6443"); err == nil || !strings.Contains(err.Error(), "both as an argument and by --config") {
			t.Errorf("endpoint twice: %v", err)
		}
		if _, err := load("--config", f, "--token", "abcdef.0123456789abcdef"); err == nil || !strings.Contains(err.Error(), "can not mix '--config'") {
			t.Errorf("mixed: %v", err)
		}
	})
}
