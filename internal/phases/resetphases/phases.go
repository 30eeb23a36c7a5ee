// Package resetphases declares the phase tree of `kubeboot reset`,
// kubeadm's: preflight, remove-etcd-member, cleanup-node. Reset removes
// everything this node made, under its root prefix and at the machine-wide
// paths upstream components use, and nothing of another node's.
package resetphases

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/etcd/etcdclient"
	"github.com/kubeboot/kubeboot/internal/host/cleanup"
	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
	"github.com/kubeboot/kubeboot/internal/host/host"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/host/nodestate"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Data is what every reset phase works on.
type Data struct {
	FS  fsys.FS
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// Force skips the confirmation.
	Force bool
	// CertDir is a certificates dir outside /etc/kubernetes to remove too.
	CertDir string
	// StopDaemon stops the node daemon and its components.
	StopDaemon func(ctx context.Context) error

	rec *nodestate.Node
}

// node is the node's record (package nodestate), read once: reset
// removes it with the rest. A node without one (its init stopped before
// it wrote a spec) has none of the facts it gives.
func (d *Data) node() nodestate.Node {
	if d.rec == nil {
		rec, err := component.Store{FS: d.FS}.Node()
		if err != nil {
			d.logf("[reset] WARNING: reading the node's record: %v; going on without it", err)
		}
		if rec.CertificatesDir == "" {
			rec.CertificatesDir = config.DefaultCertificatesDir
		}
		d.rec = &rec
	}
	return *d.rec
}

func (d *Data) logf(format string, args ...any) { fmt.Fprintf(d.Out, format+"\n", args...) }

// resetf is logf with reset's prefix, for the domain packages' log lines.
func (d *Data) resetf(format string, args ...any) { d.logf("[reset] "+format, args...) }

type phase = workflow.Phase[*Data]

// Phases returns the reset tree.
func Phases() []phase {
	return []phase{
		{Name: "preflight", Short: "Run reset pre-flight checks", Run: runPreflight},
		{Name: "remove-etcd-member", Short: "Remove a local etcd member", RunIf: hasLocalEtcd, Run: runRemoveEtcdMember},
		{Name: "cleanup-node", Short: "Run cleanup node", Run: runCleanupNode},
	}
}

func hasLocalEtcd(d *Data) bool { return d.node().Runs(component.Etcd) }

func runPreflight(_ context.Context, d *Data) error {
	d.logf("[preflight] Running pre-flight checks")
	if dir, n := removedSnapshots(d.FS); n > 0 {
		d.logf("[reset] WARNING: the %d scheduled etcd snapshots in %s go with this node's state: copy them elsewhere first to keep them", n, d.FS.Path(dir))
	}
	if d.Force || d.FS.DryRun() {
		return nil
	}
	f, ok := d.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return fmt.Errorf("reset removes this node's cluster state under %s: confirm with --force when not on a terminal", d.FS.Path("/"))
	}
	fmt.Fprintf(d.Out, "[reset] WARNING: Changes made to this host by 'kubeboot init' or 'kubeboot join' will be reverted.\n[reset] Are you sure you want to proceed? [y/N]: ")
	answer, _ := bufio.NewReader(d.In).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return fmt.Errorf("aborted reset operation")
	}
	return nil
}

// nodeStatePaths are the node paths kubeboot creates, besides the etcd
// data dir (read from the etcd spec) and the certificates dir.
var nodeStatePaths = []string{node.KubernetesDir, node.StateDir, node.LogDir, node.RunDir, node.AuditLogDir,
	node.KubeletDir, node.KubeProxyDir, node.CNIConfDir, node.CNIDataDir, node.PodLogsDir}

// emptyParents are the parents of nodeStatePaths that init makes, deepest
// first: reset removes each one that is empty.
var emptyParents = []string{"/etc/cni", "/usr/libexec/kubernetes/kubelet-plugins/volume", "/usr/libexec/kubernetes/kubelet-plugins", "/usr/libexec/kubernetes"}

