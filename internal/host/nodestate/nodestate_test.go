package nodestate

import (
	"reflect"
	"testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

func TestWriteRead(t *testing.T) {
	fs := fsys.NewRoot(t.TempDir())
	if _, ok, err := Read(fs); ok || err != nil {
		t.Fatalf("Read of a node without record: ok %v, %v", ok, err)
	}
	n := Node{Name: "cp1", Role: ControlPlane, Addresses: []string{"10.0.0.2", "fd00::2"}, CertificatesDir: "/etc/kubernetes/pki",
		Etcd: &EtcdMember{Name: "cp1", DataDir: "/var/lib/etcd", PeerURL: "https://10.0.0.2:2380"}, Version: "v1.37.2"}
	for _, c := range []string{"etcd", "kubelet", "etcd", "containerd"} {
		n.Add(c)
	}
	if !reflect.DeepEqual(n.Components, []string{"containerd", "etcd", "kubelet"}) || !n.Runs("kubelet") || n.Runs("kube-proxy") {
		t.Fatalf("components %v", n.Components)
	}
	if err := Write(fs, n); err != nil {
		t.Fatal(err)
	}
	got, ok, err := Read(fs)
	if !ok || err != nil || !reflect.DeepEqual(got, n) {
		t.Fatalf("Read = %+v, %v, %v; want %+v", got, ok, err, n)
	}
	if err := fs.WriteFile(File, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Read(fs); err == nil {
		t.Error("Read of a broken record: no error")
	}
}
