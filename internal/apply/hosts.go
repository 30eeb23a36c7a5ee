package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubeboot/kubeboot/pkg/clusterfile"
)

// Apply's record of hosts is how --prune reaches the host of a node once
// the file no longer has it: for each node apply made, the host as the
// file had it (address, SSH target, bastion, root), JSON under the node's
// name in the ConfigMap kube-system/kubeboot-apply-hosts. Only the
// cluster's admins write it: no RBAC role kubeboot or Kubernetes makes
// lets a node write a ConfigMap, and the node authorizer lets a node
// read only those its pods use. What a node can write is not trusted:
// apply once kept the host in an annotation of the Node, which a kubelet
// may rewrite on its own Node, and so point --prune's reset at any
// other host the operator's key reaches.
const (
	hostsConfigMap = "kubeboot-apply-hosts"
	hostsRecordRef = "ConfigMap kube-system/" + hostsConfigMap
	// legacyHostAnnotation is the annotation on a Node where apply kept
	// its host before: never read to reach a host; removed from the
	// nodes apply records.
	legacyHostAnnotation = "kubeboot.io/apply-host"
)

// hostsRecord is apply's record of hosts, by node name: each the host's
// JSON, as the ConfigMap holds it.
type hostsRecord map[string]string

// readHostsRecord reads apply's record of hosts; it is empty when apply
// made no node of the cluster yet.
func readHostsRecord(ctx context.Context, c kubernetes.Interface) (hostsRecord, error) {
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, hostsConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return hostsRecord{}, nil
	}
	if err != nil {
		return nil, err
	}
	return hostsRecord(cm.Data), nil
}

// host is the recorded host of the node name; recorded is false when
// apply did not record one.
func (r hostsRecord) host(name string) (h *clusterfile.Host, recorded bool, err error) {
	v, ok := r[name]
	if !ok {
		return nil, false, nil
	}
	h = &clusterfile.Host{}
	if err := json.Unmarshal([]byte(v), h); err != nil {
		return nil, true, fmt.Errorf("its entry in apply's record of hosts (%s): %w", hostsRecordRef, err)
	}
	h.NodeName = name // the node's own name, whatever the entry says
	return h, true, nil
}

// hostEntry is how h is recorded.
func hostEntry(h *applyHost) (string, error) {
	hc := *h.Host
	hc.NodeName = h.node
	b, err := json.Marshal(&hc)
	return string(b), err
}

// recordHosts records the host of each node of the file that is in the
// cluster, and forgets those of nodes that are neither in the file nor
// in the cluster any more; it removes the legacy annotation from the
// Nodes it records.
func (a *applyRun) recordHosts(ctx context.Context) error {
	want := map[string]string{}
	for _, h := range a.hosts {
		if h.err != nil {
			continue
		}
		e, err := hostEntry(h)
		if err != nil {
			return err
		}
		want[h.node] = e
	}
	err := a.updateHostsRecord(ctx, func(r hostsRecord) {
		for name := range r {
			if _, node := a.nodes[name]; !node && want[name] == "" {
				delete(r, name)
			}
		}
		maps.Copy(r, want)
	})
	if err != nil {
		return fmt.Errorf("recording the hosts in %s: %w", hostsRecordRef, err)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if n, ok := a.nodes[name]; !ok || n.Annotations[legacyHostAnnotation] == "" {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{legacyHostAnnotation: nil}}})
		if err != nil {
			return err
		}
		if _, err := a.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the %s annotation of Node %s: %w", legacyHostAnnotation, name, err)
		}
	}
	return nil
}

// forgetHosts takes the nodes names (pruned) out of the record.
func (a *applyRun) forgetHosts(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	err := a.updateHostsRecord(ctx, func(r hostsRecord) {
		for _, n := range names {
			delete(r, n)
		}
	})
	if err != nil {
		return fmt.Errorf("taking the pruned nodes out of %s: %w", hostsRecordRef, err)
	}
	return nil
}

// updateHostsRecord changes the record with change, and writes it when
// it differs; a concurrent writer's change is read and changed again.
func (a *applyRun) updateHostsRecord(ctx context.Context, change func(hostsRecord)) error {
	cms := a.client.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, hostsConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			r := hostsRecord{}
			change(r)
			if len(r) == 0 {
				return nil
			}
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: hostsConfigMap, Namespace: metav1.NamespaceSystem,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "kubeboot-apply"}}, Data: r}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), hostsConfigMap, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		r := hostsRecord(maps.Clone(cm.Data))
		if r == nil {
			r = hostsRecord{}
		}
		change(r)
		if maps.Equal(r, hostsRecord(cm.Data)) {
			return nil
		}
		cm.Data = r
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	return err
}
