package kubeadm

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/kubernetes/cmd/kubeadm/app/componentconfigs"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/addons/proxy"
	kubeletphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/kubelet"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/uploadconfig"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// deliberateConfigMapFields are the fields of the ConfigMaps init stores
// where kubeboot differs from kubeadm on purpose, with kubeboot's value;
// the comments give the reasons.
var deliberateConfigMapFields = map[string]string{
	// kubeboot runs the kubelet itself on hosts without systemd, on
	// cgroup v1 as well (internal/host/node/kubelet.go).
	"kubelet-config/kubelet:cgroupDriver": "cgroupfs",
	"kubelet-config/kubelet:failCgroupV1": "false",
	// Pods' ConfigMaps and Secrets are read with GETs: no 1-2 s back-off
	// of a refused watch (docs/design.md §5).
	"kubelet-config/kubelet:configMapAndSecretChangeDetectionStrategy": "Cache",
	// Conntrack is left as the kernel has it: a node in a network namespace
	// cannot change the host-wide table (internal/host/node/kubeproxy.go).
	"kube-proxy/config.conf:conntrack.maxPerCore":            "0",
	"kube-proxy/config.conf:conntrack.tcpEstablishedTimeout": "0s",
	"kube-proxy/config.conf:conntrack.tcpCloseWaitTimeout":   "0s",
	// Health and metrics on loopback: several nodes may share a machine's
	// addresses, and nothing outside the node needs them.
	"kube-proxy/config.conf:healthzBindAddress": "127.0.0.1:10256",
	"kube-proxy/config.conf:metricsBindAddress": "127.0.0.1:10249",
}

// flatten turns a YAML document into path → value.
func flatten(t *testing.T, doc string) map[string]string {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, sub := range m {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, sub)
			}
			return
		}
		out[prefix] = fmt.Sprint(v)
	}
	walk("", v)
	return out
}

