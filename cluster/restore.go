package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/bootstraptoken/clusterinfo"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/etcd/etcdbackup"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
)

// RestoreOptions are what `kubeboot etcd snapshot restore` takes.
type RestoreOptions struct {
	Node
	Runtime
	// Snapshot is the file `kubeboot etcd snapshot save` wrote.
	Snapshot string
	// AdvertiseAddress and NodeName are this node's: the restored etcd
	// member's and control plane's. Both are required.
	AdvertiseAddress, NodeName string
}

// Restore brings a cluster back from a snapshot on a node where kubeboot
// has nothing yet: the shared CAs and keys are put back (so kubeconfigs of
// the old cluster keep working), etcd's data is restored as a one-member
// cluster of this node, and Init runs with the cluster's configuration and
// this node's address and name.
func Restore(ctx context.Context, o RestoreOptions) (*InitResult, error) {
	o.Node.defaults()
	if o.AdvertiseAddress == "" || o.NodeName == "" {
		return nil, fmt.Errorf("--apiserver-advertise-address and --node-name are required: the restored member and control plane are this node's")
	}
	fs := o.withoutExplain().fs()
	b, err := etcdbackup.Read(o.Snapshot)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	cfg := b.Config
	if cfg.Cluster.Etcd.Local == nil {
		return nil, fmt.Errorf("%s is of a cluster with external etcd", o.Snapshot)
	}
	// Nothing of kubeboot's may be here: restore writes the keys and
	// etcd's data before init.
	for _, p := range []string{node.SpecDir, node.AdminKubeconfig, path.Join(cfg.Cluster.CertificatesDir, "ca.key")} {
		if fsys.Exists(fs, p) {
			return nil, fmt.Errorf("%s exists: restore needs a node where kubeboot has nothing yet; run `kubeboot reset` first", fs.Path(p))
		}
	}
	if entries, _ := os.ReadDir(fs.Path(cfg.Cluster.Etcd.Local.DataDir)); len(entries) > 0 {
		return nil, fmt.Errorf("etcd's data directory %s is not empty; run `kubeboot reset` first", fs.Path(cfg.Cluster.Etcd.Local.DataDir))
	}
	fmt.Fprintf(o.Out, "[restore] Snapshot of %s at revision %d (%d keys), Kubernetes %s, taken %s\n",
		b.Manifest.Node, b.Manifest.Revision, b.Manifest.Keys, b.Manifest.KubernetesVersion, b.Manifest.Created.Format(time.RFC3339))
	cfg.Init = &kubeadmv1.InitConfiguration{}
	cfg.Init.LocalAPIEndpoint.AdvertiseAddress = o.AdvertiseAddress
	cfg.Init.NodeRegistration.Name = o.NodeName
	if err := cfg.DefaultInit(o.host()); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := o.binary(false); err != nil {
		return nil, err
	}
	peer := "https://" + net.JoinHostPort(o.AdvertiseAddress, "2380")
	fmt.Fprintf(o.Out, "[restore] Writing the cluster's keys to %q and etcd's data to %q, as member %q at %s\n",
		fs.Path(cfg.Cluster.CertificatesDir), fs.Path(cfg.Cluster.Etcd.Local.DataDir), o.NodeName, peer)
	if err := b.RestoreData(fs, cfg, o.NodeName, peer); err != nil {
		return nil, fmt.Errorf("restoring etcd's data: %w", err)
	}
	// init, with the cluster's configuration and this node's; etcd's data
	// directory is meant to be there.
	fmt.Fprintf(o.Out, "[restore] Running kubeboot init with the cluster's configuration\n")
	in := InitOptions{Node: o.Node, Runtime: o.Runtime, Config: cfg}
	in.IgnorePreflightErrors = append([]string{"DirAvailable-" + strings.ReplaceAll(cfg.Cluster.Etcd.Local.DataDir, "/", "-")}, o.IgnorePreflightErrors...)
	res, err := Init(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("kubeboot init on the restored data: %w (`kubeboot reset` removes what it made)", err)
	}
	if err := refreshClusterInfo(ctx, fs, o.Out); err != nil {
		return nil, err
	}
	return res, nil
}

// refreshClusterInfo rebuilds kube-public/cluster-info from this node's
// admin.conf: the restored one names the old cluster's endpoint, and
// kubeadm's phase keeps an existing one.
func refreshClusterInfo(ctx context.Context, fs fsys.FS, out io.Writer) error {
	admin := fs.Path(node.AdminKubeconfig)
	c, _, err := apiclient.FromKubeconfig(admin, "")
	if err != nil {
		return err
	}
	kc, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		return err
	}
	if err := c.CoreV1().ConfigMaps(metav1.NamespacePublic).Delete(ctx, "cluster-info", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := apiclient.KubeadmPrintsTo(out, func() error { return clusterinfo.CreateBootstrapConfigMapIfNotExists(c, kc) }); err != nil {
		return err
	}
	fmt.Fprintf(out, "[restore] Rebuilt the \"cluster-info\" ConfigMap for this control plane's endpoint\n")
	return nil
}
