package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/api/wire"
	"github.com/kubeboot/kubeboot/internal/base/version"
)

// TestAPIAnswers: the binary's side of the Go API, on requests refused
// before anything is written: another protocol version, and documents
// kubeadm's validation refuses, which come back with the document, its
// line and kind, and the field.
func TestAPIAnswers(t *testing.T) {
	var log bytes.Buffer
	s := Streams{Out: &log, Err: &log}
	r := answer(context.Background(), s, nil, wire.Request{APIVersion: "api.kubeboot.io/v0", Init: &wire.InitRequest{}})
	if r.APIVersion != wire.APIVersion || r.Binary.Kubernetes != version.Kubernetes || r.Error == nil || !strings.Contains(r.Error.Message, "api.kubeboot.io/v0") {
		t.Errorf("another version: %+v", r)
	}
	docs := `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
---
# the cluster
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
networking:
  podSubnet: not-a-cidr
`
	r = answer(context.Background(), s, nil, wire.Request{APIVersion: wire.APIVersion, Init: &wire.InitRequest{
		Node: wire.Node{Root: t.TempDir()}, Config: []byte(docs), AdvertiseAddress: "10.0.0.1", NodeName: "n",
	}})
	e := r.Error
	if e == nil || r.Init != nil {
		t.Fatalf("invalid documents: %+v", r)
	}
	if e.Document != 2 || e.Kind != "ClusterConfiguration" || e.Line != 4 || len(e.Fields) == 0 || e.Fields[0] != "networking.podSubnet" {
		t.Errorf("invalid documents: %+v", e)
	}
}

// TestAPIRefusesDocuments: documents meant for another command, and a join
// given its cluster twice, are refused before anything is written.
func TestAPIRefusesDocuments(t *testing.T) {
	var log bytes.Buffer
	s := Streams{Out: &log, Err: &log}
	kubelet := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	r := answer(context.Background(), s, nil, wire.Request{APIVersion: wire.APIVersion, Init: &wire.InitRequest{
		Node: wire.Node{Root: t.TempDir()}, Config: []byte(kubelet), AdvertiseAddress: "10.0.0.1",
	}})
	if r.Error == nil || !strings.Contains(r.Error.Message, "no InitConfiguration or ClusterConfiguration") {
		t.Errorf("init with a KubeletConfiguration alone: %+v", r.Error)
	}
	r = answer(context.Background(), s, nil, wire.Request{APIVersion: wire.APIVersion, Join: &wire.JoinRequest{
		Node: wire.Node{Root: t.TempDir()}, Config: []byte(kubelet),
	}})
	if r.Error == nil || !strings.Contains(r.Error.Message, "no JoinConfiguration") {
		t.Errorf("join with a KubeletConfiguration alone: %+v", r.Error)
	}
	r = answer(context.Background(), s, nil, wire.Request{APIVersion: wire.APIVersion, Join: &wire.JoinRequest{
		Node: wire.Node{Root: t.TempDir()}, Config: []byte(kubelet), Command: &wire.JoinCommand{Endpoint: "10.0.0.1:6443"},
	}})
	if r.Error == nil || !strings.Contains(r.Error.Message, "in one place") {
		t.Errorf("join given its cluster twice: %+v", r.Error)
	}
}

// TestAPIOperationsRefused: token, upgrade and restore requests reach
// their operations, which refuse what they lack before anything changes.
func TestAPIOperationsRefused(t *testing.T) {
	var log bytes.Buffer
	s := Streams{Out: &log, Err: &log}
	for _, tc := range []struct {
		name string
		req  wire.Request
		want string
	}{
		{"restore without its node", wire.Request{Restore: &wire.RestoreRequest{Node: wire.Node{Root: t.TempDir()}, Snapshot: "/nonexistent"}}, "required"},
		{"token without a cluster", wire.Request{CreateToken: &wire.CreateTokenRequest{Kubeconfig: "/nonexistent/admin.conf"}}, "/nonexistent/admin.conf"},
		{"bad token", wire.Request{CreateToken: &wire.CreateTokenRequest{Kubeconfig: "/nonexistent/admin.conf", Token: "nope"}}, "nope"},
		{"upgrade of a node with nothing", wire.Request{Upgrade: &wire.UpgradeRequest{Node: wire.Node{Root: t.TempDir()}, Binary: "/nonexistent/kubeboot"}}, "not a running kubeboot node"},
		{"two operations", wire.Request{Init: &wire.InitRequest{}, Reset: &wire.ResetRequest{}}, "2 operations"},
		{"no operation", wire.Request{}, "0 operations"},
		{"reset ignoring checks", wire.Request{Reset: &wire.ResetRequest{Node: wire.Node{IgnorePreflightErrors: []string{"all"}}}}, "reset and upgrade take none"},
	} {
		tc.req.APIVersion = wire.APIVersion
		r := answer(context.Background(), s, nil, tc.req)
		if r.Error == nil || !strings.Contains(r.Error.Message, tc.want) {
			t.Errorf("%s: got %+v, want an error naming %q", tc.name, r.Error, tc.want)
		}
	}
}
