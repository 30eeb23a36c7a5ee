// Package addons owns the cluster add-ons init installs through the API:
// CoreDNS as kubeadm deploys it, with kubeboot's own image.
package addons

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
)

// DNSOptions shape the CoreDNS add-on.
type DNSOptions struct {
	Domain    string
	ServiceIP string
	// Upstream is what CoreDNS forwards other names to (a resolv.conf path
	// or addresses); empty means no forwarding, so nothing leaves the
	// cluster.
	Upstream string
	Replicas int32
}

// Corefile renders kubeadm's Corefile.
func Corefile(o DNSOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes %s in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
`, o.Domain)
	if o.Upstream != "" {
		fmt.Fprintf(&b, "    forward . %s {\n       max_concurrent 1000\n    }\n", o.Upstream)
	}
	fmt.Fprintf(&b, `    cache 30 {
       disable success %[1]s
       disable denial %[1]s
    }
`, o.Domain)
	if o.Upstream != "" {
		// Only a forwarding CoreDNS can loop; without forward the plugin
		// has nothing to watch and says so at every start.
		b.WriteString("    loop\n")
	}
	b.WriteString(`    reload
    loadbalance
}
`)
	return b.String()
}

var dnsLabels = map[string]string{"k8s-app": "kube-dns"}

// EnsureCoreDNS creates or updates CoreDNS's objects: ServiceAccount,
// ClusterRole and binding, ConfigMap, Deployment and the kube-dns Service.
func EnsureCoreDNS(ctx context.Context, c kubernetes.Interface, o DNSOptions) error {
	ns := metav1.NamespaceSystem
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ns}}
	if err := apiclient.CreateOrUpdate(ctx, c.CoreV1().ServiceAccounts(ns).Create, c.CoreV1().ServiceAccounts(ns).Update, sa); err != nil {
		return err
	}
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoles().Create, c.RbacV1().ClusterRoles().Update, cr); err != nil {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:coredns"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "coredns", Namespace: ns}},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings().Create, c.RbacV1().ClusterRoleBindings().Update, crb); err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ns}, Data: map[string]string{"Corefile": Corefile(o)}}
	if err := apiclient.CreateOrUpdate(ctx, c.CoreV1().ConfigMaps(ns).Create, c.CoreV1().ConfigMaps(ns).Update, cm); err != nil {
		return err
	}
	if err := apiclient.CreateOrUpdate(ctx, c.AppsV1().Deployments(ns).Create, c.AppsV1().Deployments(ns).Update, CoreDNSDeployment(o)); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: ns,
			Labels:      map[string]string{"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
			Annotations: map[string]string{"prometheus.io/port": "9153", "prometheus.io/scrape": "true"}},
		Spec: corev1.ServiceSpec{
			Selector:  dnsLabels,
			ClusterIP: o.ServiceIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				{Name: "metrics", Port: 9153, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9153)},
			},
		},
	}
	// As kubeadm's createDNSService: a Service that exists answers a create
	// with Invalid ("provided IP is already allocated": the cluster IP is
	// allocated before the name is checked), not AlreadyExists, so it is
	// read and updated (a restored cluster has it already).
	_, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) && !apierrors.IsInvalid(err) {
		return err
	}
	old, getErr := c.CoreV1().Services(ns).Get(ctx, svc.Name, metav1.GetOptions{})
	if getErr != nil {
		return errors.Join(err, getErr)
	}
	svc.ResourceVersion = old.ResourceVersion
	_, err = c.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
	return err
}

// CoreDNSDeployment is kubeadm's CoreDNS Deployment with kubeboot's image
// and a 1 s readiness period, so that DNS is declared ready as soon as it
// is (kubeadm's default 10 s period costs up to 10 s at every start).
func CoreDNSDeployment(o DNSOptions) *appsv1.Deployment {
	replicas := o.Replicas
	if replicas == 0 {
		replicas = 2
	}
	maxUnavailable := intstr.FromInt32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: metav1.NamespaceSystem, Labels: dnsLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &maxUnavailable}},
			Selector: &metav1.LabelSelector{MatchLabels: dnsLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: dnsLabels},
				Spec: corev1.PodSpec{
					PriorityClassName:  "system-cluster-critical",
					ServiceAccountName: "coredns",
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
							LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k8s-app", Operator: metav1.LabelSelectorOpIn, Values: []string{"kube-dns"}}}},
							TopologyKey:   "kubernetes.io/hostname",
						}}},
					}},
					Tolerations:  addOnTolerations(),
					NodeSelector: linuxNodes(),
					Containers: []corev1.Container{{
						Name:            "coredns",
						Image:           images.CoreDNS,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            []string{"-conf", "/etc/coredns/Corefile"},
						Resources: corev1.ResourceRequirements{
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("170Mi")},
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("70Mi")},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config-volume", MountPath: "/etc/coredns", ReadOnly: true}},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
							{Name: "metrics", ContainerPort: 9153, Protocol: corev1.ProtocolTCP},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"ALL"}},
							ReadOnlyRootFilesystem:   ptr.To(true),
						},
						LivenessProbe: &corev1.Probe{
							ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
							InitialDelaySeconds: 60, TimeoutSeconds: 5, SuccessThreshold: 1, FailureThreshold: 5,
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181), Scheme: corev1.URISchemeHTTP}},
							PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
						},
					}},
					DNSPolicy: corev1.DNSDefault,
					Volumes: []corev1.Volume{{Name: "config-volume", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"},
						Items:                []corev1.KeyToPath{{Key: "Corefile", Path: "Corefile"}},
					}}}},
				},
			},
		},
	}
}

// addOnTolerations let a cluster add-on's pods run where only add-ons
// may (CriticalAddonsOnly) and on control-plane nodes, as kubeadm's
// CoreDNS does.
func addOnTolerations() []corev1.Toleration {
	return []corev1.Toleration{
		{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
		{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
	}
}

// linuxNodes is an add-on's node selector: Linux nodes only.
func linuxNodes() map[string]string { return map[string]string{"kubernetes.io/os": "linux"} }
