package cluster

import (
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeboot/kubeboot/pkg/clusterfile"
)

// The plan resets a host that a failed run left with a node's state, and
// refuses, before anything changes, to reset one that is a working node
// under another name, the primary, or a node of another cluster; a Node
// not in the file is left alone unless pruned, and never when apply did
// not make it or its recorded host is one of the file's.
func TestPlanRefusesToResetWorkingNodes(t *testing.T) {
	node := func(name, ip, annotation string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
		if annotation != "" {
			n.Annotations = map[string]string{madeHostAnnotation: annotation}
		}
		return n
	}
	host := func(addr, role, name string, state bool, ca string) *applyHost {
		return &applyHost{Host: &clusterfile.Host{Address: addr, Role: role, NodeName: name, Root: "/"}, node: name, state: state, ca: ca}
	}
	run := func(prune bool, hosts ...*applyHost) (*applyRun, *applyPlan, error) {
		a := &applyRun{o: ApplyOptions{Cluster: &clusterfile.Cluster{}, Out: io.Discard, Prune: prune}, hosts: hosts}
		a.primary = hosts[0]
		a.primary.admin = true
		a.nodes = map[string]*corev1.Node{
			"cp1":     node("cp1", "10.0.0.1", ""),
			"w1":      node("w1", "10.0.0.2", ""),
			"old":     node("old", "10.0.0.9", `{"Address":"10.0.0.9","Role":"worker","NodeName":"old","Root":"/"}`),
			"fake":    node("fake", "10.0.0.8", `{"Address":"10.0.0.2","Role":"worker","NodeName":"cp1","Root":"/"}`),
			"kubeadm": node("kubeadm", "10.0.0.7", ""),
		}
		p, err := a.plan()
		return a, p, err
	}
	// A failed join on a new host: reset, then join.
	_, p, err := run(false, host("10.0.0.1", "control-plane", "cp1", true, "A"), host("10.0.0.2", "worker", "w1", true, "A"), host("10.0.0.3", "worker", "w2", true, "A"))
	if err != nil || len(p.resets) != 1 || p.resets[0].node != "w2" || len(p.workers) != 1 || len(p.prune) != 0 {
		t.Errorf("a failed join: %v, %+v", err, p)
	}
	for what, hosts := range map[string][]*applyHost{
		"is Node \"w1\"'s":          {host("10.0.0.1", "control-plane", "cp1", true, "A"), host("10.0.0.2", "worker", "renamed", true, "A")},
		"holds the cluster's admin": {host("10.0.0.1", "control-plane", "renamed", true, "A")},
		"a node of another cluster": {host("10.0.0.1", "control-plane", "cp1", true, "A"), host("10.0.0.4", "worker", "w3", true, "B")},
	} {
		if _, _, err := run(false, hosts...); err == nil || !strings.Contains(err.Error(), what) {
			t.Errorf("%s: %v", what, err)
		}
	}
	// Pruning: only "old" (made by apply, its host not in the file).
	_, p, err = run(true, host("10.0.0.1", "control-plane", "cp1", true, "A"), host("10.0.0.2", "worker", "w1", true, "A"))
	if err != nil || len(p.prune) != 1 || p.prune[0].NodeName != "old" {
		t.Errorf("prune: %v, %+v", err, p.prune)
	}
}
