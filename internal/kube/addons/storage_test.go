package addons

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/host/node"
)

// EnsureStorage twice (init, then `init phase addon storage`) leaves one
// default StorageClass as the issue asks for it, and a provisioner whose
// config and helper pod need nothing kubeboot does not carry.
func TestEnsureStorage(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	for i := 0; i < 2; i++ {
		if err := EnsureStorage(ctx, c); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	sc, err := c.StorageV1().StorageClasses().Get(ctx, StorageClass, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Annotations[defaultClassAnnotation] != "true" || sc.Provisioner != StorageProvisioner ||
		*sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("StorageClass: %+v", sc)
	}
	cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, localPathConfig, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		NodePathMap []struct {
			Node  string
			Paths []string
		}
		SetupCommand, TeardownCommand string
	}
	if err := json.Unmarshal([]byte(cm.Data["config.json"]), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.NodePathMap) != 1 || cfg.NodePathMap[0].Node != "DEFAULT_PATH_FOR_NON_LISTED_NODES" || cfg.NodePathMap[0].Paths[0] != node.StorageRoot ||
		cfg.SetupCommand != "/local-path-helper" || cfg.TeardownCommand != "/local-path-helper" {
		t.Errorf("config.json: %s", cm.Data["config.json"])
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal([]byte(cm.Data["helperPod.yaml"]), &pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Image != images.LocalPathHelper {
		t.Errorf("helperPod.yaml: %s", cm.Data["helperPod.yaml"])
	}
	d, err := c.AppsV1().Deployments("kube-system").Get(ctx, localPath, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != images.LocalPathProvisioner {
		t.Errorf("the provisioner runs %s", got)
	}
}

// The path pattern puts a volume in the directory of the node the
// scheduler chose, as the provisioner renders it (text/template over the
// PV's name and the claim's metadata).
func TestStoragePathPattern(t *testing.T) {
	tpl := template.Must(template.New("pathPattern").Parse(StoragePathPattern))
	var b bytes.Buffer
	err := tpl.Execute(&b, struct {
		PVName string
		PVC    metav1.ObjectMeta
	}{"pvc-1234", metav1.ObjectMeta{Name: "data-db-0", Namespace: "prod", Annotations: map[string]string{selectedNode: "w1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "w1/pvc-1234_prod_data-db-0"; got != want {
		t.Errorf("got %q, want %q (under %s: %s)", got, want, node.StorageRoot, node.StorageDir("w1"))
	}
}
