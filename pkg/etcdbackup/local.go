package etcdbackup

import (
	"context"
	"fmt"
	"os"

	"github.com/kubeboot/kubeboot/pkg/apiclient"
	"github.com/kubeboot/kubeboot/pkg/bootstrap"
	"github.com/kubeboot/kubeboot/pkg/component"
	"github.com/kubeboot/kubeboot/pkg/config"
	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/kubeconfig"
)

// LocalCluster reads the cluster's configuration with this control
// plane's admin.conf.
func LocalCluster(ctx context.Context, fs fsys.FS) (*config.Config, error) {
	admin := fs.Path(kubeconfig.AdminPath)
	c, _, err := apiclient.FromKubeconfig(admin, "")
	if err != nil {
		return nil, fmt.Errorf("%w: run this on a control-plane node", err)
	}
	return bootstrap.FetchConfig(ctx, c, admin)
}

// MemberName is this node's etcd member name, from its record (the host
// name when it has no member).
func MemberName(fs fsys.FS) string {
	if n, err := (component.Store{FS: fs}).Node(); err == nil && n.Etcd != nil && n.Etcd.Name != "" {
		return n.Etcd.Name
	}
	host, _ := os.Hostname()
	return host
}
