package component

import (
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/pkg/config"
)

func TestOrder(t *testing.T) {
	specs := []Spec{{Name: "kube-scheduler", After: []string{"kube-apiserver"}}, {Name: "kube-apiserver", After: []string{"etcd"}}, {Name: "etcd"}, {Name: "kubelet", After: []string{"containerd"}}, {Name: "containerd"}}
	out, err := Order(specs)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, s := range out {
		pos[s.Name] = i
	}
	for _, s := range specs {
		for _, d := range s.After {
			if pos[d] > pos[s.Name] {
				t.Errorf("%s comes before its dependency %s: %v", s.Name, d, out)
			}
		}
	}
	if _, err := Order([]Spec{{Name: "a", After: []string{"b"}}, {Name: "b", After: []string{"a"}}}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle not reported: %v", err)
	}
}

func TestArgsOverride(t *testing.T) {
	a := &Args{}
	a.Set("b", "1")
	a.Set("a", "2")
	a.Set("b", "3")
	if got := strings.Join(a.List(), " "); got != "--a=2 --b=3" {
		t.Errorf("got %q", got)
	}
}

// The daemon stops components in reverse Order. The API server starts
// without waiting for etcd, but must stop before it (without etcd its
// shutdown hangs until it is killed, 20 s later): whatever other
// components the configuration adds, etcd comes first. With
// serverTLSBootstrap, csr-approver (After the API server, and sorted
// before etcd by name) once put the API server first.
func TestOrderStopsTheAPIServerBeforeEtcd(t *testing.T) {
	for _, tls := range []bool{false, true} {
		cfg, err := config.InitDefaults()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Kubelet = &kubeletv1beta1.KubeletConfiguration{ServerTLSBootstrap: tls}
		r := Renderer{Cfg: cfg, FS: fsys.NewRoot("/tmp/node")}
		specs := append(r.Specs(RoleControlPlane), r.LocalEtcd())
		out, err := Order(specs)
		if err != nil {
			t.Fatal(err)
		}
		at := map[string]int{}
		var names []string
		for i, s := range out {
			at[s.Name] = i
			names = append(names, s.Name)
		}
		if _, ok := at[CSRApprover]; ok != tls {
			t.Fatalf("serverTLSBootstrap %v: components %v", tls, names)
		}
		if at[Etcd] > at[APIServer] {
			t.Errorf("serverTLSBootstrap %v: order %v starts etcd after the API server, so stops it first", tls, names)
		}
	}
}

// The kubelet's name is read from its spec's "--hostname-override=", and
// either form of a flag is understood.
func TestFlagValue(t *testing.T) {
	args := []string{"--root", "/r", "apiserver-lb", "--listen", "127.0.0.1:6444", "--seed", "10.0.0.1:6443", "--hostname-override=w1"}
	for name, want := range map[string]string{"--seed": "10.0.0.1:6443", "--hostname-override": "w1", "--ca-file": "", "--listen": "127.0.0.1:6444"} {
		if got := FlagValue(args, name); got != want {
			t.Errorf("FlagValue(%s) = %q, want %q", name, got, want)
		}
	}
	if got := FlagValue([]string{"--seed"}, "--seed"); got != "" {
		t.Errorf("a flag without its value: %q", got)
	}
}

// A control plane alone on loopback: etcd listens once on 127.0.0.1 (twice
// would fail to bind) and the API server's endpoint reconciler, which
// cannot store a loopback address, is off; with any other address both
// are as kubeadm renders them.
func TestLoopbackControlPlane(t *testing.T) {
	for _, tc := range []struct {
		adv, listen   string
		reconcilerOff bool
	}{
		{"127.0.0.1", "https://127.0.0.1:2379", true},
		{"10.0.0.2", "https://127.0.0.1:2379,https://10.0.0.2:2379", false},
	} {
		cfg, err := config.InitDefaults()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Init.LocalAPIEndpoint.AdvertiseAddress = tc.adv
		r := Renderer{Cfg: cfg, FS: fsys.NewRoot("/tmp/node")}
		if got := FlagValue(r.LocalEtcd().Args, "--listen-client-urls"); got != tc.listen {
			t.Errorf("%s: etcd listens on %q, want %q", tc.adv, got, tc.listen)
		}
		if got := FlagValue(r.APIServer().Args, "--endpoint-reconciler-type"); (got == "none") != tc.reconcilerOff {
			t.Errorf("%s: --endpoint-reconciler-type=%q", tc.adv, got)
		}
	}
}
