package addons

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	aggregatorfake "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"

	"github.com/kubeboot/kubeboot/internal/host/images"
)

// Upgrade moves the add-ons kubeboot made to this binary's images, keeps
// what operators set (CoreDNS's replicas and Corefile), and leaves alone
// an add-on that is absent or not kubeboot's.
func TestUpgrade(t *testing.T) {
	ctx := context.Background()
	deployment := func(name, image string, replicas int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: image}}}}}}
	}
	corefile := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: metav1.NamespaceSystem}, Data: map[string]string{"Corefile": "edited by hand"}}
	c := fake.NewClientset(
		deployment("coredns", images.Registry+"/coredns:v1.37.1", 3), corefile,
		deployment("metrics-server", "registry.k8s.io/metrics-server/metrics-server:v0.8.0", 1))
	moved, err := Upgrade(ctx, c, aggregatorfake.NewSimpleClientset())
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) != 1 || moved[0].Name != "CoreDNS" || moved[0].From != images.Registry+"/coredns:v1.37.1" || moved[0].To != images.CoreDNS {
		t.Fatalf("moved %+v", moved)
	}
	d, err := c.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != images.CoreDNS || *d.Spec.Replicas != 3 {
		t.Errorf("CoreDNS after the upgrade: %s, %d replicas", img, *d.Spec.Replicas)
	}
	if cm, _ := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{}); cm.Data["Corefile"] != "edited by hand" {
		t.Errorf("the Corefile was changed: %q", cm.Data["Corefile"])
	}
	if ms, _ := c.AppsV1().Deployments("kube-system").Get(ctx, "metrics-server", metav1.GetOptions{}); ms.Spec.Template.Spec.Containers[0].Image != "registry.k8s.io/metrics-server/metrics-server:v0.8.0" {
		t.Errorf("an add-on not kubeboot's was moved: %s", ms.Spec.Template.Spec.Containers[0].Image)
	}
	if _, err := c.AppsV1().Deployments("kube-system").Get(ctx, localPath, metav1.GetOptions{}); err == nil {
		t.Error("the storage add-on, absent, was made")
	}
	// Run again: nothing left to move.
	if moved, err := Upgrade(ctx, c, aggregatorfake.NewSimpleClientset()); err != nil || len(moved) != 0 {
		t.Fatalf("a second Upgrade moved %+v, %v", moved, err)
	}
}
