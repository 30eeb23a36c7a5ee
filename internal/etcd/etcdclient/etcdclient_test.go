package etcdclient

import (
	"slices"
	"testing"

	etcdutil "k8s.io/kubernetes/cmd/kubeadm/app/util/etcd"
)

func TestOthersClientURLs(t *testing.T) {
	members := []etcdutil.Member{{Name: "cp1", PeerURL: "https://10.0.0.2:2380"}, {Name: "cp2", PeerURL: "https://10.0.0.3:2380"}, {Name: "cp3", PeerURL: "https://[fd00::4]:2380"}}
	got := OthersClientURLs(members, "https://10.0.0.3:2380")
	if want := []string{"https://10.0.0.2:2379", "https://[fd00::4]:2379"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if Local != "https://127.0.0.1:2379" {
		t.Errorf("the local member at %s", Local)
	}
}

func TestNoCertificate(t *testing.T) {
	if _, err := Config(t.TempDir(), 0, Local); err == nil {
		t.Error("a certificates dir without the client certificate: no error")
	}
}
