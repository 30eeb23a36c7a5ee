package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubeboot/kubeboot/cluster"
	"github.com/kubeboot/kubeboot/pkg/config"
)

const hash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// The join command as data: its one line is what `token create
// --print-join-command` prints, its arguments are that line's words, and
// its configuration is what `join` makes of them.
func TestJoinCommand(t *testing.T) {
	j := cluster.JoinCommand{Endpoint: "10.0.0.1:6443", Token: "abcdef.0123456789abcdef", CACertHash: hash}
	want := "kubeboot join 10.0.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash " + hash
	if j.String() != want {
		t.Errorf("String() = %q, want %q", j.String(), want)
	}
	if !slices.Equal(j.Args(), strings.Fields(want)[1:]) {
		t.Errorf("Args() = %q", j.Args())
	}
	c := j.Config()
	c.DefaultJoin(config.Host{Hostname: "w1"})
	if err := c.ValidateKinds(config.KindJoin); err != nil {
		t.Fatalf("the command's configuration does not validate: %v", err)
	}
	if d := c.Join.Discovery; d.BootstrapToken.APIServerEndpoint != j.Endpoint || d.TLSBootstrapToken != j.Token || c.Join.ControlPlane != nil {
		t.Errorf("configuration %+v", c.Join)
	}
	j.ControlPlane, j.CertificateKey = true, strings.Repeat("ab", 32)
	if !strings.HasSuffix(j.String(), " --control-plane --certificate-key "+j.CertificateKey) {
		t.Errorf("control plane: %q", j.String())
	}
	if c := j.Config(); c.Join.ControlPlane == nil || c.Join.ControlPlane.CertificateKey != j.CertificateKey {
		t.Errorf("control plane configuration %+v", c.Join.ControlPlane)
	}
}

// A configuration that cannot work is refused before anything is written,
// and a join without its configuration says what it needs.
func TestRefusedBeforeWriting(t *testing.T) {
	root := t.TempDir()
	c := &config.Config{Init: &kubeadmv1.InitConfiguration{}, Cluster: &kubeadmv1.ClusterConfiguration{}}
	c.Cluster.Networking.PodSubnet = "not-a-cidr"
	_, err := cluster.Init(context.Background(), cluster.InitOptions{Node: cluster.Node{Root: root}, Config: c,
		Runtime: cluster.Runtime{Host: &config.Host{Hostname: "n1", DefaultIP: "10.0.0.1"}, Binary: os.Args[0]}})
	if err == nil || !strings.Contains(err.Error(), "podSubnet") {
		t.Fatalf("a bad pod subnet: %v", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("a refused init wrote %d entries under its root", len(entries))
	}
	_, err = cluster.Init(context.Background(), cluster.InitOptions{Node: cluster.Node{Root: root},
		Runtime: cluster.Runtime{Host: &config.Host{Hostname: "n1", DefaultIP: "10.0.0.1"}, Binary: filepath.Join(root, "missing")}})
	if err == nil || !strings.Contains(err.Error(), "kubeboot binary") {
		t.Fatalf("a missing binary: %v", err)
	}
	if _, err := cluster.Join(context.Background(), cluster.JoinOptions{Node: cluster.Node{Root: root}}); err == nil || !strings.Contains(err.Error(), "JoinConfiguration") {
		t.Fatalf("join without configuration: %v", err)
	}
}
