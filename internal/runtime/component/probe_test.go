package component

import (
	"slices"
	"testing"

	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// TestProbesAndPortsFollowTheFinalFlags: a secure-port, bind-address or
// etcd URL given in extraArgs moves the readiness probe and the ports
// preflight checks with it (they were constants, and wait-control-plane
// then timed out).
func TestProbesAndPortsFollowTheFinalFlags(t *testing.T) {
	cfg, err := config.InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	r := Renderer{Cfg: cfg, FS: fsys.NewRoot("/tmp/node")}
	check := func(s Spec, url, tcp string, ports ...int) {
		t.Helper()
		if s.Probe.URL != url || s.Probe.TCP != tcp || !slices.Equal(s.Ports, ports) {
			t.Errorf("%s: probe %q tcp %q ports %v; want %q %q %v", s.Name, s.Probe.URL, s.Probe.TCP, s.Ports, url, tcp, ports)
		}
	}
	// kubeadm's defaults.
	check(r.APIServer(), "https://127.0.0.1:6443/readyz", "", 6443)
	check(r.ControllerManager(), "https://127.0.0.1:10257/healthz", "", 10257)
	check(r.Scheduler(), "https://127.0.0.1:10259/healthz", "", 10259)
	check(r.LocalEtcd(), "http://127.0.0.1:2381/readyz", "127.0.0.1:2379", 2379, 2380)

	cfg.Cluster.APIServer.ExtraArgs = []kubeadmv1.Arg{{Name: "secure-port", Value: "16443"}, {Name: "bind-address", Value: "0.0.0.0"}}
	cfg.Cluster.ControllerManager.ExtraArgs = []kubeadmv1.Arg{{Name: "secure-port", Value: "11257"}, {Name: "bind-address", Value: "10.0.0.5"}}
	cfg.Cluster.Scheduler.ExtraArgs = []kubeadmv1.Arg{{Name: "bind-address", Value: "::"}}
	cfg.Cluster.Etcd.Local.ExtraArgs = []kubeadmv1.Arg{
		{Name: "listen-metrics-urls", Value: "http://0.0.0.0:12381"},
		{Name: "listen-client-urls", Value: "https://10.0.0.5:12379,https://127.0.0.1:12379"},
		{Name: "listen-peer-urls", Value: "https://10.0.0.5:12380"},
	}
	check(r.APIServer(), "https://127.0.0.1:16443/readyz", "", 16443)
	check(r.ControllerManager(), "https://10.0.0.5:11257/healthz", "", 11257)
	check(r.Scheduler(), "https://[::1]:10259/healthz", "", 10259)
	check(r.LocalEtcd(), "http://127.0.0.1:12381/readyz", "127.0.0.1:12379", 12379, 12380)

	var names []string
	for _, c := range PortChecks([]Spec{r.APIServer(), r.ControllerManager(), {Ports: []int{16443}}}) {
		names = append(names, c.Name)
	}
	if want := []string{"Port-16443", "Port-11257"}; !slices.Equal(names, want) {
		t.Errorf("port checks %v, want %v", names, want)
	}
}

// TestExtraArgsPathsAreNodePaths: an absolute path in extraArgs names a
// file of the node, under the root prefix like every other path; other
// values are kept as they are. The audit log's directory is made 0700.
func TestExtraArgsPathsAreNodePaths(t *testing.T) {
	cfg, err := config.InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	r := Renderer{Cfg: cfg, FS: fsys.NewRoot("/tmp/node")}
	cfg.Cluster.APIServer.ExtraArgs = []kubeadmv1.Arg{
		{Name: "audit-log-path", Value: "/var/log/kubernetes/audit/audit.log"},
		{Name: "audit-policy-file", Value: "/etc/kubernetes/audit-policy.yaml"},
		{Name: "oidc-issuer-url", Value: "https://issuer.example/"},
		{Name: "feature-gates", Value: "A=true,B=false"},
		{Name: "audit-log-maxage", Value: "30"},
	}
	cfg.Init.NodeRegistration.KubeletExtraArgs = []kubeadmv1.Arg{{Name: "resolv-conf", Value: "/etc/kubeboot-resolv.conf"}}
	api := r.APIServer()
	for _, want := range []string{"--audit-log-path=/tmp/node/var/log/kubernetes/audit/audit.log", "--audit-policy-file=/tmp/node/etc/kubernetes/audit-policy.yaml",
		"--oidc-issuer-url=https://issuer.example/", "--feature-gates=A=true,B=false", "--audit-log-maxage=30"} {
		if !slices.Contains(api.Args, want) {
			t.Errorf("kube-apiserver lacks %s: %v", want, api.Args)
		}
	}
	if want := (Dir{Path: "/tmp/node/var/log/kubernetes/audit", Mode: 0o700}); !slices.Contains(api.Dirs, want) {
		t.Errorf("kube-apiserver's dirs %v lack %v", api.Dirs, want)
	}
	if k := r.KubeletSpec(); !slices.Contains(k.Args, "--resolv-conf=/tmp/node/etc/kubeboot-resolv.conf") {
		t.Errorf("kubelet: %v", k.Args)
	}
}
