package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubeboot/kubeboot/pkg/config"
)

// The flags' mapping onto the configuration, as kubeadm's: defaults,
// --config beside other flags, join's endpoint argument.

var testHost = config.Host{Hostname: "node-a", DefaultIP: "10.10.0.2"}

func TestFlagsAndConfigFile(t *testing.T) {
	newFlags := func(args ...string) (*config.InitFlags, *pflag.FlagSet) {
		f := &config.InitFlags{}
		fs := pflag.NewFlagSet("init", pflag.ContinueOnError)
		addInitConfigFlags(fs, f)
		fs.Bool("dry-run", false, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f, fs
	}
	t.Run("flags only", func(t *testing.T) {
		f, fs := newFlags("--apiserver-advertise-address=10.1.0.5", "--control-plane-endpoint=vip.example.com:8443",
			"--pod-network-cidr=10.244.0.0/16", "--service-cidr=10.112.0.0/16", "--node-name=n1",
			"--apiserver-cert-extra-sans=a.example.com,10.9.9.9", "--token=abcdef.0123456789abcdef", "--token-ttl=2h")
		c, err := config.LoadInit(f, given(fs), testHost)
		if err != nil {
			t.Fatal(err)
		}
		if c.Init.LocalAPIEndpoint.AdvertiseAddress != "10.1.0.5" || c.Cluster.ControlPlaneEndpoint != "vip.example.com:8443" ||
			c.Cluster.Networking.ServiceSubnet != "10.112.0.0/16" || c.Init.NodeRegistration.Name != "n1" ||
			len(c.Cluster.APIServer.CertSANs) != 2 || c.Init.BootstrapTokens[0].Token.String() != "abcdef.0123456789abcdef" ||
			c.Init.BootstrapTokens[0].TTL.Duration.Hours() != 2 {
			t.Errorf("flags not applied: %+v %+v", c.Init, c.Cluster)
		}
	})
	t.Run("generated token and host defaults", func(t *testing.T) {
		f, fs := newFlags()
		c, err := config.LoadInit(f, given(fs), testHost)
		if err != nil {
			t.Fatal(err)
		}
		if c.Init.NodeRegistration.Name != "node-a" || c.Init.LocalAPIEndpoint.AdvertiseAddress != "10.10.0.2" || c.Init.BootstrapTokens[0].Token == nil {
			t.Errorf("dynamic defaults missing: %+v", c.Init)
		}
	})
	t.Run("bad token flag", func(t *testing.T) {
		f, fs := newFlags("--token=nope")
		if _, err := config.LoadInit(f, given(fs), testHost); err == nil || !strings.Contains(err.Error(), "--token") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("config mixed with flags", func(t *testing.T) {
		f, fs := newFlags("--config=/nonexistent", "--pod-network-cidr=10.244.0.0/16")
		_, err := config.LoadInit(f, given(fs), testHost)
		if err == nil || !strings.Contains(err.Error(), "can not mix '--config' with arguments [--pod-network-cidr]") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("config with allowed flags", func(t *testing.T) {
		if err := config.CheckMixedFlags(func() config.Given { _, fs := newFlags("--config=x", "--node-name=n", "--dry-run"); return given(fs) }()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLoadJoin(t *testing.T) {
	const hash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	load := func(args ...string) (*config.Config, error) {
		f := &config.JoinFlags{}
		fs := pflag.NewFlagSet("join", pflag.ContinueOnError)
		addJoinConfigFlags(fs, f)
		fs.Bool("dry-run", false, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return config.LoadJoin(f, given(fs), fs.Args(), testHost)
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
		if c.Join.NodeRegistration.Name != "w1" || c.Join.NodeRegistration.CRISocket != config.DefaultCRISocket || c.Join.ControlPlane != nil {
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
