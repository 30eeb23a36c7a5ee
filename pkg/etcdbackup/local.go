package etcdbackup

import (
	"context"
	"fmt"
	"os"
	"strings"

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

// MemberName is this node's etcd member name, from its etcd spec (the
// host name when it has none).
func MemberName(fs fsys.FS) string {
	node, _ := os.Hostname()
	if specs, err := (component.Store{FS: fs}).Load(); err == nil {
		for _, sp := range specs {
			for _, a := range sp.Args {
				if v, ok := strings.CutPrefix(a, "--name="); ok && sp.Name == component.Etcd {
					node = v
				}
			}
		}
	}
	return node
}
