package addons

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kubeboot/kubeboot/internal/host/images"
)

// Moved is one add-on an upgrade moved to this binary's images.
type Moved struct {
	Name string
	// From and To are the images of its first container.
	From, To string
}

// Upgrade moves the add-ons the cluster runs to this binary's manifests
// and images, each only if kubeboot made it (its Deployment runs one of
// kubeboot's images) and it is not there yet: CoreDNS's Deployment, its
// replica count kept (and its Corefile, which operators edit, untouched),
// the storage add-on and metrics-server whole. An add-on skipped at init
// stays absent. The nodes must hold the new images first (`upgrade node`
// imports them on each).
func Upgrade(ctx context.Context, c kubernetes.Interface, a aggregator.Interface) ([]Moved, error) {
	var moved []Moved
	for _, ad := range []struct {
		name, deployment, image string
		ensure                  func(old *appsv1.Deployment) error
	}{
		{"CoreDNS", "coredns", images.CoreDNS, func(old *appsv1.Deployment) error {
			d := CoreDNSDeployment(DNSOptions{Replicas: ptrValue(old.Spec.Replicas)})
			d.ResourceVersion = old.ResourceVersion
			_, err := c.AppsV1().Deployments(old.Namespace).Update(ctx, d, metav1.UpdateOptions{})
			return err
		}},
		{"storage", localPath, images.LocalPathProvisioner, func(*appsv1.Deployment) error { return EnsureStorage(ctx, c) }},
		{"metrics-server", metricsServer, images.MetricsServer, func(*appsv1.Deployment) error { return EnsureMetricsServer(ctx, c, a) }},
	} {
		old, err := c.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, ad.deployment, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return moved, err
		}
		from := ""
		if cs := old.Spec.Template.Spec.Containers; len(cs) > 0 {
			from = cs[0].Image
		}
		if from == ad.image || !strings.HasPrefix(from, images.Registry+"/") {
			continue // there already, or not kubeboot's
		}
		if err := ad.ensure(old); err != nil {
			return moved, fmt.Errorf("moving %s to %s: %w", ad.name, ad.image, err)
		}
		moved = append(moved, Moved{Name: ad.name, From: from, To: ad.image})
	}
	return moved, nil
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
