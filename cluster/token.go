package cluster

import (
	"context"

	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
)

// TokenOptions are what `kubeboot token create` takes.
type TokenOptions = bootstrap.TokenOptions

// CreateToken creates a bootstrap token in the cluster the kubeconfig
// reaches, as kubeadm's `token create`, and returns the join command that
// uses it.
func CreateToken(ctx context.Context, o TokenOptions) (*JoinCommand, error) {
	return bootstrap.CreateToken(ctx, o)
}
