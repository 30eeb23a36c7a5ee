package apiclient

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Ensure creates, then updates at the resourceVersion of the object
// there, with what keep carries over.
func TestEnsure(t *testing.T) {
	ctx := context.Background()
	svcs := fake.NewClientset().CoreV1().Services("ns")
	keep := func(old, svc *corev1.Service) { svc.Spec.ClusterIP = old.Spec.ClusterIP }
	svc := func(port int32) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: port}}}}
	}
	first := svc(80)
	first.Spec.ClusterIP = "10.0.0.7" // as the API server would assign it
	if err := Ensure(ctx, svcs.Get, svcs.Create, svcs.Update, first, keep); err != nil {
		t.Fatal(err)
	}
	before, _ := svcs.Get(ctx, "s", metav1.GetOptions{})
	second := svc(81)
	if err := Ensure(ctx, svcs.Get, svcs.Create, svcs.Update, second, keep); err != nil {
		t.Fatal(err)
	}
	got, _ := svcs.Get(ctx, "s", metav1.GetOptions{})
	if got.Spec.Ports[0].Port != 81 || got.Spec.ClusterIP != "10.0.0.7" || second.ResourceVersion != before.ResourceVersion {
		t.Fatalf("after the update: port %d, clusterIP %q, updated at resourceVersion %q (was %q)", got.Spec.Ports[0].Port, got.Spec.ClusterIP, second.ResourceVersion, before.ResourceVersion)
	}
}
