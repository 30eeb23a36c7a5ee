package node

import (
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/host"
	"github.com/kubeboot/kubeboot/pkg/config"
)

func initConfig(t *testing.T) *config.Config {
	t.Helper()
	c := &config.Config{}
	c.EnsureInit()
	c.Init.LocalAPIEndpoint.AdvertiseAddress = "10.10.0.2"
	if err := c.DefaultInit(config.Host{Hostname: "node-a"}); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestKubeletConfigurationDefaults(t *testing.T) {
	c := initConfig(t)
	k := KubeletConfiguration(c)
	if k.CgroupDriver != "cgroupfs" || k.FailCgroupV1 == nil || *k.FailCgroupV1 {
		t.Errorf("cgroups: driver %q, failCgroupV1 %v", k.CgroupDriver, k.FailCgroupV1)
	}
	if len(k.ClusterDNS) != 1 || k.ClusterDNS[0] != "10.96.0.10" {
		t.Errorf("clusterDNS = %v", k.ClusterDNS)
	}
	if k.ConfigMapAndSecretChangeDetectionStrategy != kubeletv1beta1.TTLCacheChangeDetectionStrategy {
		t.Errorf("configMapAndSecretChangeDetectionStrategy = %q, want Cache", k.ConfigMapAndSecretChangeDetectionStrategy)
	}
	if !k.RotateCertificates || k.Authentication.Anonymous.Enabled == nil || *k.Authentication.Anonymous.Enabled {
		t.Errorf("rotation %v, anonymous %v", k.RotateCertificates, k.Authentication.Anonymous.Enabled)
	}
}

func TestKubeletConfigurationKeepsTheUsersChoices(t *testing.T) {
	c := initConfig(t)
	c.Kubelet = &kubeletv1beta1.KubeletConfiguration{
		ConfigMapAndSecretChangeDetectionStrategy: kubeletv1beta1.WatchChangeDetectionStrategy,
		CgroupDriver: "systemd",
	}
	k := KubeletConfiguration(c)
	if k.ConfigMapAndSecretChangeDetectionStrategy != kubeletv1beta1.WatchChangeDetectionStrategy || k.CgroupDriver != "systemd" {
		t.Errorf("the user's settings were overridden: %q, %q", k.ConfigMapAndSecretChangeDetectionStrategy, k.CgroupDriver)
	}
	b, err := LocalKubeletConfiguration(c, fsys.NewRoot("/tmp/r"), "unix:///run/x.sock", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"configMapAndSecretChangeDetectionStrategy: Watch", "staticPodPath: /tmp/r/etc/kubernetes/manifests", "containerRuntimeEndpoint: unix:///run/x.sock"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, b)
		}
	}
}

// The node's cgroup driver is the document's where it names one, else the
// host's — also for a joining node, whose configuration has no cluster
// part yet at its preflight (a nil Cluster once panicked there).
func TestCgroupDriver(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  *config.Config
		want string
	}{
		{"no configuration", nil, host.CgroupDriver()},
		{"no KubeletConfiguration", &config.Config{}, host.CgroupDriver()},
		{"a document without a driver", &config.Config{Kubelet: &kubeletv1beta1.KubeletConfiguration{}}, host.CgroupDriver()},
		{"a document naming systemd", &config.Config{Kubelet: &kubeletv1beta1.KubeletConfiguration{CgroupDriver: "systemd"}}, "systemd"},
		{"a document naming cgroupfs", &config.Config{Kubelet: &kubeletv1beta1.KubeletConfiguration{CgroupDriver: "cgroupfs"}}, "cgroupfs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := CgroupDriver(c.cfg); got != c.want {
				t.Errorf("CgroupDriver = %q, want %q", got, c.want)
			}
		})
	}
	if c := initConfig(t); KubeletConfiguration(c).CgroupDriver != CgroupDriver(c) {
		t.Errorf("the kubelet's driver %q is not the node's %q", KubeletConfiguration(c).CgroupDriver, CgroupDriver(c))
	}
}
