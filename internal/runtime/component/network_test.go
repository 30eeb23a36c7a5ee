package component

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// The engines run from the helpers under the node's root, with every path
// they write under it, and are probed on their /readyz.
func TestNetworkSpecs(t *testing.T) {
	cfg, err := config.InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg.Init.NodeRegistration.Name = "w1"
	cfg.Init.LocalAPIEndpoint.AdvertiseAddress = "10.207.0.4"
	cfg.Cluster.Networking.PodSubnet = "10.244.0.0/16,fd00:10:244::/56"
	cfg.PodNetwork = config.PodNetwork{Backend: config.BackendWireGuard, NetworkPolicy: true}
	r := Renderer{Cfg: cfg, FS: fsys.NewRoot(dir)}

	f := r.FlannelSpec()
	if want := filepath.Join(dir, "var/lib/kubeboot/helpers/current/flannel"); f.Exec != want {
		t.Errorf("flannel runs %s, want %s", f.Exec, want)
	}
	for flag, want := range map[string]string{
		"--backend":      "wireguard", // flannel's name for k3s's wireguard-native
		"--mtu-overhead": "80",
		"--node-name":    "w1",
		"--node-ip":      "10.207.0.4",
		"--pod-subnets":  "10.244.0.0/16,fd00:10:244::/56",
		"--kubeconfig":   filepath.Join(dir, "etc/kubernetes/kubelet.conf"),
	} {
		if got := FlagValue(f.Args, flag); got != want {
			t.Errorf("flannel %s=%q, want %q", flag, got, want)
		}
	}
	for _, flag := range []string{"--state-dir", "--cni-conf", "--cni-data-dir"} {
		if v := FlagValue(f.Args, flag); !strings.HasPrefix(v, dir+"/") {
			t.Errorf("flannel %s=%q is not under the node's root %s", flag, v, dir)
		}
	}
	if f.Probe.URL != "http://127.0.0.1:20245/readyz" {
		t.Errorf("flannel probe %s", f.Probe)
	}

	k := r.KubeRouterSpec()
	if FlagValue(k.Args, "--service-subnets") != cfg.Cluster.Networking.ServiceSubnet || FlagValue(k.Args, "--service-node-port-range") != "30000-32767" {
		t.Errorf("kube-router args %v", k.Args)
	}
	if k.Probe.URL != "http://127.0.0.1:20244/readyz" || !strings.HasSuffix(k.Exec, "/helpers/current/kube-router") {
		t.Errorf("kube-router spec %+v", k)
	}
}
