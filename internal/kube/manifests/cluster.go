package manifests

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Cluster is the Target of a real cluster.
type Cluster struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	client kubernetes.Interface
	// node is the node the Events are about.
	node string
}

// NewCluster is the Target of the cluster cfg reaches; its Events are
// about node.
func NewCluster(cfg *rest.Config, node string) (*Cluster, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), client: client, node: node}, nil
}

// resource is where objects of gvk live, in namespace ns when they are
// namespaced ("default" when ns is empty); it returns the namespace used.
func (c *Cluster) resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, string, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// A kind the cache does not know yet: a CRD applied since.
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, "", err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource), "", nil
	}
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return c.dyn.Resource(m.Resource).Namespace(ns), ns, nil
}

// Apply applies obj with server-side apply, taking over the fields other
// managers set (the file is the truth, as `kubectl apply --server-side
// --force-conflicts`).
func (c *Cluster) Apply(ctx context.Context, obj *unstructured.Unstructured) (Ref, error) {
	ref := Ref{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	ri, ns, err := c.resource(obj.GroupVersionKind(), obj.GetNamespace())
	if err != nil {
		return ref, fmt.Errorf("%s: %w", ref, err)
	}
	obj.SetNamespace(ns)
	ref.Namespace = ns
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return ref, fmt.Errorf("%s: %w", ref, err)
	}
	return ref, nil
}

// Delete deletes ref, in the background (its dependents after it), if it
// still carries the annotation naming file.
func (c *Cluster) Delete(ctx context.Context, ref Ref, file string) error {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	ri, _, err := c.resource(gv.WithKind(ref.Kind), ref.Namespace)
	if meta.IsNoMatchError(err) {
		return nil // its kind is gone, and it with it (a CRD deleted before)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	o, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	if o.GetAnnotations()[FileAnnotation] != file {
		return nil // no longer this file's
	}
	bg := metav1.DeletePropagationBackground
	err = ri.Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: ptr(o.GetUID())}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or made anew since by someone else
	}
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// Event records an Event on the node, as the kubelet records its own
// (kubectl describe node shows them).
func (c *Cluster) Event(ctx context.Context, warning bool, reason, message string) error {
	if len(message) > 1024 {
		message = message[:1021] + "..."
	}
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{GenerateName: c.node + ".", Namespace: metav1.NamespaceDefault},
		InvolvedObject:      corev1.ObjectReference{Kind: "Node", Name: c.node, UID: types.UID(c.node)},
		Reason:              reason,
		Message:             message,
		Type:                typ,
		Source:              corev1.EventSource{Component: "kubeboot-manifests", Host: c.node},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		ReportingController: "kubeboot.io/manifests",
		ReportingInstance:   c.node,
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := c.client.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}
