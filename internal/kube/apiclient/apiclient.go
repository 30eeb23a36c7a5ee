// Package apiclient holds the small helpers kubeboot's phases share for
// talking to the API server: clients from kubeconfig files, idempotent
// create-or-update, and waiting with a bound.
package apiclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeboot/kubeboot/internal/base/poll"
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

// Ensure creates obj, or updates the one there at its resourceVersion
// (some kinds, an APIService say, refuse an update without one); keep,
// when set, first copies onto obj what the server assigned to the one
// there (a Service's cluster IP).
func Ensure[T metav1.Object](ctx context.Context,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
	obj T, keep func(old, obj T)) error {
	old, err := get(ctx, obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = create(ctx, obj, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if keep != nil {
		keep(old, obj)
	}
	obj.SetResourceVersion(old.GetResourceVersion())
	_, err = update(ctx, obj, metav1.UpdateOptions{})
	return err
}

// Retry runs f until it succeeds, ctx ends or timeout passes; it is for
// calls that fail while a freshly started control plane settles (RBAC
// caches warming, leader election). An error no retry can mend (Invalid,
// BadRequest, an unknown kind or method, a request too large) is returned
// at once. Forbidden is retried only for forbiddenGrace: the authorizer of
// an API server that has just started refuses for a few seconds, after
// that a Forbidden is the real answer.
func Retry(ctx context.Context, timeout time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := poll.Until(ctx, 100*time.Millisecond, 0, nil, func(ctx context.Context) error {
		err := f(ctx)
		if err != nil && (permanent(err) || apierrors.IsForbidden(err) && time.Since(start) >= forbiddenGrace) {
			return poll.Stop(err)
		}
		return err
	})
	var exp *poll.Expired
	if errors.As(err, &exp) {
		return exp.Last
	}
	return err
}

// forbiddenGrace bounds how long Retry retries Forbidden.
var forbiddenGrace = 10 * time.Second

// permanent reports errors that retrying the same request cannot mend.
func permanent(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err)
}
