package resetphases

import (
	"bytes"
	"context"
	"strings"
	"testing"

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
