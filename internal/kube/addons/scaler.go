package addons

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// StorageScaler keeps the storage add-on's provisioner at one replica
// while the cluster holds a claim or a volume of its class, and at none
// otherwise: a cluster that uses no volume pays nothing for it (its
// process, its pod's shim and pause: ~47 MiB of PSS), and a claim's first
// pod waits for the provisioner's start (its image is on every node).
// Volumes keep it running until they are deleted, which it does.
type StorageScaler struct {
	Client kubernetes.Interface
	// Idle is how long no claim or volume of the class must exist before
	// the provisioner stops (a claim made again soon, or the informers of
	// claims and volumes seen out of step, do not restart it); 30 s when
	// zero.
	Idle time.Duration
	Logf func(format string, args ...any)
}

// StorageWanted is the provisioner's replica count for these claims and
// volumes: 1 while one is of its class.
func StorageWanted(pvcs []*corev1.PersistentVolumeClaim, pvs []*corev1.PersistentVolume) (int32, string) {
	for _, c := range pvcs {
		if c.Spec.StorageClassName != nil && *c.Spec.StorageClassName == StorageClass {
			return 1, fmt.Sprintf("claim %s/%s is of class %s", c.Namespace, c.Name, StorageClass)
		}
	}
	for _, v := range pvs {
		if v.Spec.StorageClassName == StorageClass {
			return 1, fmt.Sprintf("volume %s is of class %s", v.Name, StorageClass)
		}
	}
	return 0, "no claim or volume is of class " + StorageClass
}

// Run scales the provisioner as claims and volumes come and go, until ctx
// ends.
func (s *StorageScaler) Run(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(s.Client, 0)
	pvcs, pvs := f.Core().V1().PersistentVolumeClaims(), f.Core().V1().PersistentVolumes()
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() }}
	if _, err := pvcs.Informer().AddEventHandler(h); err != nil {
		return err
	}
	if _, err := pvs.Informer().AddEventHandler(h); err != nil {
		return err
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	f.WaitForCacheSync(ctx.Done())
	poke()
	idle := s.Idle
	if idle <= 0 {
		idle = 30 * time.Second
	}
	var retry <-chan time.Time
	var idleSince time.Time // when it was first found with nothing to do
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-retry:
		}
		retry = nil
		claims, err := pvcs.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		volumes, err := pvs.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		want, why := StorageWanted(claims, volumes)
		if want > 0 {
			idleSince = time.Time{}
		} else if idleSince.IsZero() {
			idleSince = time.Now()
		}
		if wait := idle - time.Since(idleSince); want == 0 && wait > 0 {
			retry = time.After(wait)
			continue
		}
		if err := s.scale(ctx, want, why); err != nil {
			s.logf("scaling %s: %v (again in 5s)", localPath, err)
			retry = time.After(5 * time.Second)
		}
	}
}

// scale sets the provisioner's replicas; an absent add-on (skipped at
// init) is left absent.
func (s *StorageScaler) scale(ctx context.Context, want int32, why string) error {
	deployments := s.Client.AppsV1().Deployments(metav1.NamespaceSystem)
	sc, err := deployments.GetScale(ctx, localPath, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if sc.Spec.Replicas == want {
		return nil
	}
	sc.Spec.Replicas = want
	if _, err := deployments.UpdateScale(ctx, localPath, sc, metav1.UpdateOptions{}); err != nil {
		return err
	}
	s.logf("scaled %s to %d: %s", localPath, want, why)
	return nil
}

func (s *StorageScaler) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}
