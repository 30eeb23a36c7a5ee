// Package apiclient holds the small helpers kubeboot's phases share for
// talking to the API server: clients from kubeconfig files, idempotent
// create-or-update, and waiting with a bound.
package apiclient

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// FromKubeconfig builds a client from a kubeconfig file. server, when not
// empty, replaces the file's server URL: init talks to its own local API
// server while the files it writes name the control-plane endpoint.
func FromKubeconfig(file, server string) (kubernetes.Interface, *rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags(server, file)
	if err != nil {
		return nil, nil, fmt.Errorf("loading %s: %w", file, err)
	}
	rc.QPS, rc.Burst = 100, 200
	rc.Timeout = 30 * time.Second
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	return c, rc, nil
}

// CreateOrUpdate creates obj, or updates it when it exists already. The
// create and update functions are the typed client's, so one helper serves
// every kind.
func CreateOrUpdate[T any](ctx context.Context,
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
	obj T) error {
	_, err := create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = update(ctx, obj, metav1.UpdateOptions{})
	}
	return err
}

// Retry runs f until it succeeds, ctx ends or timeout passes; it is for
// calls that fail while a freshly started control plane settles (RBAC
// caches warming, leader election).
func Retry(ctx context.Context, timeout time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	for {
		if err = f(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
