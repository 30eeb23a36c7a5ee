package addons

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// EnsureCoreDNS runs twice on a live cluster, as after `etcd snapshot
// restore` or a second `init phase addon coredns`: the API server answers
// the kube-dns Service's second create with Invalid (its cluster IP is
// taken), and the Service is updated instead.
func TestEnsureCoreDNSTwice(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		svc := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		if _, err := c.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "services"}, svc.Namespace, svc.Name); err == nil {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), svc.Spec.ClusterIP, "provided IP is already allocated")})
		}
		return false, nil, nil
	})
	o := DNSOptions{Domain: "cluster.local", ServiceIP: "10.96.0.10", Replicas: 2}
	for i := 0; i < 2; i++ {
		if err := EnsureCoreDNS(context.Background(), c, o); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	svc, err := c.CoreV1().Services("kube-system").Get(context.Background(), "kube-dns", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != "10.96.0.10" {
		t.Fatalf("kube-dns: %v %+v", err, svc)
	}
}
