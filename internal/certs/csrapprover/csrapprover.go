// Package csrapprover approves the kubelets' serving certificates
// (signer kubernetes.io/kubelet-serving) for the nodes the cluster knows.
//
// The controller-manager signs those certificates but never approves
// them: with serverTLSBootstrap, kubeadm leaves every node's serving CSR
// pending until an operator runs `kubectl certificate approve`, and until
// then `kubectl logs` and `exec` to the node fail. kubeboot runs this
// approver on each control-plane node, as the controller-manager's
// identity with one extra ClusterRole (see RBAC).
//
// A CSR is approved only when it is a kubelet serving CSR by kubeadm's and
// the API's own rules (certificates.ValidateKubeletServingCSR), asks for
// the requesting node's own name, and every address it names is one the
// Node object reports: a node cannot get a certificate for another
// node's name or address, nor for a name of its choosing.
package csrapprover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/kubernetes/pkg/apis/certificates"

	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
)

// Reason is the reason of the Approved condition the approver sets.
const Reason = "KubebootKnownNode"

// Approver approves kubelet serving CSRs of known nodes.
type Approver struct {
	Client kubernetes.Interface
	Logf   func(format string, args ...any)
}

// Run approves CSRs until ctx ends. A CSR whose node is not registered
// yet is tried again with backoff; one that fails the checks is left
// pending (an operator may still approve it) and logged once.
func (a *Approver) Run(ctx context.Context) error {
	if err := a.waitForRBAC(ctx); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(a.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()
	}))
	csrs := factory.Certificates().V1().CertificateSigningRequests()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 30*time.Second))
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && pending(csr) {
			queue.Add(csr.Name)
		}
	}
	if _, err := csrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), csrs.Informer().HasSynced) {
		return ctx.Err()
	}
	a.Logf("Approving the serving certificates of known nodes (signer %s)", certificatesv1.KubeletServingSignerName)
	refused := sets.New[string]()
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		name, quit := queue.Get()
		if quit {
			return ctx.Err()
		}
		csr, err := csrs.Lister().Get(name)
		if err == nil && pending(csr) {
			err = a.handle(ctx, csr)
		}
		var notYet *nodeNotFound
		var refused1 *refusal
		switch {
		case err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Approved, gone, or approved by another control plane's
			// approver meanwhile.
			queue.Forget(name)
		case errors.As(err, &notYet) && queue.NumRequeues(name) < 20:
			queue.AddRateLimited(name)
		case errors.As(err, &refused1):
			if !refused.Has(name) {
				refused.Insert(name)
				a.Logf("Leaving CSR %s pending: %v", name, err)
			}
			queue.Forget(name)
		default:
			a.Logf("CSR %s: %v", name, err)
			queue.AddRateLimited(name)
		}
		queue.Done(name)
	}
}

// waitForRBAC waits until the approver may list CSRs: on the first control
// plane it starts with the API server, before init's bootstrap-token phase
// creates its ClusterRole, and an informer refused at first backs off for
// seconds.
func (a *Approver) waitForRBAC(ctx context.Context) error {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Verb: "list"},
	}}
	logged := false
	return wait.PollUntilContextCancel(ctx, 300*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		r, err := a.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err == nil && r.Status.Allowed {
			return true, nil
		}
		if !logged {
			logged = true
			if err != nil {
				a.Logf("Waiting for the ClusterRole %s to be bound: %v", RBACName, err)
			} else {
				a.Logf("Waiting for the ClusterRole %s to be bound", RBACName)
			}
		}
		return false, nil
	})
}

func (a *Approver) handle(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	nodeName, _ := strings.CutPrefix(csr.Spec.Username, "system:node:")
	node, err := a.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &nodeNotFound{nodeName}
	}
	if err != nil {
		return err
	}
	if err := Check(csr, node); err != nil {
		return &refusal{err}
	}
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: Reason,
		Message:        "kubeboot approved the serving certificate of a known node for its own addresses",
		LastUpdateTime: metav1.Now(),
	})
	if _, err := a.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return err
	}
	a.Logf("Approved CSR %s: the serving certificate of node %q", csr.Name, nodeName)
	return nil
}

// Check tells whether csr is a kubelet serving CSR that node may have.
func Check(csr *certificatesv1.CertificateSigningRequest, node *corev1.Node) error {
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return fmt.Errorf("signer %q is not %q", csr.Spec.SignerName, certificatesv1.KubeletServingSignerName)
	}
	if csr.Spec.Username != "system:node:"+node.Name || !slices.Contains(csr.Spec.Groups, "system:nodes") {
		return fmt.Errorf("requested by %q (groups %v), not by node %q", csr.Spec.Username, csr.Spec.Groups, node.Name)
	}
	req, err := certificates.ParseCSR(csr.Spec.Request)
	if err != nil {
		return err
	}
	usages := sets.NewString()
	for _, u := range csr.Spec.Usages {
		usages.Insert(string(u))
	}
	if err := certificates.ValidateKubeletServingCSR(req, usages); err != nil {
		return err
	}
	if req.Subject.CommonName != csr.Spec.Username {
		return fmt.Errorf("asks for %q, not for the requesting node %q", req.Subject.CommonName, csr.Spec.Username)
	}
	names, ips := sets.New(node.Name), sets.New[string]()
	for _, addr := range node.Status.Addresses {
		switch addr.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			names.Insert(addr.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(addr.Address); ip != nil {
				ips.Insert(ip.String())
			}
		}
	}
	for _, n := range req.DNSNames {
		if !names.Has(n) {
			return fmt.Errorf("DNS name %q is not one of node %q's (%v)", n, node.Name, sets.List(names))
		}
	}
	for _, ip := range req.IPAddresses {
		if !ips.Has(ip.String()) {
			return fmt.Errorf("IP address %s is not one of node %q's (%v)", ip, node.Name, sets.List(ips))
		}
	}
	return nil
}

func pending(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
			return false
		}
	}
	return len(csr.Status.Certificate) == 0
}

type nodeNotFound struct{ name string }

func (e *nodeNotFound) Error() string { return fmt.Sprintf("node %q is not registered", e.name) }

type refusal struct{ err error }

func (e *refusal) Error() string { return e.err.Error() }

// RBACName names the ClusterRole and its binding.
const RBACName = "kubeboot:kubelet-serving-approver"

// ApproverUser is the identity the approver runs as: the
// controller-manager's (controller-manager.conf).
const ApproverUser = "system:kube-controller-manager"

// RBAC lets the approver's identity read CSRs and nodes and approve for
// the kubelet-serving signer only.
func RBAC(ctx context.Context, c kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: RBACName},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/approval"}, Verbs: []string{"update"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{certificatesv1.KubeletServingSignerName}, Verbs: []string{"approve"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
		},
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoles().Create, c.RbacV1().ClusterRoles().Update, role); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: RBACName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: RBACName},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: ApproverUser}},
	}
	return apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings().Create, c.RbacV1().ClusterRoleBindings().Update, binding)
}
