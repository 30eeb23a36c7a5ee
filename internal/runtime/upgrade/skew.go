package upgrade

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	kubeadmupgrade "k8s.io/kubernetes/cmd/kubeadm/app/phases/upgrade"
)

// MaxKubeletSkew is how many minor versions a kubelet (and kube-proxy)
// may be older than the API server (Kubernetes' version-skew policy,
// kubeadm's MaximumAllowedMinorVersionKubeletSkew).
const MaxKubeletSkew = kubeadmupgrade.MaximumAllowedMinorVersionKubeletSkew

// ControlPlanePolicy is kubeadm's own upgrade policy for a control plane
// going to target: one minor version at a time up or down, not past the
// upgrading tool's own version, no kubelet left more than MaxKubeletSkew
// minors behind. Mandatory errors refuse the upgrade; skippable ones
// refuse it unless forced.
func ControlPlanePolicy(getter kubeadmupgrade.VersionGetter, target *version.Version, allowUnstable bool) (mandatory, skippable []error) {
	errs := kubeadmupgrade.EnforceVersionPolicies(getter, "v"+target.String(), target, allowUnstable, allowUnstable)
	if errs == nil {
		return nil, nil
	}
	return errs.Mandatory, errs.Skippable
}

// NodePolicy checks a node's components going to target against the API
// server's version: a kubelet must not be newer than the API server it
// talks to (so control planes go first; kubeboot holds patch releases to
// it too), nor more than MaxKubeletSkew minors older.
func NodePolicy(target, apiserver *version.Version) error {
	switch {
	case target.Major() != apiserver.Major():
		return fmt.Errorf("the node would run v%s against an API server of v%s: another major version", target, apiserver)
	case target.GreaterThan(apiserver):
		return fmt.Errorf("the node would run v%s, newer than the API server's v%s: upgrade the control planes first (`kubeboot upgrade apply` on one, then `kubeboot upgrade node` on the others)", target, apiserver)
	case target.Minor()+MaxKubeletSkew < apiserver.Minor():
		return fmt.Errorf("the node would run v%s, more than %d minor versions older than the API server's v%s", target, MaxKubeletSkew, apiserver)
	}
	return nil
}

// Getter is a kubeadm VersionGetter from values already read.
type Getter struct {
	Cluster, Tool *version.Version
	// Kubelets maps a kubelet version ("v1.37.2") to its nodes.
	Kubelets map[string][]string
}

var _ kubeadmupgrade.VersionGetter = Getter{}

func (g Getter) ClusterVersion() (string, *version.Version, error) {
	if g.Cluster == nil {
		return "", nil, errors.New("the API server's version is unknown")
	}
	return "v" + g.Cluster.String(), g.Cluster, nil
}

func (g Getter) KubeadmVersion() (string, *version.Version, error) {
	return "v" + g.Tool.String(), g.Tool, nil
}

func (g Getter) VersionFromCILabel(string, string) (string, *version.Version, error) {
	return "", nil, errors.New("kubeboot upgrades to the version a binary carries, not to a CI label")
}

func (g Getter) KubeletVersions() (map[string][]string, error) { return g.Kubelets, nil }

func (g Getter) ComponentVersions(string) (map[string][]string, error) {
	return nil, errors.New("not used")
}

func (g Getter) DNSAddonVersion() (string, error) { return "", errors.New("not used") }
