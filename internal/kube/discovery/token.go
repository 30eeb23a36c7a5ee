// Package discovery owns what lets a node find and trust a cluster: the
// cluster-info ConfigMap and its JWS signatures checked against a token
// and a CA public-key pin, and the join command built from them.
// Creating tokens, cluster-info and their RBAC is kubeadm's own code
// (k8s.io/kubernetes/cmd/kubeadm/app/phases/bootstraptoken/...), which
// init and `token create` call.
package discovery

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
)

// DefaultTokenGroup is the group every kubeadm-style join token carries.
const DefaultTokenGroup = kubeadmconstants.NodeBootstrapTokenAuthGroup

// DeleteToken deletes a token given as its ID or as the whole token.
func DeleteToken(ctx context.Context, c kubernetes.Interface, tokenOrID string) (string, error) {
	id := tokenOrID
	if bootstraputil.IsValidBootstrapToken(tokenOrID) {
		id = strings.SplitN(tokenOrID, ".", 2)[0]
	} else if !bootstraputil.IsValidBootstrapTokenID(tokenOrID) {
		return "", fmt.Errorf("%q is neither a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16}) nor a token ID ([a-z0-9]{6})", tokenOrID)
	}
	err := c.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("bootstrap token %q not found", id)
	}
	return id, err
}

// JoinCommandLine is the join command on one line, as kubeadm's `token
// create --print-join-command` prints it (its continuations and tabs
// removed), so that `ssh worker "$(kubeboot token create
// --print-join-command)"` and `JOIN=$(...); $JOIN` run it.
func JoinCommandLine(endpoint, token, caHash string, controlPlane bool, certificateKey string) string {
	cmd := JoinCommand(endpoint, token, caHash, controlPlane, certificateKey)
	return strings.ReplaceAll(strings.ReplaceAll(cmd, "\\\n", ""), "\t", "")
}

// JoinCommand is the command a node runs to join, in init's multi-line
// form.
func JoinCommand(endpoint, token, caHash string, controlPlane bool, certificateKey string) string {
	cmd := fmt.Sprintf("kubeboot join %s --token %s \\\n\t--discovery-token-ca-cert-hash %s", endpoint, token, caHash)
	if controlPlane {
		cmd += " \\\n\t--control-plane"
		if certificateKey != "" {
			cmd += " --certificate-key " + certificateKey
		}
	}
	return cmd
}
