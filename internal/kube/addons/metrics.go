package addons

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
)

// The metrics add-on: sigs.k8s.io/metrics-server (built from its module
// into kubeboot's metrics-server image) behind the APIService of
// metrics.k8s.io, as upstream's manifests (manifests/base at the pinned
// version) install it, with the kubelets verified against the cluster CA.
const (
	metricsServer = "metrics-server"
	// MetricsAPIService is the name of the APIService of metrics.k8s.io.
	MetricsAPIService = "v1beta1.metrics.k8s.io"
	// serviceAccountCA is the cluster CA as every pod's service account
	// volume holds it (the kube-root-ca.crt ConfigMap): the CA that signs
	// the kubelets' serving certificates with serverTLSBootstrap.
	serviceAccountCA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
	// metricsServerPort is the port metrics-server serves on in its pod.
	metricsServerPort = 10250
)

var metricsServerLabels = map[string]string{"k8s-app": metricsServer}

// EnsureMetricsServer creates or updates the metrics add-on's objects:
// metrics-server's ServiceAccount and RBAC, its Service and Deployment in
// kube-system, and the APIService that serves metrics.k8s.io from it.
func EnsureMetricsServer(ctx context.Context, c kubernetes.Interface, a aggregator.Interface) error {
	ns := metav1.NamespaceSystem
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Labels: metricsServerLabels}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: meta(metricsServer)}
	sa.Namespace = ns
	if err := apiclient.CreateOrUpdate(ctx, c.CoreV1().ServiceAccounts(ns).Create, c.CoreV1().ServiceAccounts(ns).Update, sa); err != nil {
		return err
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: metricsServer, Namespace: ns}}
	// Who may read the metrics: whoever may view, edit or administer.
	reader := &rbacv1.ClusterRole{ObjectMeta: meta("system:aggregated-metrics-reader"),
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}}}}
	reader.Labels = map[string]string{
		"k8s-app": metricsServer,
		"rbac.authorization.k8s.io/aggregate-to-view":  "true",
		"rbac.authorization.k8s.io/aggregate-to-edit":  "true",
		"rbac.authorization.k8s.io/aggregate-to-admin": "true",
	}
	// What metrics-server reads: the kubelets' resource metrics, and the
	// nodes and pods they are of.
	own := &rbacv1.ClusterRole{ObjectMeta: meta("system:metrics-server"), Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
	}}
	for _, cr := range []*rbacv1.ClusterRole{reader, own} {
		if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoles().Create, c.RbacV1().ClusterRoles().Update, cr); err != nil {
			return err
		}
	}
	// An aggregated API server delegates authentication and authorization
	// to the kube-apiserver, and reads the front proxy's CA from
	// kube-system's extension-apiserver-authentication.
	for _, crb := range []*rbacv1.ClusterRoleBinding{
		{ObjectMeta: meta("system:metrics-server"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: own.Name}, Subjects: subjects},
		{ObjectMeta: meta("metrics-server:system:auth-delegator"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"}, Subjects: subjects},
	} {
		if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings().Create, c.RbacV1().ClusterRoleBindings().Update, crb); err != nil {
			return err
		}
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: meta("metrics-server-auth-reader"),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"}, Subjects: subjects}
	rb.Namespace = ns
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().RoleBindings(ns).Create, c.RbacV1().RoleBindings(ns).Update, rb); err != nil {
		return err
	}
	if err := ensureService(ctx, c, MetricsServerService()); err != nil {
		return err
	}
	if err := apiclient.CreateOrUpdate(ctx, c.AppsV1().Deployments(ns).Create, c.AppsV1().Deployments(ns).Update, MetricsServerDeployment()); err != nil {
		return err
	}
	return ensureAPIService(ctx, a, MetricsAPIServiceObject())
}

