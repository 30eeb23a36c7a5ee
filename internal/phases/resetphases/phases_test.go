package resetphases

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	etcdutil "k8s.io/kubernetes/cmd/kubeadm/app/util/etcd"

	"github.com/kubeboot/kubeboot/pkg/component"
	"github.com/kubeboot/kubeboot/pkg/config"
	"github.com/kubeboot/kubeboot/pkg/fsys"
)

// reset says, before it asks, how many scheduled etcd snapshots it removes
// with the node's state; a directory outside that state is not counted.
func TestResetWarnsOfTheSnapshotsItRemoves(t *testing.T) {
	root := fsys.NewRoot(t.TempDir())
	spec := func(dir string) {
		t.Helper()
		if err := (component.Store{FS: root}).Write(component.Spec{Name: component.EtcdSnapshotter, Args: []string{"etcd-snapshotter", "--keep", "3", "--dir", dir}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{config.DefaultEtcdSnapshotDir, "/srv/backups"} {
		root.MkdirAll(dir, 0o700)
		for _, f := range []string{"etcd-cp-20261201T120000Z.snapshot", "etcd-cp-20261201T130000Z.snapshot", "notes.txt"} {
			root.WriteFile(dir+"/"+f, []byte("x"), 0o600)
		}
	}
	spec(config.DefaultEtcdSnapshotDir)
	var out bytes.Buffer
	d := &Data{FS: root, Out: &out, Force: true}
	if err := runPreflight(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if want := "the 2 scheduled etcd snapshots in " + root.Path(config.DefaultEtcdSnapshotDir) + " go with this node's state"; !strings.Contains(out.String(), want) {
		t.Errorf("reset's preflight said:\n%s\nwant %q", out.String(), want)
	}
	spec("/srv/backups")
	out.Reset()
	runPreflight(context.Background(), d)
	if strings.Contains(out.String(), "snapshots") {
		t.Errorf("snapshots outside the node's state were counted:\n%s", out.String())
	}
}

func TestOtherClientURLs(t *testing.T) {
	members := []etcdutil.Member{{Name: "cp1", PeerURL: "https://10.0.0.2:2380"}, {Name: "cp2", PeerURL: "https://10.0.0.3:2380"}, {Name: "cp3", PeerURL: "https://[fd00::4]:2380"}}
	got := otherClientURLs(members, "https://10.0.0.3:2380")
	if want := []string{"https://10.0.0.2:2379", "https://[fd00::4]:2379"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
