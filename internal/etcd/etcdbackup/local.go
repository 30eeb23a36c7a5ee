package etcdbackup

import (
	"context"
	"fmt"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// LocalCluster reads the cluster's configuration with this control
// plane's admin.conf.
func LocalCluster(ctx context.Context, fs fsys.FS) (*config.Config, error) {
	admin := fs.Path(node.AdminKubeconfig)
	c, _, err := apiclient.FromKubeconfig(admin, "")
	if err != nil {
		return nil, fmt.Errorf("%w: run this on a control-plane node", err)
	}
	return bootstrap.FetchConfig(ctx, c, admin)
}
