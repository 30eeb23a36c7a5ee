package node

import (
	"path"
	"testing"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
)

// The node's layout keeps kubeadm's paths where kubeadm has them, so that
// kubeadm's tools and users' habits find the files.
func TestLayoutIsKubeadms(t *testing.T) {
	for _, c := range []struct{ name, ours, kubeadms string }{
		{"KubernetesDir", KubernetesDir, kubeadmconstants.KubernetesDir},
		{"AdminKubeconfig", AdminKubeconfig, path.Join(kubeadmconstants.KubernetesDir, kubeadmconstants.AdminKubeConfigFileName)},
		{"ManifestsDir", ManifestsDir, path.Join(kubeadmconstants.KubernetesDir, kubeadmconstants.ManifestsSubDirName)},
		{"KubeletConfig", KubeletConfig, path.Join(kubeadmconstants.KubeletRunDirectory, kubeadmconstants.KubeletConfigurationFileName)},
	} {
		if c.ours != c.kubeadms {
			t.Errorf("%s is %s, kubeadm's is %s", c.name, c.ours, c.kubeadms)
		}
	}
}
