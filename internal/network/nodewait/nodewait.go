// Package nodewait is the pod network engines' wait for their node: its
// kubeconfig (a worker's comes with its kubelet's TLS bootstrap) and its
// Node as the engine needs it, rather than an exit and a restart.
package nodewait

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeboot/kubeboot/internal/base/poll"
)

// Wait polls, with a new client each time, until the kubeconfig works and
// ready accepts the node's Node, saying every 10 s what it waits for
// (what, e.g. "node w1's pod CIDR"). It returns the client.
func Wait(ctx context.Context, kubeconfig, nodeName, what string, ready func(*corev1.Node) error) (kubernetes.Interface, error) {
	var client kubernetes.Interface
	progress := func(waited time.Duration, last error) {
		klog.Infof("waiting for %s (%s so far): %v", what, waited.Round(time.Second), last)
	}
	err := poll.Until(ctx, 200*time.Millisecond, 10*time.Second, progress, func(ctx context.Context) error {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return err
		}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		n, err := c.CoreV1().Nodes().Get(rctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := ready(n); err != nil {
			return err
		}
		client = c
		return nil
	})
	return client, err
}
