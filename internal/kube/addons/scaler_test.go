package addons

import (
	"context"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func TestStorageWanted(t *testing.T) {
	claim := func(class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class}}
	}
	volume := func(class string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Spec: corev1.PersistentVolumeSpec{StorageClassName: class}}
	}
	for _, c := range []struct {
		pvcs []*corev1.PersistentVolumeClaim
		pvs  []*corev1.PersistentVolume
		want int32
	}{
		{nil, nil, 0},
		{[]*corev1.PersistentVolumeClaim{claim(nil), claim(ptr.To("other"))}, []*corev1.PersistentVolume{volume("other")}, 0},
		{[]*corev1.PersistentVolumeClaim{claim(ptr.To(StorageClass))}, nil, 1},
		// A released volume still to delete keeps it running.
		{nil, []*corev1.PersistentVolume{volume(StorageClass)}, 1},
	} {
		if got, why := StorageWanted(c.pvcs, c.pvs); got != c.want {
			t.Errorf("StorageWanted(%d claims, %d volumes) = %d (%s), want %d", len(c.pvcs), len(c.pvs), got, why, c.want)
		}
	}
}

// The scaler gives the provisioner a replica when a claim of its class
// comes, takes it away when the last one and its volume are gone, and
// leaves an absent add-on absent.
func TestStorageScaler(t *testing.T) {
	c := fake.NewClientset()
	var mu sync.Mutex
	replicas, present := int32(0), true
	var scaled []int32
	c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if !present {
			return true, nil, k8sNotFound()
		}
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: localPath, Namespace: "kube-system"}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}, nil
	})
	c.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		sc := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		mu.Lock()
		defer mu.Unlock()
		replicas = sc.Spec.Replicas
		scaled = append(scaled, replicas)
		return true, sc, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- (&StorageScaler{Client: c, Idle: 300 * time.Millisecond}).Run(ctx) }()
	wait := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			got := replicas
			mu.Unlock()
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("replicas %d, want %d", got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(StorageClass)}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{StorageClassName: StorageClass}}
	if _, err := c.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(1)
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	wait(1) // the released volume is still to delete
	if err := c.CoreV1().PersistentVolumes().Delete(ctx, "pv-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(0)
	// Skipped at init: a claim does not make it.
	mu.Lock()
	present = false
	mu.Unlock()
	if _, err := c.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(scaled) != 2 || scaled[0] != 1 || scaled[1] != 0 {
		t.Errorf("scaled to %v, want [1 0]", scaled)
	}
}

func k8sNotFound() error {
	return apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, localPath)
}
