package bootstrap

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"

	"github.com/kubeboot/kubeboot/pkg/config"
)

// FetchConfig reads back what init stored for joining nodes, as kubeadm's
// join does: the ClusterConfiguration from kubeadm-config, and the
// cluster-wide kubelet and kube-proxy configurations from kubelet-config
// and kube-proxy when the cluster has them. It works against clusters made
// by kubeboot and by kubeadm alike. source names the server, for errors.
func FetchConfig(ctx context.Context, c kubernetes.Interface, source string) (*config.Config, error) {
	get := func(name, key string, required bool) (string, error) {
		cm, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsUnauthorized(err):
			return "", fmt.Errorf("%s does not accept the bootstrap token: it is unknown or has expired. Create a new one with `kubeboot token create --print-join-command` on a control-plane node", source)
		case apierrors.IsForbidden(err):
			return "", fmt.Errorf("the bootstrap token may not read kube-system/%s on %s (%v): the cluster lacks the RBAC rules for joining nodes; `kubeboot init phase upload-config all` on a control-plane node restores them", name, source, err)
		case apierrors.IsNotFound(err) && !required:
			return "", nil
		case apierrors.IsNotFound(err):
			return "", fmt.Errorf("%s has no kube-system/%s ConfigMap: the cluster was not made by `kubeboot init` or `kubeadm init`, or init did not finish", source, name)
		case err != nil:
			return "", fmt.Errorf("reading kube-system/%s from %s: %w", name, source, err)
		}
		v, ok := cm.Data[key]
		if !ok && required {
			return "", fmt.Errorf("kube-system/%s on %s has no %q key", name, source, key)
		}
		return v, nil
	}
	var docs []string
	for _, d := range []struct {
		name, key string
		required  bool
	}{
		{KubeadmConfigMap, kubeadmconstants.ClusterConfigurationConfigMapKey, true},
		{KubeletConfigMap, kubeadmconstants.KubeletBaseConfigurationConfigMapKey, false},
		{kubeadmconstants.KubeProxyConfigMap, kubeadmconstants.KubeProxyConfigMapKey, false},
	} {
		v, err := get(d.name, d.key, d.required)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(v) != "" {
			docs = append(docs, v)
		}
	}
	cfg, err := config.Parse(source+" kube-system/"+KubeadmConfigMap, []byte(strings.Join(docs, "\n---\n")))
	if err != nil {
		return nil, err
	}
	if cfg.Cluster == nil {
		return nil, fmt.Errorf("kube-system/%s on %s holds no ClusterConfiguration", KubeadmConfigMap, source)
	}
	kubeadmv1.SetObjectDefaults_ClusterConfiguration(cfg.Cluster)
	// The pod network's engines. A cluster without the ConfigMap (one
	// kubeadm made, or kubeboot before flannel) names none: the node runs
	// no flannel and no policy controller, and its pods get their network
	// from whatever CNI the cluster's operator installed.
	cfg.PodNetwork = config.PodNetwork{Backend: config.BackendNone}
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, config.PodNetworkConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading kube-system/%s from %s: %w", config.PodNetworkConfigMap, source, err)
	default:
		if cfg.PodNetwork, err = config.PodNetworkFromData(cm.Data); err != nil {
			return nil, fmt.Errorf("kube-system/%s on %s: %w", config.PodNetworkConfigMap, source, err)
		}
	}
	return cfg, nil
}
