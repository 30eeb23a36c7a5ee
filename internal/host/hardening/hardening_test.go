package hardening

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/pkg/config"
)

func defaulted(t *testing.T) *config.Config {
	t.Helper()
	c := &config.Config{}
	if err := c.DefaultInit(config.Host{Hostname: "cp1", DefaultIP: "10.0.0.2"}); err != nil {
		t.Fatal(err)
	}
	return c
}

// The files kubeboot writes are read by the API server's own loaders.
func TestFilesLoadInTheAPIServer(t *testing.T) {
	p, err := policy.LoadPolicyFromBytes(AuditPolicy())
	if err != nil {
		t.Fatalf("the audit policy: %v", err)
	}
	if len(p.Rules) == 0 || p.Rules[len(p.Rules)-1].Level != "Metadata" {
		t.Errorf("the policy does not end with a Metadata catch-all: %+v", p.Rules)
	}
	b, err := NewEncryptionConfig()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), EncryptionConfigName)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ec, err := encryptionconfig.LoadEncryptionConfig(context.Background(), f, false, "test")
	if err != nil {
		t.Fatalf("the encryption configuration: %v\n%s", err, b)
	}
	if len(ec.Transformers) == 0 {
		t.Errorf("no transformer for secrets")
	}
	if !strings.Contains(string(b), "secretbox") {
		t.Errorf("not secretbox:\n%s", b)
	}
	if b2, _ := NewEncryptionConfig(); string(b2) == string(b) {
		t.Error("two encryption configurations share a key")
	}
}

// Apply adds every setting once and keeps what the operator set.
func TestApplyKeepsTheOperatorsSettings(t *testing.T) {
	c := defaulted(t)
	c.Cluster.APIServer.ExtraArgs = []kubeadmv1.Arg{{Name: "audit-log-maxage", Value: "7"}}
	added := Apply(c)
	if slices.ContainsFunc(added, func(s string) bool { return strings.Contains(s, "audit-log-maxage") }) {
		t.Errorf("Apply replaced the operator's audit-log-maxage: %v", added)
	}
	if v, _ := Arg(c.Cluster.APIServer.ExtraArgs, "audit-log-maxage"); v != "7" {
		t.Errorf("audit-log-maxage = %q", v)
	}
	for _, want := range []string{"kube-apiserver: --profiling=false", "kube-controller-manager: --profiling=false", "kube-scheduler: --profiling=false",
		"kube-apiserver: --encryption-provider-config=/etc/kubernetes/pki/encryption-config.yaml",
		"kube-apiserver: --kubelet-certificate-authority=/etc/kubernetes/pki/ca.crt", "kubelet: serverTLSBootstrap=true"} {
		if !slices.Contains(added, want) {
			t.Errorf("Apply did not add %q: %v", want, added)
		}
	}
	if again := Apply(c); len(again) != 0 {
		t.Errorf("a second Apply added %v", again)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("the hardened configuration is invalid: %v", err)
	}
}

// The first control plane gets a new key; a joining one without the
// file is refused with what to do; a file already there is kept.
func TestFiles(t *testing.T) {
	c := defaulted(t)
	Apply(c)
	logf := func(string, ...any) {}
	joining := fsys.NewRoot(t.TempDir())
	err := Files(joining, c, false, logf)
	if err == nil || !strings.Contains(err.Error(), "--certificate-key") {
		t.Fatalf("a joining control plane without the key: %v", err)
	}
	first := fsys.NewRoot(t.TempDir())
	if err := Files(first, c, true, logf); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{node.AuditPolicyFile, EncryptionConfigFile(c)} {
		st, err := os.Stat(first.Path(f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, err, st)
		}
	}
	key, _ := first.ReadFile(EncryptionConfigFile(c))
	if err := Files(first, c, true, logf); err != nil {
		t.Fatal(err)
	}
	if again, _ := first.ReadFile(EncryptionConfigFile(c)); string(again) != string(key) {
		t.Error("an existing encryption configuration was replaced: Secrets written with it would be lost")
	}
}
