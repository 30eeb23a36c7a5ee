package upgrade

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/version"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/addons"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
)

// NodeVersion is a node and the version its kubelet reports.
type NodeVersion struct{ Name, Version string }

func (n NodeVersion) String() string { return fmt.Sprintf("%s (%s)", n.Name, n.Version) }

// NodesBehind lists the nodes whose kubelet does not report version,
// sorted by name: they lack that version's images.
func NodesBehind(ctx context.Context, c kubernetes.Interface, version string) ([]NodeVersion, error) {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var behind []NodeVersion
	for _, n := range nodes.Items {
		if v := n.Status.NodeInfo.KubeletVersion; v != version {
			behind = append(behind, NodeVersion{n.Name, v})
		}
	}
	slices.SortFunc(behind, func(a, b NodeVersion) int { return strings.Compare(a.Name, b.Name) })
	return behind, nil
}

// List names nodes for a message.
func List(nodes []NodeVersion) string {
	var s []string
	for _, n := range nodes {
		s = append(s, n.String())
	}
	return strings.Join(s, ", ")
}

// MoveAddOns moves the cluster's add-ons to this binary's images
// (addons.Upgrade), as the administrator of the control plane under fs,
// once every node runs this binary's version and so holds its images:
// before that their new pods could not start on the nodes left.
func MoveAddOns(ctx context.Context, fs fsys.FS, logf func(string, ...any)) error {
	c, rc, err := apiclient.FromKubeconfig(fs.Path(node.AdminKubeconfig), "")
	if err != nil {
		return fmt.Errorf("%w: move the add-ons from a control plane", err)
	}
	behind, err := NodesBehind(ctx, c, version.Kubernetes)
	if err != nil {
		return err
	}
	if len(behind) > 0 {
		return fmt.Errorf("the add-ons need the images of %s on every node, and these run another version: %s; run `kubeboot upgrade node` on them first", version.Kubernetes, List(behind))
	}
	a, err := aggregator.NewForConfig(rc)
	if err != nil {
		return err
	}
	moved, err := addons.Upgrade(ctx, c, a)
	for _, m := range moved {
		logf("[upgrade/addons] Moved %s from %s to %s", m.Name, m.From, m.To)
	}
	if err != nil {
		return err
	}
	if len(moved) == 0 {
		logf("[upgrade/addons] Every add-on runs the images of %s already", version.Kubernetes)
	}
	return nil
}

// CRISocket is the CRI endpoint the node's kubelet uses, from its
// configuration file; "" when it names none (kubeboot's containerd).
func CRISocket(fs fsys.FS) (string, error) {
	b, err := os.ReadFile(fs.Path(node.KubeletConfig))
	if err != nil {
		return "", err
	}
	var kc struct {
		ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
	}
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return "", fmt.Errorf("%s: %w", fs.Path(node.KubeletConfig), err)
	}
	return kc.ContainerRuntimeEndpoint, nil
}

// RunBinary runs the kubeboot binary bin on the node under fs with args
// and returns its output (stdout and stderr).
func RunBinary(ctx context.Context, fs fsys.FS, bin string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, append([]string{"--root", fs.Path("/")}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
