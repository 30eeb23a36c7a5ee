package etcdbackup

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTar(t *testing.T, files map[string]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.snapshot")
	f, _ := os.Create(p)
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(data))})
		tw.Write([]byte(data))
	}
	tw.Close()
	gz.Close()
	f.Close()
	return p
}

// Read refuses what is not a whole bundle, with a message that says so.
func TestReadRefuses(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain.db")
	os.WriteFile(plain, []byte("an etcd snapshot alone"), 0o600)
	cluster := "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"
	for _, c := range []struct {
		name, file, want string
	}{
		{"an etcdctl snapshot", plain, "is not a kubeboot snapshot"},
		{"no manifest", writeTar(t, map[string]string{configName: cluster, dbName: "db"}), "is not a kubeboot snapshot"},
		{"no etcd data", writeTar(t, map[string]string{manifestName: `{"format":1}`, configName: cluster}), "is incomplete"},
		{"a listed key missing", writeTar(t, map[string]string{manifestName: `{"format":1,"pki":["ca.key"]}`, configName: cluster, dbName: "db"}), "lacks ca.key"},
	} {
		b, err := Read(c.file)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
		if b != nil {
			b.Close()
		}
	}
	b, err := Read(writeTar(t, map[string]string{manifestName: `{"format":1,"pki":["ca.key"]}`, configName: cluster, dbName: "db", pkiPrefix + "ca.key": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if string(b.PKI["ca.key"]) != "k" || b.Config.Cluster == nil {
		t.Errorf("read %+v", b)
	}
	if data, _ := os.ReadFile(b.DB); string(data) != "db" {
		t.Errorf("the snapshot reads %q", data)
	}
}