func runCleanupNode(ctx context.Context, d *Data) error {
	fs := d.FS
	paths := append([]string(nil), nodeStatePaths...)
	if d.CertDir != "" {
		paths = append(paths, d.CertDir)
	}
	rec := d.node()
	paths = append(paths, etcdDataDir(rec))
	paths = append(paths, daemon.UnitPath(fs))
	if !fs.DryRun() {
		daemon.RemoveUnit(fs, d.resetf)
	}
	if entries, err := os.ReadDir(fs.Path(node.VolumePluginDir)); err == nil && len(entries) == 0 {
		// The kubelet made it; FlexVolume drivers someone installed stay.
		paths = append(paths, node.VolumePluginDir)
	}
	if fs.DryRun() {
		if pid := daemon.Running(fs); pid != 0 {
			d.logf("[dryrun] Would stop every container, the kubeboot daemon (pid %d) and its components", pid)
		}
		_, err := cleanup.Remove(fs, paths, d.Out)
		return err
	}
	worker := rec.Role == nodestate.Worker && rec.Runs(component.Kubelet)
	nodeSide := hasNodeSide(fs, rec)
	name, podSubnets := rec.Name, rec.PodSubnets
	// The kubelet first, or it restarts the containers we kill (and
	// registers the Node again); then the containers, while containerd
	// still runs: they are not the daemon's children and would outlive it.
	d.logf("[reset] Stopping the kubelet")
	if err := daemon.NewClient(fs).StopComponent(ctx, component.Kubelet, time.Minute); err != nil {
		return err
	}
	if worker && name != "" {
		d.deleteNode(ctx, name, path.Join(node.KubernetesDir, kubeconfig.Kubelet))
	}
	ids, err := cleanup.KillContainers(ctx, fs.Path(node.ContainerdSocket), d.Out)
	if err != nil {
		fmt.Fprintf(d.Err, "[reset] %v\n", err)
	}
	if err := d.StopDaemon(ctx); err != nil {
		return err
	}
	cleanup.KillProcesses(fs.Path(node.ContainerdState), d.Out)
	group := cpugroup.Name(fs.Path("/"))
	cleanup.KillCgroup(path.Join(group, "kubepods"), d.Out)
	// Under systemd the node's pods are in its slice, where the kubelet's
	// systemd driver put them: stopping it ends what is left there.
	daemon.StopSlice(fs, d.resetf)
	// Only under kubeboot's own directories: with --root / an unmount under
	// the root would take the host's mounts.
	d.logf("[reset] Unmounting mounted directories in %q", fs.Path(node.KubeletDir))
	for _, dir := range []string{node.KubeletDir, node.ContainerdState, node.ContainerdRoot, node.RunDir} {
		if err := cleanup.Unmount(fs.Path(dir), d.Out); err != nil {
			return err
		}
	}
	if nodeSide {
		if err := cleanup.FlushChains(cleanup.PodNetworkChains, d.Out); err != nil {
			fmt.Fprintf(d.Err, "[reset] %v\n", err)
		}
		cleanup.PodNetwork(podSubnets, d.Out)
	} else {
		// A control plane alone (dev up --mode control-plane, or
		// cluster.Init with ControlPlaneOnly) ran no pod network: the
		// network namespace's links and chains are someone else's.
		d.logf("[reset] No kubelet, containerd or kube-proxy ran on this node: its network namespace's links and iptables chains are left alone")
	}
	cleanup.RemoveCgroups(group, d.Out)
	// The kernel modules, sysctls and their files that init or join
	// changed on this machine, after the bridge that holds br_netfilter's
	// bridge module went.
	host.Undo(fs, d.resetf)
	if fs.Path("/") == "/" && len(cleanup.OtherNodeProcesses()) > 0 {
		paths = keepShared(paths)
	}
	removed, err := cleanup.Remove(fs, paths, d.Out)
	if err != nil {
		return err
	}
	// The directories above those paths that init made for them, when
	// nothing else is left in them.
	for _, p := range emptyParents {
		if os.Remove(fs.Path(p)) == nil {
			d.logf("[reset] Removed the empty directory %q", fs.Path(p))
		}
	}
	shared := cleanup.Shared{
		PodLogsDir: fs.Path(node.PodLogsDir), CNINetwork: node.CNINetwork(fs),
		ShimSocketDir: node.ShimSocketDir(fs), ContainerIDs: ids, Out: d.Out,
		StorageLinks: storageLinks(fs), Root: fs.Path("/"),
	}
	if err := shared.Remove(); err != nil {
		return err
	}
	daemon.ReloadUnits(fs, d.resetf)
	if len(removed) == 0 {
		d.logf("[reset] Nothing to remove under %s", fs.Path("/"))
	}
	return nil
}

// hasNodeSide reports whether a node side ran here (or began to): the
// record names the kubelet, containerd, kube-proxy or the pod network's
// engines, or their state directories are there.
func hasNodeSide(fs fsys.FS, rec nodestate.Node) bool {
	for _, name := range append([]string{component.RetiredNetAgent}, component.NodeProcesses...) {
		if rec.Runs(name) {
			return true
		}
	}
	return fsys.Exists(fs, node.ContainerdState) || fsys.Exists(fs, node.KubeletDir)
}

