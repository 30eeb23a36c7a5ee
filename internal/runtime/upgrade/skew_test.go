package upgrade

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

func v(s string) *version.Version { return version.MustParseSemantic(s) }

func TestNodePolicy(t *testing.T) {
	for _, tc := range []struct {
		target, apiserver string
		err               string
	}{
		{"v1.37.2", "v1.37.2", ""},
		{"v1.37.2", "v1.37.3", ""},
		{"v1.34.0", "v1.37.3", ""},
		{"v1.37.3", "v1.37.2", "upgrade the control planes first"},
		{"v1.38.0", "v1.37.2", "upgrade the control planes first"},
		{"v1.33.9", "v1.37.0", "more than 3 minor versions older"},
		{"v2.0.0", "v1.37.0", "another major version"},
	} {
		err := NodePolicy(v(tc.target), v(tc.apiserver))
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("node %s, API server %s: %v, want %q", tc.target, tc.apiserver, err, tc.err)
		}
	}
}

// The control plane's policy is kubeadm's, fed with what kubeboot reads.
func TestControlPlanePolicy(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		cluster, tool, target string
		kubelets              map[string][]string
		mandatory, skippable  string
	}{
		{name: "a patch release", cluster: "v1.37.2", tool: "v1.37.3", target: "v1.37.3", kubelets: map[string][]string{"v1.37.2": {"a", "b"}}},
		{name: "the next minor", cluster: "v1.37.2", tool: "v1.38.0", target: "v1.38.0", kubelets: map[string][]string{"v1.37.2": {"a"}}},
		{name: "two minors at once", cluster: "v1.36.4", tool: "v1.38.0", target: "v1.38.0", mandatory: "can upgrade only 1 minor version at a time"},
		{name: "newer than the binary", cluster: "v1.37.2", tool: "v1.37.3", target: "v1.38.0", mandatory: "at least one minor release higher"},
		{name: "a kubelet too old", cluster: "v1.37.2", tool: "v1.38.0", target: "v1.38.0", kubelets: map[string][]string{"v1.34.1": {"old"}}, skippable: "kubelet"},
		{name: "a release candidate", cluster: "v1.37.2", tool: "v1.38.0-rc.1", target: "v1.38.0-rc.1", skippable: "is an unstable version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, s := ControlPlanePolicy(Getter{Cluster: v(tc.cluster), Tool: v(tc.tool), Kubelets: tc.kubelets}, v(tc.target), false)
			check := func(kind string, errs []error, want string) {
				var all []string
				for _, e := range errs {
					all = append(all, e.Error())
				}
				joined := strings.Join(all, "; ")
				if (want == "") != (len(errs) == 0) || !strings.Contains(joined, want) {
					t.Errorf("%s errors %q, want %q", kind, joined, want)
				}
			}
			check("mandatory", m, tc.mandatory)
			check("skippable", s, tc.skippable)
		})
	}
}