// ensureAPIService creates api or updates the one there (a restored
// cluster, `init phase addon metrics-server` again).
func ensureAPIService(ctx context.Context, a aggregator.Interface, api *apiregistrationv1.APIService) error {
	apis := a.ApiregistrationV1().APIServices()
	return apiclient.Ensure(ctx, apis.Get, apis.Create, apis.Update, api, nil)
}

// ensureService creates svc or updates the one there, keeping the cluster
// IP the API server gave it (an update without it is refused).
func ensureService(ctx context.Context, c kubernetes.Interface, svc *corev1.Service) error {
	svcs := c.CoreV1().Services(svc.Namespace)
	return apiclient.Ensure(ctx, svcs.Get, svcs.Create, svcs.Update, svc, func(old, svc *corev1.Service) {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
	})
}

// MetricsServerService is the Service the APIService names.
func MetricsServerService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: metricsServer, Namespace: metav1.NamespaceSystem, Labels: metricsServerLabels},
		Spec: corev1.ServiceSpec{
			Selector: metricsServerLabels,
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromString("https"), AppProtocol: ptr.To("https")}},
		},
	}
}

// MetricsAPIServiceObject serves metrics.k8s.io from MetricsServerService.
//
// As upstream's manifest has it, the aggregator does not verify
// metrics-server's serving certificate (insecureSkipTLSVerify): the
// certificate is one metrics-server makes itself at start, in its pod,
// and no CA signs it. The aggregator authenticates itself to
// metrics-server with the front proxy's client certificate.
func MetricsAPIServiceObject() *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: MetricsAPIService, Labels: metricsServerLabels},
		Spec: apiregistrationv1.APIServiceSpec{
			Service:               &apiregistrationv1.ServiceReference{Name: metricsServer, Namespace: metav1.NamespaceSystem},
			Group:                 "metrics.k8s.io",
			Version:               "v1beta1",
			InsecureSkipTLSVerify: true,
			GroupPriorityMinimum:  100,
			VersionPriority:       100,
		},
	}
}

// MetricsServerDeployment runs metrics-server: one replica, its serving
// certificate made at start in an emptyDir, the kubelets' serving
// certificates verified against the cluster CA (which signs them with
// serverTLSBootstrap: see package csrapprover), never
// --kubelet-insecure-tls.
func MetricsServerDeployment() *appsv1.Deployment {
	https := intstr.FromString("https")
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: https, Scheme: corev1.URISchemeHTTPS}},
			PeriodSeconds:    10,
			FailureThreshold: 3,
		}
	}
	ready := probe("/readyz")
	// Ready as soon as the first metrics are in (upstream waits 20 s
	// before the first probe): `kubectl top` answers from then on.
	ready.PeriodSeconds = 3
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: metricsServer, Namespace: metav1.NamespaceSystem, Labels: metricsServerLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: metricsServerLabels},
			Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: metricsServerLabels},
				Spec: corev1.PodSpec{
					PriorityClassName:  "system-cluster-critical",
					ServiceAccountName: metricsServer,
					Tolerations:        addOnTolerations(),
					NodeSelector:       linuxNodes(),
					Containers: []corev1.Container{{
						Name:            metricsServer,
						Image:           images.MetricsServer,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args: []string{
							"--cert-dir=/tmp",
							"--secure-port=10250",
							"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
							"--kubelet-use-node-status-port",
							"--metric-resolution=15s",
							"--kubelet-certificate-authority=" + serviceAccountCA,
						},
						Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: metricsServerPort, Protocol: corev1.ProtocolTCP}},
						// k3s's requests: upstream's 200Mi is sized for
						// large clusters.
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("70Mi")},
						},
						ReadinessProbe: ready,
						LivenessProbe:  probe("/livez"),
						SecurityContext: &corev1.SecurityContext{
							ReadOnlyRootFilesystem:   ptr.To(true),
							RunAsNonRoot:             ptr.To(true),
							RunAsUser:                ptr.To[int64](1000),
							AllowPrivilegeEscalation: ptr.To(false),
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp-dir", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp-dir", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}