// deleteNode removes this node's Node object, with the credentials of the
// kubeconfig file (a worker's own: init grants nodes that, for their own
// Node only). A worker reaches the cluster through its node-local load
// balancer; when that does not answer (the node daemon is gone), the API
// server the node joined through is tried directly. Both are tried again
// with back-off for a minute, as a slow API server may need; when none
// deletes it, it says what to do instead.
func (d *Data) deleteNode(ctx context.Context, name, kubeconfigFile string) {
	file := d.FS.Path(kubeconfigFile)
	_, rc, err := apiclient.FromKubeconfig(file, "")
	if err == nil {
		hosts := []string{rc.Host}
		if lb := ownOf[*component.APIServerLBConfig](d.FS, component.APIServerLB); lb != nil && lb.Seed != "" {
			hosts = append(hosts, "https://"+lb.Seed)
		}
		var servers []apiServer
		for _, host := range hosts {
			rc := rest.CopyConfig(rc)
			rc.Host = host
			c, cerr := kubernetes.NewForConfig(rc)
			if cerr != nil {
				err = cerr
				break
			}
			servers = append(servers, apiServer{host: host, client: c})
		}
		if err == nil {
			if err = d.deleteNodeFrom(ctx, name, servers, nodeDeleteRetry()); err == nil {
				return
			}
		}
	}
	d.logf("[reset] Could not delete Node %q from the cluster (%v): remove it on a control-plane node with `kubectl delete node %s`", name, err, name)
}

// apiServer is one way to the cluster's API.
type apiServer struct {
	host   string
	client kubernetes.Interface
}

// nodeDeleteRetry is how long, and how often, reset tries to delete its
// Node: each try gives every API server 15 s, the tries are 1, 2, 4, 8 s
// apart and all end within a minute.
func nodeDeleteRetry() retry {
	return retry{backoff: wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 6, Cap: 8 * time.Second}, try: 15 * time.Second, bound: time.Minute}
}

// retry bounds an action that is tried again: backoff between the
// tries, try for each, bound for all.
type retry struct {
	backoff    wait.Backoff
	try, bound time.Duration
}

