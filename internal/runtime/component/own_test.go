package component

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// A spec of one of kubeboot's own components written before specs carried
// Own (the flags an older kubeboot wrote, literally) reads back as the
// typed configuration today's renderer writes, so that a node made by an
// older kubeboot runs them under a new daemon and reset still finds the
// load balancer's seed and the snapshots' directory.
func TestLegacyOwnSpecs(t *testing.T) {
	cfg, err := config.InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fs := fsys.NewRoot(dir)
	cfg.Init.NodeRegistration.Name = "cp1"
	cfg.Cluster.Networking.PodSubnet = "10.244.0.0/16"
	cfg.Lifecycle.EtcdSnapshotInterval, cfg.Lifecycle.EtcdSnapshotKeep = 6*time.Hour, 5
	cfg.Kubelet = &kubeletv1beta1.KubeletConfiguration{ServerTLSBootstrap: true}
	r := Renderer{Cfg: cfg, FS: fs}
	host := func(p string) string { return filepath.Join(dir, p) }
	legacy := map[string][]string{
		CertRenewer: {"--root", dir, "cert-renewer", "--cert-dir", "/etc/kubernetes/pki", "--encryption-algorithm", "RSA-2048", "--validity", "8760h0m0s", "--renew-before", "2160h0m0s"},
		EtcdSnapshotter: {"--root", dir, "etcd-snapshotter", "--node-name", "cp1", "--cert-dir", "/etc/kubernetes/pki",
			"--interval", "6h0m0s", "--keep", "5", "--dir", config.DefaultEtcdSnapshotDir},
		CAAgent:     {"--root", dir, "ca-agent", "--node-name", "cp1", "--cert-dir", "/etc/kubernetes/pki", "--encryption-algorithm", "RSA-2048", "--validity", "8760h0m0s"},
		CSRApprover: {"--root", dir, "csr-approver", "--kubeconfig", host("etc/kubernetes/controller-manager.conf")},
		APIServerLB: {"--root", dir, "apiserver-lb", "--listen", "127.0.0.1:6444", "--seed", "10.0.0.1:6443",
			"--ca-file", host("etc/kubernetes/pki/ca.crt"), "--kubeconfig", host("etc/kubernetes/kube-proxy.conf")},
	}
	rendered := map[string]Spec{
		CertRenewer: r.CertRenewerSpec(), EtcdSnapshotter: r.EtcdSnapshotterSpec(), CAAgent: r.CAAgentSpec(),
		CSRApprover: r.CSRApproverSpec(), APIServerLB: r.APIServerLBSpec("10.0.0.1:6443"),
		ManifestApplier: r.ManifestApplierSpec(), StorageScaler: r.StorageScalerSpec(), ImageRegistry: r.ImageRegistrySpec(),
	}
	store := Store{FS: fs}
	for _, name := range InDaemon {
		want := rendered[name]
		if err := want.Own.Validate(name); err != nil {
			t.Errorf("rendered %s: %v", name, err)
		}
		if got := strings.Join(want.Args, " "); got != "--root "+dir+" "+name {
			t.Errorf("%s runs by hand as %q", name, got)
		}
		// Written as an older kubeboot did: its flags, no Own (for the
		// components an older kubeboot had).
		old := want
		if args, ok := legacy[name]; ok {
			old.Own, old.Args = nil, args
		}
		b, _ := json.Marshal(old)
		if err := os.MkdirAll(host(node.SpecDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(host(SpecPath(name)), b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, ok, err := store.Get(name)
		if err != nil || !ok {
			t.Fatalf("Get(%s): %v %v", name, ok, err)
		}
		if !reflect.DeepEqual(got.Own, want.Own) {
			gb, _ := json.Marshal(got.Own)
			wb, _ := json.Marshal(want.Own)
			t.Errorf("%s from its old flags:\n got %s\nwant %s", name, gb, wb)
		}
	}
	// An upstream component's spec carries no Own; Load converts too.
	specs, err := store.Load()
	if err != nil || len(specs) != len(InDaemon) {
		t.Fatalf("Load: %d specs, %v", len(specs), err)
	}
	for _, s := range specs {
		if s.Own == nil {
			t.Errorf("Load: %s without its configuration", s.Name)
		}
	}
	if o, err := legacyOwn(Kubelet, []string{"--config=/x"}); o != nil || err != nil {
		t.Errorf("the kubelet's flags read as %+v, %v", o, err)
	}
	if _, err := legacyOwn(CertRenewer, []string{"cert-renewer", "--nope", "1"}); err == nil {
		t.Error("an unknown flag in an old spec: no error")
	}
}

// Validate refuses a configuration of another component, or one without
// what its component cannot run without.
func TestOwnValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		own  *Own
		err  string
	}{
		{CSRApprover, nil, "carries no configuration"},
		{CSRApprover, &Own{}, "carries no configuration"},
		{CSRApprover, &Own{Config: &APIServerLBConfig{Seed: "10.0.0.1:6443"}}, "must carry the configuration of csr-approver only"},
		{Kubelet, &Own{Config: &CSRApproverConfig{Kubeconfig: "/k"}}, "must carry the configuration of kubelet only"},
		{APIServerLB, &Own{Config: &APIServerLBConfig{Seed: "10.0.0.1:6443"}}, "apiserver-lb: seed and caFile required"},
		{CertRenewer, &Own{Config: &CertRenewerConfig{}}, "validity must be positive"},
		{CAAgent, &Own{Config: &CAAgentConfig{NodeName: "n"}}, "validity must be positive"},
		{EtcdSnapshotter, &Own{Config: &EtcdSnapshotterConfig{}}, "interval must be positive"},
		{CSRApprover, &Own{Config: &CSRApproverConfig{Kubeconfig: "/k"}}, ""},
	} {
		err := c.own.Validate(c.name)
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s %+v: %v, want %q", c.name, c.own, err, c.err)
		}
	}
}

