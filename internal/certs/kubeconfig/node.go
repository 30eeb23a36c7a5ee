package kubeconfig

import (
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"
)

// Files of a joining node, in node.KubernetesDir.
const (
	// BootstrapKubelet holds the bootstrap token the kubelet uses for its
	// TLS bootstrap; join removes it once the kubelet has its certificate.
	BootstrapKubelet = kubeadmconstants.KubeletBootstrapKubeConfigFileName
	Kubelet          = kubeadmconstants.KubeletKubeConfigFileName
	// KubeProxy is kube-proxy's kubeconfig.
	KubeProxy = "kube-proxy.conf"
)

// TLSBootstrapUser is the user name kubeadm gives the bootstrap token.
const TLSBootstrapUser = "tls-bootstrap-token-user"

// WithToken is a kubeconfig that authenticates with a bootstrap token, as
// kubeadm writes bootstrap-kubelet.conf.
func WithToken(server, clusterName string, caData []byte, token string) *clientcmdapi.Config {
	return kubeconfigutil.CreateWithToken(server, clusterName, TLSBootstrapUser, caData, token)
}

// WithCertFiles is a kubeconfig whose client certificate and key are files,
// read again when they change: a worker's kube-proxy.conf names the
// kubelet's rotating client certificate, so kube-proxy runs with the
// node's own identity and never holds a certificate of its own to renew.
func WithCertFiles(server, clusterName string, caData []byte, user, certFile, keyFile string) *clientcmdapi.Config {
	kc := kubeconfigutil.CreateBasic(server, clusterName, user, caData)
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: keyFile}
	return kc
}
