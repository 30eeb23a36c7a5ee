package renewal

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/pkg/config"
)

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		renewBefore, validity, want time.Duration
	}{
		{DefaultRenewBefore, 365 * 24 * time.Hour, DefaultRenewBefore},
		{DefaultRenewBefore, 24 * time.Hour, 8 * time.Hour},
		{DefaultRenewBefore, 2 * time.Minute, 40 * time.Second},
		{time.Hour, 0, time.Hour},
	} {
		if got := Window(tc.renewBefore, tc.validity); got != tc.want {
			t.Errorf("Window(%s, %s) = %s, want %s", tc.renewBefore, tc.validity, got, tc.want)
		}
	}
}

// controlPlane makes a control plane's certificates and kubeconfigs, valid for
// validity from t0.
func controlPlane(t *testing.T, validity time.Duration, t0 time.Time) (fsys.Root, *config.Config) {
	t.Helper()
	c := &config.Config{}
	c.EnsureInit()
	c.Init.LocalAPIEndpoint.AdvertiseAddress = "10.10.0.2"
	c.Cluster.CertificateValidityPeriod = &metav1.Duration{Duration: validity}
	if err := c.DefaultInit(config.Host{Hostname: "cp"}); err != nil {
		t.Fatal(err)
	}
	c.Cluster.EncryptionAlgorithm = "ECDSA-P256"
	fs := fsys.NewRoot(t.TempDir())
	gen := &pki.Generator{FS: fs, Cfg: c, Now: func() time.Time { return t0 }}
	if err := gen.EnsureAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := (&kubeconfig.Writer{FS: fs, Cfg: c, PKI: gen}).EnsureAll(); err != nil {
		t.Fatal(err)
	}
	return fs, c
}

func TestOnceRenewsWhatIsDue(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	fs, c := controlPlane(t, 2*time.Minute, t0)
	var logs []string
	now := t0.Add(30 * time.Second)
	r := New(fs, c.Cluster.CertificatesDir, string(c.Cluster.EncryptionAlgorithm), 2*time.Minute, DefaultRenewBefore, func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
	r.Now = func() time.Time { return now }
	r.Gen.Now = r.Now

	before := r.items()
	// 7 leaves (etcd's included) and 5 kubeconfigs with an embedded
	// certificate (kubelet.conf is the kubelet's to rotate).
	if len(before) != 12 {
		var names []string
		for _, it := range before {
			names = append(names, it.name)
		}
		t.Fatalf("%d renewable certificates %v, want 12", len(before), names)
	}
	// Not due yet: the next check is when the first enters its window
	// (2 min - 40 s after t0).
	if next := r.Once(); next != 50*time.Second {
		t.Errorf("next check in %s, want 50s", next)
	}
	if len(logs) != 0 {
		t.Fatalf("renewed before the window: %v", logs)
	}

	now = t0.Add(81 * time.Second)
	if next := r.Once(); next != minCheck {
		t.Errorf("after renewals, the next check in %s, want %s", next, minCheck)
	}
	after := r.items()
	byName := map[string]item{}
	for _, it := range before {
		byName[it.name] = it
	}
	for _, it := range after {
		old := byName[it.name]
		if it.cert.SerialNumber.Cmp(old.cert.SerialNumber) == 0 {
			t.Errorf("%s was not renewed", it.name)
			continue
		}
		if !it.cert.NotAfter.Equal(now.Add(2 * time.Minute)) {
			t.Errorf("%s renewed until %s, want %s", it.name, it.cert.NotAfter, now.Add(2*time.Minute))
		}
		if it.cert.Subject.String() != old.cert.Subject.String() || strings.Join(it.cert.DNSNames, ",") != strings.Join(old.cert.DNSNames, ",") {
			t.Errorf("%s changed identity: %s %v, was %s %v", it.name, it.cert.Subject, it.cert.DNSNames, old.cert.Subject, old.cert.DNSNames)
		}
	}
	if len(logs) != 12 || !strings.Contains(logs[0], "[certs] Renewed apiserver, which was to expire at") {
		t.Errorf("logs %q", logs)
	}
	// Right after: nothing is due until the new ones enter their window.
	logs = nil
	if next := r.Once(); next != 80*time.Second || len(logs) != 0 {
		t.Errorf("after the renewal: next %s, logs %v", next, logs)
	}
}

// A certificate that already expires with its CA is not renewed again
// and again: the log says once that the CA is the one to act on.
func TestCappedByTheCA(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	fs, c := controlPlane(t, 2*time.Minute, t0)
	var logs []string
	r := New(fs, c.Cluster.CertificatesDir, string(c.Cluster.EncryptionAlgorithm), 2*time.Minute, DefaultRenewBefore, func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
	// The CAs expire in 10 years: renewing 10 years on from now yields
	// certificates clamped to the CAs' expiry.
	now := t0.Add(10*365*24*time.Hour - 20*time.Second)
	r.Now = func() time.Time { return now }
	r.Gen.Now = r.Now
	r.Once()
	renewed := len(logs)
	logs = nil
	r.Once()
	r.Once()
	capped := 0
	for _, l := range logs {
		if strings.Contains(l, "cannot be renewed further") {
			capped++
		}
	}
	if renewed != 12 || capped != 12 || len(logs) != 12 {
		t.Errorf("first pass logged %d, then %d lines (%d capped): %v", renewed, len(logs), capped, logs)
	}
}