// TestConfigMapsMatchKubeadm: the ConfigMaps init stores (kubeadm-config,
// kubelet-config, kube-proxy) and the RBAC that lets joining nodes read
// them are what upstream kubeadm v1.37.2's own upload-config, kubelet and
// kube-proxy phases store for the same configuration, field by field,
// except the deliberate differences listed above.
func TestConfigMapsMatchKubeadm(t *testing.T) {
	kcfg, err := configutil.BytesToInitConfiguration([]byte(cfgYAML), true)
	if err != nil {
		t.Fatal(err)
	}
	theirs := fake.NewClientset()
	if err := uploadconfig.UploadConfiguration(kcfg, theirs); err != nil {
		t.Fatal(err)
	}
	if err := kubeletphase.CreateConfigMap(&kcfg.ClusterConfiguration, theirs); err != nil {
		t.Fatal(err)
	}
	if err := proxy.EnsureProxyAddon(&kcfg.ClusterConfiguration, &kcfg.LocalAPIEndpoint, theirs, "", io.Discard, false); err != nil {
		t.Fatal(err)
	}

	c, err := config.Parse("test", []byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DefaultInit(config.Host{}); err != nil {
		t.Fatal(err)
	}
	ours := fake.NewClientset()
	ctx := context.Background()
	for _, upload := range []func(context.Context, *fake.Clientset, *config.Config) error{
		func(ctx context.Context, cl *fake.Clientset, c *config.Config) error {
			return bootstrap.UploadKubeadmConfig(ctx, cl, c)
		},
		func(ctx context.Context, cl *fake.Clientset, c *config.Config) error {
			return bootstrap.UploadKubeletConfig(ctx, cl, c)
		},
		func(ctx context.Context, cl *fake.Clientset, c *config.Config) error {
			return bootstrap.UploadKubeProxyConfig(ctx, cl, c)
		},
	} {
		if err := upload(ctx, ours, c); err != nil {
			t.Fatal(err)
		}
	}

	data := func(cl *fake.Clientset) map[string]string {
		cms, err := cl.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, cm := range cms.Items {
			for k, v := range cm.Data {
				out[cm.Name+"/"+k] = v
			}
		}
		return out
	}
	want, got := data(theirs), data(ours)
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) != 4 { // kubeadm-config, kubelet-config, kube-proxy's two keys
		t.Fatalf("kubeadm stored %v", keys)
	}
	for _, k := range keys {
		if _, ok := got[k]; !ok {
			t.Errorf("%s: kubeadm stores it, kubeboot does not", k)
			continue
		}
		w, g := flatten(t, want[k]), flatten(t, got[k])
		for field := range union2(w, g) {
			ours, deliberate := deliberateConfigMapFields[k+":"+field]
			switch {
			case deliberate && g[field] != ours:
				t.Errorf("%s: %s is %q, the deliberate difference is %q", k, field, g[field], ours)
			case !deliberate && w[field] != g[field]:
				t.Errorf("%s: %s is %q in kubeadm's, %q in kubeboot's", k, field, w[field], g[field])
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: kubeboot stores it, kubeadm does not", k)
		}
	}

	// The RBAC that lets joining nodes read them.
	rbac := func(cl *fake.Clientset) []string {
		var out []string
		roles, _ := cl.RbacV1().Roles("kube-system").List(ctx, metav1.ListOptions{})
		for _, r := range roles.Items {
			out = append(out, fmt.Sprintf("role %s %v", r.Name, r.Rules))
		}
		rbs, _ := cl.RbacV1().RoleBindings("kube-system").List(ctx, metav1.ListOptions{})
		for _, r := range rbs.Items {
			var subjects []string
			for _, s := range r.Subjects { // an empty APIGroup means rbac's for groups and users
				subjects = append(subjects, s.Kind+":"+s.Name)
			}
			sort.Strings(subjects)
			out = append(out, fmt.Sprintf("rolebinding %s %s/%s %v", r.Name, r.RoleRef.Kind, r.RoleRef.Name, subjects))
		}
		crbs, _ := cl.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
		for _, r := range crbs.Items {
			out = append(out, fmt.Sprintf("clusterrolebinding %s %s/%s %v", r.Name, r.RoleRef.Kind, r.RoleRef.Name, r.Subjects))
		}
		sort.Strings(out)
		return out
	}
	if w, g := rbac(theirs), rbac(ours); !reflect.DeepEqual(w, g) {
		t.Errorf("RBAC differs:\nkubeadm:  %s\nkubeboot: %s", strings.Join(w, "\n          "), strings.Join(g, "\n          "))
	}
}

func union2(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// deliberateKubeletFileFields are the fields of the kubelet's config.yaml
// where kubeboot differs from what kubeadm writes for the same
// configuration, besides the cluster-wide ones above; "*" means any value
// (it depends on the node).
var deliberateKubeletFileFields = map[string]string{
	// Each node's pods under a cgroup of its own, their logs under its
	// root: several nodes share one machine (docs/design.md §8).
	"cgroupRoot": "*",
	"podLogsDir": "/var/log/pods",
	// The FlexVolume directory is named explicitly, under the root prefix.
	"volumePluginDir": "/usr/libexec/kubernetes/kubelet-plugins/volume/exec",
}

// TestKubeletConfigFileMatchesKubeadm: the kubelet's
// /var/lib/kubelet/config.yaml is what kubeadm v1.37.2's kubelet phase
// writes for the same configuration and CRI endpoint (root "/").
func TestKubeletConfigFileMatchesKubeadm(t *testing.T) {
	const cri = "unix:///run/containerd/containerd.sock"
	kcfg, err := configutil.BytesToInitConfiguration([]byte(cfgYAML), true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kcfg.ComponentConfigs[componentconfigs.KubeletGroup].Get().(*kubeletconfig.KubeletConfiguration).ContainerRuntimeEndpoint = cri
	if err := kubeletphase.WriteInstanceConfigToDisk(&kubeletconfig.KubeletConfiguration{ContainerRuntimeEndpoint: cri}, dir); err != nil {
		t.Fatal(err)
	}
	if err := kubeletphase.WriteConfigToDisk(&kcfg.ClusterConfiguration, dir, "", io.Discard); err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse("test", []byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DefaultInit(config.Host{}); err != nil {
		t.Fatal(err)
	}
	ours, err := node.LocalKubeletConfiguration(c, fsys.NewRoot("/"), cri, "")
	if err != nil {
		t.Fatal(err)
	}
	w, g := flatten(t, string(theirs)), flatten(t, string(ours))
	for field := range union2(w, g) {
		want, deliberate := deliberateConfigMapFields["kubelet-config/kubelet:"+field]
		if !deliberate {
			want, deliberate = deliberateKubeletFileFields[field]
		}
		switch {
		case deliberate && want != "*" && g[field] != want:
			t.Errorf("%s is %q, the deliberate difference is %q", field, g[field], want)
		case !deliberate && w[field] != g[field]:
			t.Errorf("%s is %q in kubeadm's config.yaml, %q in kubeboot's", field, w[field], g[field])
		}
	}
}
