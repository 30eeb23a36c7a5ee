package kubectli18n

import "testing"

func TestIsKubectl(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"/usr/local/bin/kubectl", "get", "pods"}, true},
		{[]string{"kubeboot", "kubectl", "get"}, true},
		{[]string{"kube-apiserver", "--secure-port=6443"}, false},
		{[]string{"kubeboot", "init", "kubectl"}, false},
	} {
		if got := IsKubectl(c.args); got != c.want {
			t.Errorf("IsKubectl(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
