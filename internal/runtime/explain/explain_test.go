package explain

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Every file init writes is explained from its content: the
// certificates, the kubeconfigs and the specs, through the real writers.
func TestInitFilesExplained(t *testing.T) {
	cfg, err := config.InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	fs := &FS{FS: fsys.NewRoot(t.TempDir()), Out: &out}
	g := &pki.Generator{FS: fs, Cfg: cfg, Out: &bytes.Buffer{}}
	for _, s := range pki.List(cfg) {
		if err := g.Ensure(s); err != nil {
			t.Fatal(err)
		}
	}
	w := &kubeconfig.Writer{FS: fs, Cfg: cfg, PKI: g, Out: &bytes.Buffer{}}
	for _, s := range kubeconfig.List(cfg) {
		if err := w.Ensure(s); err != nil {
			t.Fatal(err)
		}
	}
	r := component.Renderer{Cfg: cfg, FS: fs}
	if err := (component.Store{FS: fs}).Write(r.APIServer()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"pki/ca.crt (mode 0644): CA \"kubernetes\"",
		"pki/ca.key (mode 0600): the private key of the certificate next to it; readable by root only",
		"pki/apiserver-kubelet-client.crt (mode 0644): identity CN=kube-apiserver-kubelet-client, signed by \"kubernetes\", for client authentication",
		"scheduler.conf (mode 0600): kubeconfig of CN=system:kube-scheduler for https://1.2.3.4:6443",
		"kube-apiserver.json (mode 0600): the node daemon runs kube-apiserver, listening on ports [6443], ready when https://127.0.0.1:6443/readyz answers",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		if strings.HasSuffix(l, " bytes") {
			t.Errorf("a file without explanation: %s", l)
		}
	}
}

func TestResetExplained(t *testing.T) {
	var out bytes.Buffer
	w := Reset(&out, "/n/root")
	fmt.Fprint(w, "[reset] Deleted /n/root/var/lib/etcd\n[reset] Stopping\n[reset] Deleted /var/log/containers/x_y.log\n")
	want := "[reset] Deleted /n/root/var/lib/etcd\n" + Prefix + "etcd's data: this member's copy of every object of the cluster\n[reset] Stopping\n" +
		"[reset] Deleted /var/log/containers/x_y.log\n" + Prefix + "links to this node's container logs (a machine-wide directory: only this node's entries)\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
