package resetphases

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/pkg/config"
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

// TestDeleteNodeRetries: an API server that fails the Node's deletion a
// few times (a slow one, or one that restarts) gets it at a later try,
// within the bound; one that never answers is given up on at the bound
// with its last error.
func TestDeleteNodeRetries(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}}
	failing := func(failures int) (*fake.Clientset, *int) {
		c := fake.NewClientset(node)
		tries := 0
		c.PrependReactor("delete", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			tries++
			if tries <= failures {
				return true, nil, errors.New("the server is currently unable to handle the request")
			}
			return false, nil, nil
		})
		return c, &tries
	}
	r := retry{backoff: wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 6}, try: time.Second, bound: 5 * time.Second}
	var out bytes.Buffer
	d := &Data{Out: &out}
	c, tries := failing(3)
	if err := d.deleteNodeFrom(context.Background(), "w1", []apiServer{{host: "https://10.0.0.1:6443", client: c}}, r); err != nil || *tries != 4 {
		t.Errorf("after 3 failures: %v, %d tries", err, *tries)
	}
	if _, err := c.CoreV1().Nodes().Get(context.Background(), "w1", metav1.GetOptions{}); err == nil {
		t.Error("the Node is still there")
	}
	if !strings.Contains(out.String(), `Deleted Node "w1"`) {
		t.Errorf("output: %s", out.String())
	}
	// The second way to the API server, when the first never answers.
	dead, _ := failing(100)
	c, tries = failing(1)
	if err := d.deleteNodeFrom(context.Background(), "w1", []apiServer{{client: dead}, {host: "https://10.0.0.2:6443", client: c}}, r); err != nil || *tries != 2 {
		t.Errorf("through the second server: %v, %d tries", err, *tries)
	}
	// Never: the bound ends it, with the error.
	c, tries = failing(1000)
	start := time.Now()
	err := d.deleteNodeFrom(context.Background(), "w1", []apiServer{{client: c}}, r)
	if err == nil || !strings.Contains(err.Error(), "unable to handle") || *tries != 6 || time.Since(start) > r.bound {
		t.Errorf("a server that never deletes it: %v after %d tries, %s", err, *tries, time.Since(start))
	}
}
