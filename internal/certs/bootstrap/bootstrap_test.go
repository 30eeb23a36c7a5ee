package bootstrap

import (
	"bytes"
	"context"
	"encoding/hex"
	"path"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/hardening"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// TestCertsRoundTrip uploads the shared keys as init --upload-certs does
// and downloads them as a joining control plane does, through kubeadm's
// own encryption: the right key gets every file back, a wrong key and an
// expired Secret are refused with what to do.
func TestCertsRoundTrip(t *testing.T) {
	c := &config.Config{}
	if err := c.DefaultInit(config.Host{Hostname: "cp", DefaultIP: "10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	fs := fsys.NewRoot(t.TempDir())
	for _, f := range controlPlaneCertFiles {
		if err := fs.WriteFile(path.Join(c.Cluster.CertificatesDir, f), []byte("content of "+f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k, err := NewCertificateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := hex.DecodeString(k)
	if len(key) != 32 {
		t.Fatalf("key of %d bytes, want 32 (AES-256)", len(key))
	}
	client := fake.NewClientset()
	ctx := context.Background()
	if err := UploadCerts(ctx, client, fs, c, k); err != nil {
		t.Fatal(err)
	}
	s, err := client.CoreV1().Secrets("kube-system").Get(ctx, KubeadmCertsSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range s.Data {
		if bytes.Contains(v, []byte("content of")) {
			t.Errorf("%s is stored in clear", name)
		}
	}
	files, err := DownloadCerts(ctx, client, c, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(controlPlaneCertFiles) {
		t.Fatalf("downloaded %d files, want %d", len(files), len(controlPlaneCertFiles))
	}
	for _, f := range files {
		if string(f.Data) != "content of "+f.Name {
			t.Errorf("%s: %q", f.Name, f.Data)
		}
		if strings.HasSuffix(f.Name, ".key") && f.Mode != 0o600 {
			t.Errorf("%s: mode %v", f.Name, f.Mode)
		}
	}
	// With --hardened, the key of Secrets at rest travels with them.
	enc := path.Join(c.Cluster.CertificatesDir, hardening.EncryptionConfigName)
	if err := fs.WriteFile(enc, []byte("content of "+hardening.EncryptionConfigName), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := UploadCerts(ctx, client, fs, c, k); err != nil {
		t.Fatal(err)
	}
	if files, err = DownloadCerts(ctx, client, c, key); err != nil {
		t.Fatal(err)
	}
	if last := files[len(files)-1]; len(files) != len(controlPlaneCertFiles)+1 || last.Name != hardening.EncryptionConfigName ||
		string(last.Data) != "content of "+hardening.EncryptionConfigName || last.Mode != 0o600 {
		t.Errorf("the encryption configuration did not travel: %d files, last %s %q %v", len(files), last.Name, last.Data, last.Mode)
	}
	other, _ := NewCertificateKey()
	okey, _ := hex.DecodeString(other)
	if _, err := DownloadCerts(ctx, client, c, okey); err == nil || !strings.Contains(err.Error(), "not the key the certificates were uploaded with") || !strings.Contains(err.Error(), "kubeboot init phase upload-certs --upload-certs") {
		t.Errorf("wrong key: %v", err)
	}
	client.CoreV1().Secrets("kube-system").Delete(ctx, KubeadmCertsSecret, metav1.DeleteOptions{})
	if _, err := DownloadCerts(ctx, client, c, key); err == nil || !strings.Contains(err.Error(), "deleted 2 hours after the upload") || !strings.Contains(err.Error(), "kubeboot init phase upload-certs --upload-certs") {
		t.Errorf("expired: %v", err)
	}
}
