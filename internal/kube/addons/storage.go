package addons

import (
	"context"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
)

// The storage add-on: rancher's local-path-provisioner (built from its
// module into kubeboot's local-path-provisioner image), in kube-system as
// k3s runs it, behind the default StorageClass.
const (
	StorageClass       = "local-path"
	StorageProvisioner = "rancher.io/local-path"
	localPath          = "local-path-provisioner"
	localPathConfig    = "local-path-config"
	// defaultClassAnnotation marks the cluster's default StorageClass.
	defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"
	// selectedNode is the annotation the scheduler sets on a claim of a
	// WaitForFirstConsumer class: the node its first pod was put on.
	selectedNode = "volume.kubernetes.io/selected-node"
)

var localPathLabels = map[string]string{"app": localPath}

// StoragePathPattern places a volume in its node's directory
// (node.StorageDir) under the provisioner's base path, node.StorageRoot:
// the directory is the node's own, under its root prefix, even where
// several nodes share a machine.
const StoragePathPattern = `{{ index .PVC.Annotations "` + selectedNode + `" }}/{{ .PVName }}_{{ .PVC.Namespace }}_{{ .PVC.Name }}`

// LocalPathConfig is the provisioner's config.json: every node's volumes
// under node.StorageRoot, made and removed by kubeboot's helper (no shell
// in any image kubeboot carries).
func LocalPathConfig() (string, error) {
	type nodePaths struct {
		Node  string   `json:"node"`
		Paths []string `json:"paths"`
	}
	b, err := json.MarshalIndent(struct {
		NodePathMap     []nodePaths `json:"nodePathMap"`
		SetupCommand    string      `json:"setupCommand"`
		TeardownCommand string      `json:"teardownCommand"`
	}{
		NodePathMap:     []nodePaths{{Node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", Paths: []string{node.StorageRoot}}},
		SetupCommand:    "/" + images.LocalPathHelperFile,
		TeardownCommand: "/" + images.LocalPathHelperFile,
	}, "", "  ")
	return string(b), err
}

// localPathHelperPod is the template of the pods that make and remove a
// volume's directory on its node.
func localPathHelperPod() (string, error) {
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "helper-pod"},
		Spec: corev1.PodSpec{
			PriorityClassName: "system-node-critical",
			Tolerations:       []corev1.Toleration{{Key: "node.kubernetes.io/disk-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{
				Name:            "helper-pod",
				Image:           images.LocalPathHelper,
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
		},
	}
	b, err := yaml.Marshal(pod)
	return string(b), err
}

// EnsureStorage creates or updates the storage add-on's objects: the
// provisioner's ServiceAccount, RBAC, ConfigMap and Deployment, and the
// default StorageClass local-path (WaitForFirstConsumer, reclaim Delete).
func EnsureStorage(ctx context.Context, c kubernetes.Interface) error {
	ns := metav1.NamespaceSystem
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: localPath, Namespace: ns}}
	if err := apiclient.CreateOrUpdate(ctx, c.CoreV1().ServiceAccounts(ns).Create, c.CoreV1().ServiceAccounts(ns).Update, sa); err != nil {
		return err
	}
	// Upstream's rules (deploy/local-path-storage.yaml at the pinned
	// version): the helper pods in the add-on's namespace only.
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: localPath, Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "patch", "update", "delete"}}},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().Roles(ns).Create, c.RbacV1().Roles(ns).Update, role); err != nil {
		return err
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: localPath, Namespace: ns}}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: localPath, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: localPath},
		Subjects:   subjects,
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().RoleBindings(ns).Create, c.RbacV1().RoleBindings(ns).Update, rb); err != nil {
		return err
	}
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeboot:" + localPath},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get", "list", "watch", "create", "patch", "update", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoles().Create, c.RbacV1().ClusterRoles().Update, cr); err != nil {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeboot:" + localPath},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   subjects,
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings().Create, c.RbacV1().ClusterRoleBindings().Update, crb); err != nil {
		return err
	}
	cfg, err := LocalPathConfig()
	if err != nil {
		return err
	}
	helper, err := localPathHelperPod()
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: localPathConfig, Namespace: ns},
		Data:       map[string]string{"config.json": cfg, "helperPod.yaml": helper},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.CoreV1().ConfigMaps(ns).Create, c.CoreV1().ConfigMaps(ns).Update, cm); err != nil {
		return err
	}
	// No replica until a claim of its class exists (StorageScaler); one
	// that runs keeps running.
	deployments := c.AppsV1().Deployments(ns)
	if err := apiclient.Ensure(ctx, deployments.Get, deployments.Create, deployments.Update, LocalPathDeployment(), func(old, d *appsv1.Deployment) {
		d.Spec.Replicas = old.Spec.Replicas
	}); err != nil {
		return err
	}
	return apiclient.CreateOrUpdate(ctx, c.StorageV1().StorageClasses().Create, c.StorageV1().StorageClasses().Update, LocalPathStorageClass())
}

// LocalPathStorageClass is the cluster's default StorageClass.
func LocalPathStorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClass, Annotations: map[string]string{defaultClassAnnotation: "true"}},
		Provisioner:       StorageProvisioner,
		Parameters:        map[string]string{"pathPattern": StoragePathPattern},
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}

// LocalPathDeployment runs the provisioner: on any node (a control
// plane's too), its config from the ConfigMap, which it reads again when
// it changes. It has no replica: StorageScaler gives it one while claims
// or volumes of its class exist.
func LocalPathDeployment() *appsv1.Deployment {
	const mount = "/etc/config/"
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: localPath, Namespace: metav1.NamespaceSystem, Labels: localPathLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Selector: &metav1.LabelSelector{MatchLabels: localPathLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: localPathLabels},
				Spec: corev1.PodSpec{
					PriorityClassName:  "system-cluster-critical",
					ServiceAccountName: localPath,
					Tolerations:        addOnTolerations(),
					NodeSelector:       linuxNodes(),
					Containers: []corev1.Container{{
						Name:            localPath,
						Image:           images.LocalPathProvisioner,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command: []string{"/" + images.LocalPathProvisionerFile, "start",
							"--config", mount + "config.json",
							"--provisioner-name", StorageProvisioner,
							"--service-account-name", localPath,
							"--configmap-name", localPathConfig,
							"--helper-image", images.LocalPathHelper},
						Env: []corev1.EnvVar{
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							// Where it reads helperPod.yaml again when it changes.
							{Name: "CONFIG_MOUNT_PATH", Value: mount},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("20Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							ReadOnlyRootFilesystem:   ptr.To(true),
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config-volume", MountPath: mount, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "config-volume", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: localPathConfig},
					}}}},
				},
			},
		},
	}
}
