package addons

import (
	"context"

	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	aggregatorfake "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"

	"github.com/kubeboot/kubeboot/internal/host/images"
)

// EnsureMetricsServer twice (init, then `init phase addon metrics-server`)
// leaves one metrics-server that verifies the kubelets against the
// cluster CA, runs kubeboot's own image, and the APIService naming its
// Service; the Service keeps the cluster IP it was given.
func TestEnsureMetricsServer(t *testing.T) {
	ctx := context.Background()
	c, a := fake.NewClientset(), aggregatorfake.NewSimpleClientset()
	// As the API server: an APIService is updated only at the
	// resourceVersion it has (a restored cluster has it already).
	updates := 0
	a.PrependReactor("create", "apiservices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		action.(k8stesting.CreateAction).GetObject().(*apiregistrationv1.APIService).ResourceVersion = "1"
		return false, nil, nil
	})
	a.PrependReactor("update", "apiservices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		obj := action.(k8stesting.UpdateAction).GetObject().(*apiregistrationv1.APIService)
		if obj.ResourceVersion == "" {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}, obj.Name,
				field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), 0, "must be specified for an update")})
		}
		return false, nil, nil
	})
	if err := EnsureMetricsServer(ctx, c, a); err != nil {
		t.Fatal(err)
	}
	svc, err := c.CoreV1().Services("kube-system").Get(ctx, metricsServer, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.ClusterIP = "10.96.0.77" // as the API server gives it
	if _, err := c.CoreV1().Services("kube-system").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := EnsureMetricsServer(ctx, c, a); err != nil {
		t.Fatalf("again: %v", err)
	}
	if updates != 1 {
		t.Errorf("the second run updated the APIService %d times, want 1", updates)
	}
	if svc, _ = c.CoreV1().Services("kube-system").Get(ctx, metricsServer, metav1.GetOptions{}); svc.Spec.ClusterIP != "10.96.0.77" {
		t.Errorf("the second run changed the cluster IP to %q", svc.Spec.ClusterIP)
	}

	d, err := c.AppsV1().Deployments("kube-system").Get(ctx, metricsServer, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	if ctr.Image != images.MetricsServer || ctr.ImagePullPolicy != "IfNotPresent" {
		t.Errorf("image %s, pull policy %s", ctr.Image, ctr.ImagePullPolicy)
	}
	if !slices.Contains(ctr.Args, "--kubelet-certificate-authority="+serviceAccountCA) {
		t.Errorf("args %v: the kubelets are not verified against the cluster CA", ctr.Args)
	}
	for _, arg := range ctr.Args {
		if strings.HasPrefix(arg, "--kubelet-insecure-tls") {
			t.Errorf("args %v skip the kubelets' verification", ctr.Args)
		}
	}
	if svc.Spec.Selector["k8s-app"] != d.Spec.Template.Labels["k8s-app"] || svc.Spec.Ports[0].TargetPort.StrVal != ctr.Ports[0].Name {
		t.Errorf("the Service (selector %v, target %v) does not reach the pod (labels %v, port %q)",
			svc.Spec.Selector, svc.Spec.Ports[0].TargetPort, d.Spec.Template.Labels, ctr.Ports[0].Name)
	}

	api, err := a.ApiregistrationV1().APIServices().Get(ctx, MetricsAPIService, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := api.Spec.Service; ref == nil || ref.Name != svc.Name || ref.Namespace != svc.Namespace || api.Spec.Group != "metrics.k8s.io" {
		t.Errorf("APIService %+v does not name the Service", api.Spec)
	}
	for _, name := range []string{"system:metrics-server", "metrics-server:system:auth-delegator"} {
		if _, err := c.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Error(err)
		}
	}
	if _, err := c.RbacV1().RoleBindings("kube-system").Get(ctx, "metrics-server-auth-reader", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}