// deleteNodeFrom deletes the Node name through the first of servers that
// answers, trying them all again as r says; a Node that is not there
// counts as deleted. It returns the last error.
func (d *Data) deleteNodeFrom(ctx context.Context, name string, servers []apiServer, r retry) error {
	ctx, cancel := context.WithTimeout(ctx, r.bound)
	defer cancel()
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, r.backoff, func(ctx context.Context) (bool, error) {
		for _, s := range servers {
			tctx, cancel := context.WithTimeout(ctx, r.try)
			last = s.client.CoreV1().Nodes().Delete(tctx, name, metav1.DeleteOptions{})
			cancel()
			switch {
			case apierrors.IsNotFound(last):
				d.logf("[reset] Node %q is not in the cluster (any more)", name)
				return true, nil
			case last == nil:
				d.logf("[reset] Deleted Node %q from the cluster at %s", name, s.host)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// storageLinks is where a node whose root prefix is not / links its
// volume directory from (node.StorageLink), "" with the root prefix /.
func storageLinks(fs fsys.FS) string {
	if fs.Path("/") == "/" {
		return ""
	}
	return node.StorageRoot
}

// ownOf is the typed configuration of one of kubeboot's own components
// (T is its type), nil when the node has no spec of it.
func ownOf[T component.OwnConfig](fs fsys.FS, name string) T {
	spec, _, _ := (component.Store{FS: fs}).Get(name)
	return component.OwnOf[T](spec.Own)
}

// removedSnapshots counts the scheduled etcd snapshots reset removes: those
// in the snapshotter's directory (from its spec) when it lies in the
// node's state, as the default does.
func removedSnapshots(fs fsys.FS) (string, int) {
	sch := ownOf[*component.EtcdSnapshotterConfig](fs, component.EtcdSnapshotter)
	if sch == nil {
		return "", 0
	}
	dir := sch.Dir
	if !slices.ContainsFunc(nodeStatePaths, func(p string) bool { return dir == p || strings.HasPrefix(dir, p+"/") }) {
		return "", 0
	}
	entries, err := os.ReadDir(fs.Path(dir))
	if err != nil {
		return "", 0
	}
	n := 0
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".snapshot") {
			n++
		}
	}
	return dir, n
}

// etcdDataDir is the local etcd member's data dir, from the node's
// record, so that a custom etcd.local.dataDir is removed too.
func etcdDataDir(n nodestate.Node) string {
	if n.Etcd != nil && n.Etcd.DataDir != "" {
		return n.Etcd.DataDir
	}
	return config.DefaultEtcdDataDir
}

// keepShared replaces, in paths, the node's directories that hold a
// machine-wide path (on root prefix "/") by their other entries: another
// node's kubelet listens in /var/lib/kubelet/device-plugins, and its
// containerd caches CNI results in /var/lib/cni/results.
func keepShared(paths []string) []string {
	shared := map[string]string{node.KubeletDir: cleanup.DevicePlugins, node.CNIDataDir: path.Join(cleanup.CNICache, "results")}
	var out []string
	for _, p := range paths {
		keep, ok := shared[p]
		if !ok {
			out = append(out, p)
			continue
		}
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if child := path.Join(p, e.Name()); child != keep {
				out = append(out, child)
			}
		}
	}
	return out
}

// runRemoveEtcdMember takes this node's member out of a multi-member etcd
// before its data goes, as kubeadm does: the others keep quorum. It
// refuses, unless --force, to leave a single member (no failure tolerated
// any more) or to act on an etcd without quorum. A control plane of such a
// cluster also deletes its Node object first, while its API server still
// serves (and its kubelet no longer re-registers it).
func runRemoveEtcdMember(ctx context.Context, d *Data) error {
	if d.FS.DryRun() {
		d.logf("[dryrun] Would remove this node's etcd member from the cluster")
		return nil
	}
	rec := d.node()
	peer := ""
	if rec.Etcd != nil {
		peer = rec.Etcd.PeerURL
	}
	certs := d.FS.Path(rec.CertificatesDir)
	ec, err := etcdclient.Members(certs, etcdclient.Local)
	if err != nil {
		return err
	}
	members, err := etcdclient.List(ctx, ec)
	if err != nil {
		if d.Force {
			d.logf("[reset] WARNING: cannot list the etcd members (%v): with --force, this node's member goes without being removed from the cluster; remove it from another control plane (etcdctl member remove)", err)
			return nil
		}
		return fmt.Errorf("cannot reach the local etcd member to remove it from its cluster (%v): start the node (`kubeboot daemon start`) and reset again, or reset with --force and remove the member from another control plane", err)
	}
	if len(members) <= 1 {
		d.logf("[reset] The local etcd member is its cluster's only one: its data directory goes with cleanup-node")
		return nil
	}
	if len(members) == 2 && !d.Force {
		return fmt.Errorf("etcd has 2 members: removing this node's would leave 1, which tolerates no failure, and a failure of the other node would then lose the cluster. Join another control plane first, or reset with --force")
	}
	if err := ec.CheckClusterHealth(); err != nil && !d.Force {
		return fmt.Errorf("etcd is not healthy (%v): removing a member now could cost it its quorum; repair it first, or reset with --force", err)
	}
	if name := rec.Name; name != "" {
		d.logf("[reset] Stopping the kubelet")
		if err := daemon.NewClient(d.FS).StopComponent(ctx, component.Kubelet, time.Minute); err != nil {
			return err
		}
		d.deleteNode(ctx, name, node.AdminKubeconfig)
	}
	// The API server next, while its etcd member still serves: on the way
	// out it removes its endpoint from the kubernetes Service (the other
	// nodes' load balancers follow it), where without etcd it waited for
	// the daemon's stop timeout.
	d.logf("[reset] Stopping the control plane components")
	for _, c := range []string{component.ControllerManager, component.Scheduler, component.APIServer} {
		if err := daemon.NewClient(d.FS).StopComponent(ctx, c, time.Minute); err != nil {
			return err
		}
	}
	id, err := ec.GetMemberID(peer)
	if err != nil {
		return fmt.Errorf("finding this node's etcd member (%s): %w", peer, err)
	}
	// Through the other members: the local one stops as soon as it is
	// removed, and the removal's answer and the check that follows it
	// would wait on it (they did, until their deadline).
	others, err := etcdclient.Members(certs, etcdclient.OthersClientURLs(members, peer)...)
	if err != nil {
		return err
	}
	d.logf("[reset] Removing etcd member %x (%s) from the cluster", id, peer)
	left, err := others.RemoveMember(id)
	if err != nil {
		return fmt.Errorf("removing this node's etcd member %x: %w", id, err)
	}
	var names []string
	for _, m := range left {
		names = append(names, m.Name)
	}
	d.logf("[reset] etcd keeps %d members: %s", len(left), strings.Join(names, ", "))
	return nil
}