// Each own component declares its configuration's type and JSON key once,
// in the table; a spec's JSON is what it was when Own was a struct of one
// pointer per component ({"<key>": {...}}), so specs written before read
// back, and anything else is refused.
func TestOwnJSON(t *testing.T) {
	keys, types := map[string]bool{}, map[reflect.Type]bool{}
	for _, d := range Table {
		if d.Own == nil {
			continue
		}
		c := d.Own.New()
		if keys[d.Own.Key] || types[reflect.TypeOf(c)] || d.Own.Does == "" {
			t.Errorf("%s: its key %q or type %T is another's, or it does nothing", d.Name, d.Own.Key, c)
		}
		keys[d.Own.Key], types[reflect.TypeOf(c)] = true, true
		if k, ok := ownKind(c); !ok || k.Name != d.Name {
			t.Errorf("%T is the configuration of %q, want %s", c, k.Name, d.Name)
		}
	}
	// As a spec of an older kubeboot (with Own a struct) wrote it.
	written := `{"name":"apiserver-lb","args":["--root","/","apiserver-lb"],"own":{"apiServerLB":{"listen":"127.0.0.1:6444","seed":"10.0.0.1:6443","caFile":"/etc/kubernetes/pki/ca.crt"}}}`
	var spec Spec
	if err := json.Unmarshal([]byte(written), &spec); err != nil {
		t.Fatal(err)
	}
	lb := OwnOf[*APIServerLBConfig](spec.Own)
	if lb == nil || lb.Seed != "10.0.0.1:6443" || lb.Listen != "127.0.0.1:6444" || OwnOf[*CAAgentConfig](spec.Own) != nil {
		t.Fatalf("read %+v", spec.Own)
	}
	if err := spec.Own.Validate(APIServerLB); err != nil {
		t.Error(err)
	}
	b, err := json.Marshal(spec.Own)
	if err != nil || !strings.Contains(written, string(b)) {
		t.Errorf("written back as %s (%v), want the member of %s", b, err, written)
	}
	// The keys specs on disk carry, as the struct of pointers named them.
	var declared []string
	for _, d := range Table {
		if d.Own != nil {
			declared = append(declared, d.Own.Key)
		}
	}
	if got, want := strings.Join(slices.Sorted(slices.Values(declared)), " "), "apiServerLB caAgent certRenewer csrApprover etcdSnapshotter imageRegistry manifestApplier storageScaler"; got != want {
		t.Errorf("the declared keys are %s, want %s (specs on disk carry these)", got, want)
	}
	// What does not parse is an error; what this kubeboot does not know
	// (another release's component, two configurations) reads, and only
	// its own spec is refused.
	for in, want := range map[string]string{
		`{"caAgent":{"nodeName":1}}`: "caAgent: json: cannot unmarshal",
		`[]`:                         "cannot unmarshal array",
	} {
		var o Own
		if err := json.Unmarshal([]byte(in), &o); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	for in, want := range map[string]string{
		`{"dnsScaler":{}}`:                `the configuration "dnsScaler", which this kubeboot does not know`,
		`{"caAgent":{},"apiServerLB":{}}`: "2 configurations (apiServerLB, caAgent)",
	} {
		var o Own
		if err := json.Unmarshal([]byte(in), &o); err != nil {
			t.Errorf("%s: %v", in, err)
		}
		if err := o.Validate(CAAgent); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Validate: %v, want %q", in, err, want)
		}
	}
	// A node's spec of such a component does not stop its others from
	// loading (the daemon then refuses that one alone).
	fs := fsys.NewRoot(t.TempDir())
	if err := fs.MkdirAll(node.SpecDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]string{
		"dns-scaler": `{"name":"dns-scaler","args":["--root","/","dns-scaler"],"own":{"dnsScaler":{"kubeconfig":"/k"}}}`,
		CSRApprover:  `{"name":"csr-approver","args":["--root","/","csr-approver"],"own":{"csrApprover":{"kubeconfig":"/k"}}}`,
	} {
		if err := fs.WriteFile(SpecPath(name), []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if specs, err := (Store{FS: fs}).Load(); err != nil || len(specs) != 2 {
		t.Errorf("a spec of another release among the node's: %d specs, %v", len(specs), err)
	}

	// Keys match as a struct's fields did: case aside.
	var folded Own
	if err := json.Unmarshal([]byte(`{"CAAgent":{"nodeName":"n","validity":"1h"}}`), &folded); err != nil || OwnOf[*CAAgentConfig](&folded) == nil {
		t.Errorf("a key in another case: %+v, %v", folded, err)
	}
	// A nil configuration of a declared type is none.
	if err := (&Own{Config: (*CertRenewerConfig)(nil)}).Validate(CertRenewer); err == nil || !strings.Contains(err.Error(), "carries no configuration") {
		t.Errorf("a nil *CertRenewerConfig: %v", err)
	}
	if b, err := json.Marshal(Own{Config: (*CertRenewerConfig)(nil)}); err != nil || string(b) != "{}" {
		t.Errorf("a nil *CertRenewerConfig written as %s, %v", b, err)
	}
	if _, err := json.Marshal(Own{Config: otherConfig{}}); err == nil {
		t.Error("a configuration no component declares: written")
	}
	if b, _ := json.Marshal(Own{}); string(b) != "{}" {
		t.Errorf("an empty Own: %s", b)
	}
}

type otherConfig struct{}

func (otherConfig) Validate() error { return nil }
