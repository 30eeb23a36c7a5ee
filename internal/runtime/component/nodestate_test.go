package component

import (
	"os"
	"reflect"
	"testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/nodestate"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// A node made before records were (its specs alone on disk) gives, from
// its components' flags, the facts its record would hold; once it has a
// record, the record is what it gives.
func TestNodeOfANodeWithoutRecord(t *testing.T) {
	cfg, err := config.InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Init.NodeRegistration.Name = "cp1"
	cfg.Init.LocalAPIEndpoint.AdvertiseAddress = "10.207.0.2"
	cfg.Cluster.Networking.PodSubnet = "10.244.0.0/16,fd00:10:244::/56"
	cfg.Cluster.CertificatesDir = "/etc/kubernetes/custom-pki"
	cfg.Cluster.Etcd.Local.DataDir = "/srv/etcd"
	fs := fsys.NewRoot(t.TempDir())
	r := Renderer{Cfg: cfg, FS: fs}
	s := Store{FS: fs}
	for _, sp := range append(r.Specs(RoleControlPlane), r.LocalEtcd(), r.KubeletSpec(), r.FlannelSpec()) {
		if err := s.Write(sp); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Node()
	if err != nil {
		t.Fatal(err)
	}
	want := nodestate.Node{
		Name: "cp1", Role: nodestate.ControlPlane, Addresses: r.NodeIPs(),
		CertificatesDir: "/etc/kubernetes/custom-pki",
		PodSubnets:      []string{"10.244.0.0/16", "fd00:10:244::/56"},
		Etcd:            r.EtcdMember(), Legacy: true,
	}
	if want.Etcd.DataDir != "/srv/etcd" || want.Etcd.Name != "cp1" || want.Etcd.PeerURL != "https://10.207.0.2:2380" {
		t.Fatalf("EtcdMember() = %+v", *want.Etcd)
	}
	got.Components = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Node() of a node without record =\n%+v (etcd %+v), want\n%+v (etcd %+v)", got, got.Etcd, want, want.Etcd)
	}

	rec := nodestate.Node{Name: "cp1-renamed", Role: nodestate.ControlPlane, Version: "v1.37.2"}
	if err := nodestate.Write(fs, rec); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Node(); err != nil || !reflect.DeepEqual(got, rec) {
		t.Errorf("Node() with a record = %+v, %v; want the record %+v", got, err, rec)
	}
	if fi, err := os.Stat(fs.Path(nodestate.File)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the record's mode: %v, %v; want 0600", fi.Mode(), err)
	}
}

// A worker without record: no etcd member, the default certificates dir;
// a node of kubeboot's network agent of before flannel gives its pod
// subnets from that agent's spec.
func TestNodeOfAnOldWorker(t *testing.T) {
	cfg, err := config.InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Init.NodeRegistration.Name = "w1"
	cfg.Init.LocalAPIEndpoint.AdvertiseAddress = "10.207.0.5"
	fs := fsys.NewRoot(t.TempDir())
	r := Renderer{Cfg: cfg, FS: fs}
	if err := (Store{FS: fs}).Write(r.KubeletSpec()); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteFile(SpecPath(RetiredNetAgent), []byte(`{"name":"netagent","own":{"netAgent":{"podSubnets":"10.244.0.0/16"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Store{FS: fs}.Node()
	if err != nil {
		t.Fatal(err)
	}
	want := nodestate.Node{Name: "w1", Role: nodestate.Worker, Addresses: []string{"10.207.0.5"}, CertificatesDir: config.DefaultCertificatesDir,
		PodSubnets: []string{"10.244.0.0/16"}, Components: []string{Kubelet}, Legacy: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Node() = %+v, want %+v", got, want)
	}
}

// The etcd member a snapshot is named for is the record's, and the host's
// name on a node that has none (a worker).
func TestEtcdMember(t *testing.T) {
	fs := fsys.NewRoot(t.TempDir())
	host, _ := os.Hostname()
	if got := (Store{FS: fs}).EtcdMember(); got != host {
		t.Errorf("no record: member %q, want the host name %q", got, host)
	}
	if err := nodestate.Write(fs, nodestate.Node{Name: "cp1", Role: nodestate.Worker}); err != nil {
		t.Fatal(err)
	}
	if got := (Store{FS: fs}).EtcdMember(); got != host {
		t.Errorf("a worker's record: member %q, want the host name %q", got, host)
	}
	n := nodestate.Node{Name: "cp1", Role: nodestate.ControlPlane, Etcd: &nodestate.EtcdMember{Name: "etcd-cp1", DataDir: "/var/lib/etcd", PeerURL: "https://10.0.0.1:2380"}}
	if err := nodestate.Write(fs, n); err != nil {
		t.Fatal(err)
	}
	if got := (Store{FS: fs}).EtcdMember(); got != "etcd-cp1" {
		t.Errorf("a control plane's record: member %q, want etcd-cp1", got)
	}
}
