// Package apply brings the cluster of a cluster file up over SSH, or
// converges it (`kubeboot apply -f`, cluster.Apply): it reads every
// host's state, plans what each host needs, and carries the plan out.
package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"k8s.io/kubectl/pkg/drain"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/host/remote"
	"github.com/kubeboot/kubeboot/pkg/clusterfile"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Options are what `kubeboot apply -f` takes.
type Options struct {
	// Cluster is the cluster file, read and validated (clusterfile.Read).
	Cluster *clusterfile.Cluster
	// Binary is the kubeboot binary copied to every host; this process's
	// own when empty.
	Binary string
	// DryRun connects to every host, reads its state and prints the plan;
	// it changes nothing anywhere.
	DryRun bool
	// AdminKubeconfig is where the cluster's admin kubeconfig is written,
	// its server an address this machine reaches.
	AdminKubeconfig string
	// Timeout bounds the wait for every node to be Ready (10 min when 0).
	Timeout time.Duration
	// Prune removes the nodes apply made from hosts that are no longer in
	// the file: each is drained, reset over SSH (as apply reached it, in
	// its record of hosts, the ConfigMap kube-system/kubeboot-apply-hosts)
	// and its Node deleted; workers first, then control planes one at a
	// time. A Node not in that record is never reset. Without Prune they
	// are left alone.
	Prune bool
	// Out receives one progress line per host and step.
	Out io.Writer
}

// Result is what Run did.
type Result struct {
	// Plan is what it decided to do, from the hosts' state before it
	// changed any; with DryRun, all it did.
	Plan *Plan `json:"plan"`
	// AdminKubeconfig is the admin kubeconfig written on this machine.
	AdminKubeconfig string `json:"adminKubeconfig,omitempty"`
	// Added are the nodes that init or join made; Unchanged those already
	// in the cluster, left alone; Pruned those removed (with Prune).
	Added     []string `json:"added,omitempty"`
	Unchanged []string `json:"unchanged,omitempty"`
	Pruned    []string `json:"pruned,omitempty"`
}

// Plan is what Run does, decided from every host's state and the
// cluster's Nodes before it changes anything: the value of a dry run.
type Plan struct {
	// Hosts has one step per host of the file, in the file's order.
	Hosts []HostStep `json:"hosts"`
	// OtherNodes are the cluster's Nodes that no host of the file is:
	// pruned (with Prune, when apply's record of hosts names their host)
	// or left alone.
	OtherNodes []OtherNode `json:"otherNodes,omitempty"`
}

// Action is what a host's step makes of it.
type Action string

// The actions of a host's step.
const (
	// Nothing: the host is a node of the cluster already.
	Nothing Action = "nothing"
	// Init makes the first control plane.
	Init Action = "init"
	// JoinControlPlane and JoinWorker join the host.
	JoinControlPlane Action = "join-control-plane"
	JoinWorker       Action = "join-worker"
)

// HostStep is what Run does to one host of the file.
type HostStep struct {
	// Host is how apply reaches the host (user@address:port), Root the
	// node's root on it (kubeboot's --root) when not /.
	Host string `json:"host"`
	Root string `json:"root,omitempty"`
	// Node is the Node it is or becomes.
	Node   string `json:"node"`
	Action Action `json:"action"`
	// Reset says why the host is reset before its action: a node's state
	// that is not the cluster's (a join that failed), or an init or join
	// that did not finish. Empty when it is not reset.
	Reset string `json:"reset,omitempty"`
	// DeleteNode: the host's Node is deleted after that reset (its join
	// made the Node, then did not finish).
	DeleteNode bool `json:"deleteNode,omitempty"`
}

// OtherNode is a Node of the cluster that no host of the file is.
type OtherNode struct {
	Node string `json:"node"`
	// Prune: it is drained, its host reset over SSH and the Node deleted.
	Prune bool `json:"prune"`
	// Host and Root are its host as apply's record of hosts has it, when
	// it does.
	Host string `json:"host,omitempty"`
	Root string `json:"root,omitempty"`
	// LeftAlone says why it is not pruned.
	LeftAlone string `json:"leftAlone,omitempty"`
}

// Run applies the cluster file: cluster.Apply.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.AdminKubeconfig == "" && !o.DryRun {
		return nil, errors.New("no path for the admin kubeconfig")
	}
	a, err := newApplyRun(o)
	if err != nil {
		return nil, err
	}
	defer a.close()
	res, err := a.apply(ctx)
	if err != nil && ctx.Err() != nil {
		err = a.interrupted(err)
	}
	return res, err
}

// apply is Apply.
func (a *applyRun) apply(ctx context.Context) (*Result, error) {
	o := a.o
	if err := a.connect(ctx); err != nil {
		return nil, err
	}
	if err := a.readCluster(ctx); err != nil {
		return nil, err
	}
	p, err := a.plan()
	if err != nil {
		return nil, fmt.Errorf("%w\nnothing was changed on any host", err)
	}
	if o.DryRun {
		a.logf("", "dry run: nothing was changed on any host")
		return &Result{Plan: &p.Plan, Unchanged: p.unchanged}, nil
	}
	if err := a.run(ctx, p); err != nil {
		return nil, err
	}
	res := &Result{Plan: &p.Plan, AdminKubeconfig: o.AdminKubeconfig, Added: p.added, Unchanged: p.unchanged}
	if err := a.failed(); err != nil {
		return res, err
	}
	res.Pruned, err = a.prune(ctx, p)
	return res, err
}

// applyRun is one Apply.
type applyRun struct {
	o     Options
	hosts []*applyHost
	// dialer reaches the hosts, with one connection to each bastion.
	dialer *remote.Dialer
	outMu  sync.Mutex
	// primary is the control plane the cluster is reached through; admin
	// its admin kubeconfig, rewritten for this machine.
	primary *applyHost
	admin   []byte
	client  kubernetes.Interface
	nodes   map[string]*corev1.Node
	// hostsRecord is the host of each node apply made, as it read it.
	hostsRecord hostsRecord
	changes     changes
}

// applyHost is one host of the file.
type applyHost struct {
	*clusterfile.Host
	conn *remote.Host
	// node is the Node's name; binary the kubeboot binary's path on the
	// host.
	node, binary string
	// state: the host has a node's state (kubelet.conf, or kubeboot's
	// directory that reset removes); admin: a control
	// plane's admin.conf.
	state, admin bool
	// ca is the sha256 of the cluster CA the host has, if any.
	ca string
	// record is apply's record on the host of the step it ran there
	// (applyRecordPath); nil without one.
	record *hostRecord
	err    error
}

func newApplyRun(o Options) (*applyRun, error) {
	if o.Cluster == nil {
		return nil, errors.New("no cluster file")
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Binary = exe
	}
	a := &applyRun{o: o, dialer: &remote.Dialer{}}
	for i := range o.Cluster.Hosts {
		h := &o.Cluster.Hosts[i]
		a.hosts = append(a.hosts, newApplyHost(h))
	}
	return a, nil
}

// newApplyHost is h as apply reaches it; its node name is read from the
// host at connect when the file gives none.
func newApplyHost(h *clusterfile.Host) *applyHost {
	return &applyHost{Host: h, node: h.NodeName, binary: path.Join(h.Root, "usr/local/bin/kubeboot")}
}

// workersThenControlPlanes runs f on the workers of hosts in parallel,
// then on the control planes one at a time, in the order given; it
// returns every error.
func (a *applyRun) workersThenControlPlanes(hosts []*applyHost, f func(h *applyHost) error) error {
	var workers, cps []*applyHost
	for _, h := range hosts {
		if h.Role == clusterfile.RoleControlPlane {
			cps = append(cps, h)
		} else {
			workers = append(workers, h)
		}
	}
	errs := []error{a.each(workers, f)}
	for _, h := range cps {
		errs = append(errs, a.each([]*applyHost{h}, f))
	}
	return errors.Join(errs...)
}

func (a *applyRun) close() {
	for _, h := range a.hosts {
		h.conn.Close()
	}
	a.dialer.Close()
}

// logf writes one progress line, about host h ("" for the whole run).
func (a *applyRun) logf(h string, format string, args ...any) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	prefix := "[apply] "
	if h != "" {
		prefix = "[" + h + "] "
	}
	fmt.Fprintf(a.o.Out, "%s%s\n", prefix, fmt.Sprintf(format, args...))
}

// each runs f on hosts in parallel and returns every error, each naming
// its host.
func (a *applyRun) each(hosts []*applyHost, f func(h *applyHost) error) error {
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(h); err != nil {
				errs[i] = fmt.Errorf("%s (%s): %w", h.Name(), h.Address, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// target is how h is reached over SSH.
func target(h *clusterfile.Host) remote.Target {
	t := remote.Target{Address: h.Address, Port: h.SSH.Port, User: h.SSH.User, KeyPath: h.SSH.KeyPath, KnownHosts: h.SSH.KnownHosts}
	if b := h.SSH.Bastion; b != nil {
		t.Bastion = &remote.Target{Address: b.Address, Port: b.Port, User: b.User, KeyPath: b.KeyPath, KnownHosts: h.SSH.KnownHosts}
	}
	return t
}

// goarchUname is uname -m of the machines runtime.GOARCH runs on.
var goarchUname = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

// connect reaches every host and reads its state; it changes nothing.
func (a *applyRun) connect(ctx context.Context) error {
	err := a.each(a.hosts, func(h *applyHost) error {
		conn, err := a.dialer.Dial(ctx, target(h.Host))
		if err != nil {
			return err
		}
		h.conn = conn
		kubelet, own, admin := h.path(path.Join(node.KubernetesDir, kubeconfig.Kubelet)), h.path(node.ConfigDir), h.path(node.AdminKubeconfig)
		facts, err := conn.Probe(ctx, kubelet, own, admin)
		if err != nil {
			return err
		}
		if want := goarchUname[runtime.GOARCH]; facts.Machine != want {
			return fmt.Errorf("the host is %s, this kubeboot binary is for %s (%s)", facts.Machine, runtime.GOARCH, want)
		}
		if h.ca, err = conn.FileSHA256(ctx, path.Join(h.Root, a.certDir(), "ca.crt")); err != nil {
			return err
		}
		if h.node == "" {
			h.node = strings.ToLower(facts.Hostname)
		}
		if h.record, err = h.readRecord(ctx); err != nil {
			return err
		}
		// A step that did not finish may have left anything: its host is
		// reset before the step runs again.
		h.state = facts.Exists[kubelet] || facts.Exists[own] || h.record.unfinished()
		h.admin = facts.Exists[admin]
		a.logf(h.Name(), "connected to %s (%s)", target(h.Host), facts.Machine)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w\nnothing was changed on any host", err)
	}
	seen := map[string]*applyHost{}
	for _, h := range a.hosts {
		if o, dup := seen[h.node]; dup {
			return fmt.Errorf("%s (%s) and %s (%s) would both be Node %q: give each a nodeName\nnothing was changed on any host", o.Address, o.Root, h.Address, h.Root, h.node)
		}
		seen[h.node] = h
	}
	return nil
}

// readCluster finds the cluster the hosts already form, if any, through
// the first control plane that has an admin kubeconfig and whose init or
// join did not stop half-way, and reads its Nodes.
func (a *applyRun) readCluster(ctx context.Context) error {
	if a.primary = a.firstDoneControlPlane(); a.primary == nil {
		return nil
	}
	if err := a.readAdmin(ctx); err != nil {
		return fmt.Errorf("%s holds the cluster's admin kubeconfig, but: %w\nnothing was changed on any host", a.primary.Name(), err)
	}
	list, err := a.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the cluster's nodes through %s: %w\nnothing was changed on any host", a.primary.Name(), err)
	}
	a.nodes = map[string]*corev1.Node{}
	for i := range list.Items {
		a.nodes[list.Items[i].Name] = &list.Items[i]
	}
	if a.hostsRecord, err = readHostsRecord(ctx, a.client); err != nil {
		return fmt.Errorf("reading apply's record of hosts through %s: %w\nnothing was changed on any host", a.primary.Name(), err)
	}
	return nil
}

// firstDoneControlPlane is the first control plane with an admin
// kubeconfig whose init or join did not stop half-way, if any.
func (a *applyRun) firstDoneControlPlane() *applyHost {
	for _, h := range a.hosts {
		if h.Role == clusterfile.RoleControlPlane && h.admin && !h.record.unfinished() {
			return h
		}
	}
	return nil
}

// readAdmin reads the primary's admin kubeconfig and points it at the
// address this machine reaches the host on, unless the cluster has a
// controlPlaneEndpoint (which the operator reaches too).
func (a *applyRun) readAdmin(ctx context.Context) error {
	h := a.primary
	b, ok, err := h.conn.ReadFile(ctx, path.Join(h.Root, node.AdminKubeconfig))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s is not a file", path.Join(h.Root, node.AdminKubeconfig))
	}
	kc, err := clientcmd.Load(b)
	if err != nil {
		return fmt.Errorf("%s: %w", node.AdminKubeconfig, err)
	}
	if a.controlPlaneEndpoint() == "" {
		for _, c := range kc.Clusters {
			_, port, err := net.SplitHostPort(strings.TrimPrefix(c.Server, "https://"))
			if err != nil {
				return fmt.Errorf("%s: server %q: %w", node.AdminKubeconfig, c.Server, err)
			}
			c.Server = "https://" + net.JoinHostPort(h.Address, port)
			if h.Address != advertised(h.Host) {
				// The API server's certificate names the address it
				// advertises, not the one it is reached at.
				c.TLSServerName = advertised(h.Host)
			}
		}
	}
	if a.admin, err = clientcmd.Write(*kc); err != nil {
		return err
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(a.admin)
	if err != nil {
		return err
	}
	rc.Timeout = 30 * time.Second
	a.client, err = kubernetes.NewForConfig(rc)
	return err
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// applyPlan is what Run does to each host: the Plan, and the hosts of its
// steps.
type applyPlan struct {
	Plan
	init *applyHost
	// resets are hosts with a node's state that is not in the cluster
	// (a join that failed), or whose init or join did not finish: reset
	// before they init or join.
	resets []*applyHost
	// staleNodes are the Nodes of those that are in the cluster, deleted
	// after their reset.
	staleNodes         []string
	controlPlanes      []*applyHost
	workers            []*applyHost
	added, unchanged   []string
	changed, uploadsTo []*applyHost
	// prune are the hosts apply made nodes of that the file no longer has.
	prune []*clusterfile.Host
}

// plan decides, and prints, what happens to each host.
func (a *applyRun) plan() (*applyPlan, error) {
	p := &applyPlan{}
	for _, h := range a.hosts {
		_, member := a.nodes[h.node]
		step := HostStep{Host: target(h.Host).String(), Root: rootOf(h.Host), Node: h.node, Action: Nothing}
		if member && !h.record.unfinished() {
			a.logf(h.Name(), "in the cluster (Node %s): nothing to do", h.node)
			p.unchanged = append(p.unchanged, h.node)
			p.Hosts = append(p.Hosts, step)
			continue
		}
		var what string
		switch {
		case a.primary == nil && p.init == nil && h.Role == clusterfile.RoleControlPlane:
			p.init, what, step.Action = h, "init, the first control plane", Init
		case h.Role == clusterfile.RoleControlPlane:
			p.controlPlanes, what, step.Action = append(p.controlPlanes, h), "join as a control plane", JoinControlPlane
		default:
			p.workers, what, step.Action = append(p.workers, h), "join as a worker", JoinWorker
		}
		if h.state {
			// A host apply would reset must not be a node of the
			// cluster under another name (a nodeName changed in the file,
			// or a hostname): reset would take a working node down.
			if h == a.primary {
				return nil, fmt.Errorf("%s holds the cluster's admin kubeconfig but the cluster has no Node %q: was its nodeName or hostname changed? apply does not rename nodes: put the old name back", h.Name(), h.node)
			}
			if a.primary != nil && h.ca != "" && h.ca != a.primary.ca {
				return nil, fmt.Errorf("%s has the state of a node of another cluster (its CA is not this cluster's): apply does not take a node over; reset it there first", h.Name())
			}
			if n := a.nodeAt(advertised(h.Host)); n != "" && n != h.node {
				return nil, fmt.Errorf("%s has a node's state and its address is Node %q's, not %q's: was its nodeName or hostname changed? apply does not rename nodes: put the old name back, or take the node out with reset first", h.Name(), n, h.node)
			}
			p.resets = append(p.resets, h)
			if h.record.unfinished() {
				step.Reset = fmt.Sprintf("its %s did not finish (%s records no completion)", h.record.Step, h.recordFile())
				what = step.Reset + ": reset, then " + what
				if member {
					p.staleNodes = append(p.staleNodes, h.node)
					step.DeleteNode = true
					what += " (its Node deleted after the reset)"
				}
			} else {
				step.Reset = "a node's state that is not the cluster's (" + h.path(node.KubernetesDir) + "), left by a failed run"
				what = "reset what a failed run left (" + h.path(node.KubernetesDir) + "), then " + what
			}
		}
		a.logf(h.Name(), "plan: %s", what)
		p.Hosts = append(p.Hosts, step)
		p.added = append(p.added, h.node)
		p.changed = append(p.changed, h)
	}
	inFile := map[string]bool{}
	for _, h := range a.hosts {
		inFile[h.node] = true
	}
	for _, name := range slices.Sorted(maps.Keys(a.nodes)) {
		if inFile[name] {
			continue
		}
		h, recorded, err := a.hostsRecord.host(name)
		if h != nil {
			for _, fh := range a.hosts {
				if fh.Address == h.Address && fh.Root == h.Root {
					err = fmt.Errorf("its recorded host %s is %s of the file", h.Address, fh.Name())
				}
			}
		}
		other := OtherNode{Node: name}
		if h != nil {
			other.Host, other.Root = target(h).String(), rootOf(h)
		}
		switch {
		case err != nil:
			other.LeftAlone = err.Error()
			a.logf(name, "in the cluster, not in the file: left alone (%v)", err)
		case !recorded && a.nodes[name].Annotations[legacyHostAnnotation] != "":
			other.LeftAlone = fmt.Sprintf("not in apply's record of hosts (%s); its Node's %s annotation, which the node itself can rewrite, is not trusted", hostsRecordRef, legacyHostAnnotation)
			a.logf(name, "in the cluster, not in the file, not in apply's record of hosts (%s): left alone, never reset by --prune (its Node's %s annotation, which the node itself can rewrite, is not trusted: reset the host by hand, then delete the Node)", hostsRecordRef, legacyHostAnnotation)
		case !recorded:
			other.LeftAlone = fmt.Sprintf("not in apply's record of hosts (%s)", hostsRecordRef)
			a.logf(name, "in the cluster, not in the file, not in apply's record of hosts (%s): left alone, never reset by --prune", hostsRecordRef)
		case !a.o.Prune:
			other.LeftAlone = "--prune (Options.Prune) not given"
			a.logf(name, "in the cluster, not in the file: left alone (--prune drains, resets and removes it)")
		default:
			other.Prune = true
			a.logf(name, "plan: not in the file any more: drain, reset %s, delete the Node", target(h))
			p.prune = append(p.prune, h)
		}
		p.OtherNodes = append(p.OtherNodes, other)
	}
	p.uploadsTo = p.changed
	if len(p.controlPlanes) > 0 && a.primary != nil {
		// The certificate key is uploaded on the primary, with kubeboot.
		p.uploadsTo = append([]*applyHost{a.primary}, p.uploadsTo...)
	}
	return p, nil
}

// rootOf is h's root for a plan: "" for /.
func rootOf(h *clusterfile.Host) string {
	if h.Root == "/" {
		return ""
	}
	return h.Root
}

// nodeAt is the Node whose internal address is ip, if any.
func (a *applyRun) nodeAt(ip string) string {
	for name, n := range a.nodes {
		for _, addr := range n.Status.Addresses {
			if addr.Type == corev1.NodeInternalIP && addr.Address == ip {
				return name
			}
		}
	}
	return ""
}

// run carries the plan out.
func (a *applyRun) run(ctx context.Context, p *applyPlan) error {
	if len(p.changed) == 0 {
		a.logf("", "every host is in the cluster: nothing to change")
		return a.finish(ctx, p)
	}
	// Secrets, made here and handed to the hosts' kubeboot on its stdin.
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return err
	}
	var certKey string
	if len(p.controlPlanes) > 0 {
		if certKey, err = bootstrap.NewCertificateKey(); err != nil {
			return err
		}
	}
	bin, err := remote.HashFile(a.o.Binary)
	if err != nil {
		return err
	}
	start := time.Now()
	// Each host checks itself (preflight) as soon as it has the binary,
	// while the others still copy; nothing changes on any node before
	// every host has passed. A host with a failed run's state is checked
	// after its reset.
	err = a.each(p.uploadsTo, func(h *applyHost) error {
		t := time.Now()
		copied, err := h.conn.Upload(ctx, bin, h.binary, 0o755)
		if err != nil {
			return err
		}
		if copied {
			a.logf(h.Name(), "copied kubeboot to %s in %s", h.binary, time.Since(t).Round(time.Millisecond))
		} else {
			a.logf(h.Name(), "kubeboot is at %s already (same sha256)", h.binary)
		}
		if !slices.Contains(p.changed, h) || slices.Contains(p.resets, h) {
			return nil
		}
		return a.preflightHost(ctx, p, h, token, certKey)
	})
	if err != nil {
		return fmt.Errorf("%w\nno node was changed", err)
	}
	if len(p.resets) > 0 {
		if err := a.each(p.resets, func(h *applyHost) error {
			if err := a.change(ctx, h, "reset", func() error { return h.kubeboot(ctx, nil, "reset", "--force") }); err != nil {
				return err
			}
			a.logf(h.Name(), "reset")
			return nil
		}); err != nil {
			return err
		}
		for _, n := range p.staleNodes {
			if err := a.client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting the Node %s of a join that did not finish: %w", n, err)
			}
			a.logf(n, "deleted the Node of the join that did not finish")
		}
		if err := a.each(p.resets, func(h *applyHost) error { return a.preflightHost(ctx, p, h, token, certKey) }); err != nil {
			return err
		}
	}
	if h := p.init; h != nil {
		doc, err := a.initDocuments(h, token, certKey)
		if err != nil {
			return err
		}
		args := []string{"init", "--config", "/dev/stdin", "--skip-token-print", "--skip-certificate-key-print"}
		if certKey != "" {
			args = append(args, "--upload-certs")
		}
		t := time.Now()
		err = a.change(ctx, h, "init", func() error {
			if err := h.startStep(ctx, "init"); err != nil {
				return err
			}
			if err := h.kubeboot(ctx, doc, args...); err != nil {
				return fmt.Errorf("%w\napply again resets the host and runs init again", err)
			}
			return h.completeStep(ctx)
		})
		if err != nil {
			return fmt.Errorf("%s (%s): init: %w", h.Name(), h.Address, err)
		}
		a.logf(h.Name(), "init: the control plane runs (%s)", time.Since(t).Round(100*time.Millisecond))
		a.primary = h
		if err := a.readAdmin(ctx); err != nil {
			return err
		}
	} else {
		if err := a.createToken(ctx, token); err != nil {
			return err
		}
		if certKey != "" {
			if err := a.uploadCerts(ctx, certKey); err != nil {
				return err
			}
		}
	}
	join, err := a.joinCommand(ctx, token, certKey)
	if err != nil {
		return err
	}
	// Control planes one at a time (each adds an etcd member), then the
	// workers in parallel. A join that fails leaves the others to go on,
	// the workers through the control planes there are. (Workers joining
	// while the control planes join was measured slower here, where the
	// hosts share two cores: each control-plane join took 2-3 s more.)
	joinOne := func(h *applyHost) error {
		if err := a.join(ctx, h, join); err != nil {
			h.err = err
			a.logf(h.Name(), "join failed: %v", err)
		}
		return nil
	}
	for _, h := range p.controlPlanes {
		_ = joinOne(h)
	}
	_ = a.each(p.workers, joinOne)
	a.logf("", "hosts changed in %s", time.Since(start).Round(time.Second))
	return a.finish(ctx, p)
}

// preflightHost runs h's node checks.
func (a *applyRun) preflightHost(ctx context.Context, p *applyPlan, h *applyHost, token, certKey string) error {
	var doc []byte
	var err error
	args := []string{"init", "phase", "preflight", "--config", "/dev/stdin"}
	if h == p.init {
		doc, err = a.initDocuments(h, token, certKey)
	} else {
		// The join is checked with the discovery it will have, but the
		// CA is not known before init: it is not asked.
		doc, err = a.joinDocuments(h, bootstrap.JoinCommand{Endpoint: a.endpoint(p), Token: token, ControlPlane: h.Role == clusterfile.RoleControlPlane, CertificateKey: certKey}, true)
		args = []string{"join", "--node-checks-only", "--config", "/dev/stdin"}
	}
	if err != nil {
		return err
	}
	t := time.Now()
	if err := h.kubeboot(ctx, doc, args...); err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	a.logf(h.Name(), "preflight passed (%s)", time.Since(t).Round(time.Millisecond))
	return nil
}

// certDir is where the cluster's certificates are on a host (a node path).
func (a *applyRun) certDir() string {
	if kc := a.o.Cluster.KubeadmConfig; kc != nil && kc.Cluster != nil && kc.Cluster.CertificatesDir != "" {
		return kc.Cluster.CertificatesDir
	}
	return config.DefaultCertificatesDir
}

// controlPlaneEndpoint is the file's ClusterConfiguration's.
func (a *applyRun) controlPlaneEndpoint() string {
	if kc := a.o.Cluster.KubeadmConfig; kc != nil && kc.Cluster != nil {
		return kc.Cluster.ControlPlaneEndpoint
	}
	return ""
}

// endpoint is the API server endpoint the hosts join through: the
// controlPlaneEndpoint, else the first control plane's address.
func (a *applyRun) endpoint(p *applyPlan) string {
	if ep := a.controlPlaneEndpoint(); ep != "" {
		return ep
	}
	h := a.primary
	if h == nil {
		h = p.init
	}
	port := 6443
	if kc := a.o.Cluster.KubeadmConfig; kc != nil && kc.Init != nil && kc.Init.LocalAPIEndpoint.BindPort != 0 {
		port = int(kc.Init.LocalAPIEndpoint.BindPort)
	}
	return net.JoinHostPort(advertised(h.Host), strconv.Itoa(port))
}

func advertised(h *clusterfile.Host) string {
	if h.AdvertiseAddress != "" {
		return h.AdvertiseAddress
	}
	return h.Address
}

// documents is a fresh copy of the file's kubeadm documents.
func (a *applyRun) documents() (*config.Config, error) {
	if strings.TrimSpace(a.o.Cluster.Kubeadm) == "" {
		return &config.Config{}, nil
	}
	return config.Parse(a.o.Cluster.Source+" (kubeadm)", []byte(a.o.Cluster.Kubeadm))
}

// initDocuments are the documents init runs with on h: the file's, with
// the host's registration, the token and the certificate key.
func (a *applyRun) initDocuments(h *applyHost, token, certKey string) ([]byte, error) {
	c, err := a.initConfig(h, certKey)
	if err != nil {
		return nil, err
	}
	tok, err := bootstraptokenv1.NewBootstrapTokenString(token)
	if err != nil {
		return nil, err
	}
	c.Init.BootstrapTokens = []bootstraptokenv1.BootstrapToken{{Token: tok, TTL: &metav1.Duration{Duration: 2 * time.Hour},
		Description: "made by kubeboot apply for the hosts of " + filepath.Base(a.o.Cluster.Source),
		Usages:      []string{"signing", "authentication"}, Groups: []string{"system:bootstrappers:kubeadm:default-node-token"}}}
	return c.Marshal()
}

// initConfig is the file's documents with the InitConfiguration of h: its
// registration, its advertise address and the certificate key.
func (a *applyRun) initConfig(h *applyHost, certKey string) (*config.Config, error) {
	c, err := a.documents()
	if err != nil {
		return nil, err
	}
	if c.Init == nil {
		c.Init = &kubeadmv1.InitConfiguration{}
	}
	c.Init.NodeRegistration.Name = h.node
	c.Init.LocalAPIEndpoint.AdvertiseAddress = advertised(h.Host)
	c.Init.CertificateKey = certKey
	return c, nil
}

// joinDocuments is the JoinConfiguration h joins with. checksOnly makes
// it one for the node checks, before the cluster's CA exists.
func (a *applyRun) joinDocuments(h *applyHost, j bootstrap.JoinCommand, checksOnly bool) ([]byte, error) {
	if h.Role != clusterfile.RoleControlPlane {
		j.ControlPlane, j.CertificateKey = false, ""
	}
	c := j.Config()
	if checksOnly {
		c.Join.Discovery.BootstrapToken.CACertHashes = nil
		c.Join.Discovery.BootstrapToken.UnsafeSkipCAVerification = true
	}
	c.Join.NodeRegistration.Name = h.node
	if c.Join.ControlPlane != nil {
		c.Join.ControlPlane.LocalAPIEndpoint.AdvertiseAddress = advertised(h.Host)
	} else if h.AdvertiseAddress != "" {
		c.Join.NodeRegistration.KubeletExtraArgs = append(c.Join.NodeRegistration.KubeletExtraArgs, kubeadmv1.Arg{Name: "node-ip", Value: h.AdvertiseAddress})
	}
	return c.Marshal()
}

// createToken makes the token the hosts join with in the running cluster.
func (a *applyRun) createToken(ctx context.Context, token string) error {
	f, err := a.adminFile()
	if err != nil {
		return err
	}
	defer os.Remove(f)
	_, err = bootstrap.CreateToken(ctx, bootstrap.TokenOptions{Kubeconfig: f, Token: token, TTL: time.Hour, Description: "made by kubeboot apply for the hosts of " + filepath.Base(a.o.Cluster.Source)})
	return err
}

// adminFile writes the admin kubeconfig to a private temporary file.
func (a *applyRun) adminFile() (string, error) {
	f, err := os.CreateTemp("", "kubeboot-apply-*.conf")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Write(a.admin); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// uploadCerts uploads the control-plane certificates on the primary,
// encrypted with certKey, for the control planes that join.
func (a *applyRun) uploadCerts(ctx context.Context, certKey string) error {
	h := a.primary
	c, err := a.initConfig(h, certKey)
	if err != nil {
		return err
	}
	doc, err := c.Marshal()
	if err != nil {
		return err
	}
	err = a.change(ctx, h, "upload-certs", func() error {
		return h.kubeboot(ctx, doc, "init", "phase", "upload-certs", "--upload-certs", "--config", "/dev/stdin", "--skip-certificate-key-print")
	})
	if err != nil {
		return fmt.Errorf("%s: uploading the certificates for the control planes that join: %w", h.Name(), err)
	}
	a.logf(h.Name(), "uploaded the control-plane certificates for the control planes that join (they expire in 2 hours)")
	return nil
}

// joinCommand is the join the hosts run: the cluster's CA, read from the
// primary, pinned.
func (a *applyRun) joinCommand(ctx context.Context, token, certKey string) (bootstrap.JoinCommand, error) {
	h := a.primary
	ca := path.Join(h.Root, a.certDir(), "ca.crt")
	b, ok, err := h.conn.ReadFile(ctx, ca)
	if err == nil && !ok {
		err = fmt.Errorf("%s is not a file", ca)
	}
	if err != nil {
		return bootstrap.JoinCommand{}, fmt.Errorf("%s: reading the cluster CA: %w", h.Name(), err)
	}
	cas, err := certutil.ParseCertsPEM(b)
	if err != nil || len(cas) == 0 {
		return bootstrap.JoinCommand{}, fmt.Errorf("%s: the cluster CA: %v", h.Name(), err)
	}
	return bootstrap.JoinCommand{Endpoint: a.endpoint(nil), Token: token, CACertHash: pubkeypin.Hash(cas[0]), CertificateKey: certKey, ControlPlane: true}, nil
}

// join joins h.
func (a *applyRun) join(ctx context.Context, h *applyHost, j bootstrap.JoinCommand) error {
	doc, err := a.joinDocuments(h, j, false)
	if err != nil {
		return err
	}
	as := "a worker"
	if h.Role == clusterfile.RoleControlPlane {
		as = "a control plane"
	}
	a.logf(h.Name(), "joining as %s", as)
	t := time.Now()
	err = a.change(ctx, h, "join", func() error {
		if err := h.startStep(ctx, "join"); err != nil {
			return err
		}
		if err := h.kubeboot(ctx, doc, "join", "--config", "/dev/stdin"); err != nil {
			return err
		}
		return h.completeStep(ctx)
	})
	if err != nil {
		return err
	}
	a.logf(h.Name(), "joined as %s (%s)", as, time.Since(t).Round(100*time.Millisecond))
	return nil
}

// finish writes the admin kubeconfig and waits until every node of the
// file that is in the cluster is Ready.
func (a *applyRun) finish(ctx context.Context, p *applyPlan) error {
	if a.client == nil {
		return errors.New("no control plane runs: nothing to reach the cluster through")
	}
	if err := os.MkdirAll(filepath.Dir(a.o.AdminKubeconfig), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(a.o.AdminKubeconfig, a.admin, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(a.o.AdminKubeconfig, 0o600); err != nil { // a file that was there keeps its mode otherwise
		return err
	}
	var want []string
	for _, h := range a.hosts {
		if h.err == nil {
			want = append(want, h.node)
		}
	}
	t := time.Now()
	notReady, listErr := want, error(nil)
	err := wait.PollUntilContextTimeout(ctx, time.Second, a.o.Timeout, true, func(ctx context.Context) (bool, error) {
		list, err := a.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if listErr = err; err != nil {
			return false, nil
		}
		ready := map[string]bool{}
		for _, n := range list.Items {
			ready[n.Name] = nodeReady(&n)
		}
		notReady = slices.DeleteFunc(slices.Clone(want), func(n string) bool { return ready[n] })
		return len(notReady) == 0, nil
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && listErr != nil:
		return fmt.Errorf("nodes not Ready after %s (%s): listing them through %s: %w", a.o.Timeout, strings.Join(notReady, ", "), a.primary.Name(), listErr)
	case err != nil:
		return fmt.Errorf("nodes not Ready after %s: %s", a.o.Timeout, strings.Join(notReady, ", "))
	}
	a.logf("", "every node is Ready (%d; waited %s); the admin kubeconfig is %s", len(want), time.Since(t).Round(time.Second), a.o.AdminKubeconfig)
	return a.recordHosts(ctx)
}

// prune removes the nodes of p.prune: workers in parallel, then the
// control planes one at a time.
func (a *applyRun) prune(ctx context.Context, p *applyPlan) ([]string, error) {
	var pruned []string
	var mu sync.Mutex
	one := func(h *applyHost) error {
		if err := a.pruneHost(ctx, h); err != nil {
			return err
		}
		mu.Lock()
		pruned = append(pruned, h.node)
		mu.Unlock()
		return nil
	}
	var hosts []*applyHost
	for _, h := range p.prune {
		hosts = append(hosts, newApplyHost(h))
	}
	err := a.workersThenControlPlanes(hosts, one)
	slices.Sort(pruned)
	if ferr := a.forgetHosts(ctx, pruned); ferr != nil {
		err = errors.Join(err, ferr)
	}
	return pruned, err
}

// pruneHost drains h's Node, resets h and deletes the Node.
func (a *applyRun) pruneHost(ctx context.Context, h *applyHost) error {
	t := time.Now()
	d := &drain.Helper{Ctx: ctx, Client: a.client, Force: true, GracePeriodSeconds: -1, IgnoreAllDaemonSets: true,
		DeleteEmptyDirData: true, Timeout: 2 * time.Minute, Out: io.Discard, ErrOut: io.Discard}
	if n, ok := a.nodes[h.node]; ok {
		if err := drain.RunCordonOrUncordon(d, n, true); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("cordoning %s: %w", h.node, err)
		}
	}
	if err := drain.RunNodeDrain(d, h.node); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("draining %s: %w", h.node, err)
	}
	a.logf(h.Name(), "drained (%s)", time.Since(t).Round(100*time.Millisecond))
	conn, err := a.dialer.Dial(ctx, target(h.Host))
	if err != nil {
		return fmt.Errorf("resetting the host (the Node is left, cordoned): %w", err)
	}
	h.conn = conn
	defer conn.Close()
	// A worker's reset needs no care; a control plane's removes its etcd
	// member, which reset refuses where it could cost the quorum.
	if err := a.resetHost(ctx, h, h.Role != clusterfile.RoleControlPlane); err != nil {
		return err
	}
	err = a.client.CoreV1().Nodes().Delete(ctx, h.node, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the Node %s: %w", h.node, err)
	}
	a.logf(h.Name(), "removed from the cluster (%s)", time.Since(t).Round(100*time.Millisecond))
	return nil
}

// failed is the error of the hosts whose join failed.
func (a *applyRun) failed() error {
	var errs []error
	for _, h := range a.hosts {
		if h.err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): join: %w", h.Name(), h.Address, h.err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w\nthe other hosts are in the cluster; run apply again to finish (it resets what a failed join left first)", errors.Join(errs...))
}

// kubeboot runs kubeboot on h with stdin; its output is in the error
// when it fails (the last lines).
func (h *applyHost) kubeboot(ctx context.Context, stdin []byte, args ...string) error {
	cmd := []string{remote.Quote(h.binary)}
	if h.Root != "/" {
		cmd = append(cmd, "--root", remote.Quote(h.Root))
	}
	for _, a := range args {
		cmd = append(cmd, remote.Quote(a))
	}
	var out bytes.Buffer
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	if err := h.conn.Run(ctx, strings.Join(cmd, " "), in, &out, &out); err != nil {
		return fmt.Errorf("kubeboot %s: %w\n%s", strings.Join(args, " "), err, lastLines(out.String(), 15))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// ResetHostsOptions are what `kubeboot reset -f` takes.
type ResetHostsOptions struct {
	Cluster *clusterfile.Cluster
	Out     io.Writer
}

// ResetHosts resets every host of the file that has a node's state,
// workers first (in parallel), then the control planes one at a time, the
// first last; and removes the kubeboot binary Apply copied.
func ResetHosts(ctx context.Context, o ResetHostsOptions) error {
	a, err := newApplyRun(Options{Cluster: o.Cluster, Out: o.Out})
	if err != nil {
		return err
	}
	defer a.close()
	if err := a.connect(ctx); err != nil {
		return err
	}
	// The first control plane last.
	hosts := slices.Clone(a.hosts)
	slices.Reverse(hosts)
	err = a.workersThenControlPlanes(hosts, func(h *applyHost) error { return a.resetHost(ctx, h, true) })
	if err != nil && ctx.Err() != nil {
		err = a.interrupted(err)
	}
	return err
}

// resetHost resets h if it holds a node and removes the kubeboot binary
// apply copied. Unless force, reset keeps its etcd safety checks (it
// refuses to remove a member from an unhealthy cluster or one of two
// members), its prompt answered here.
func (a *applyRun) resetHost(ctx context.Context, h *applyHost, force bool) error {
	nodeDir := h.path(node.ConfigDir)
	facts, err := h.conn.Probe(ctx, h.binary, nodeDir)
	if err != nil {
		return err
	}
	if facts.Exists[nodeDir] {
		if !facts.Exists[h.binary] {
			return fmt.Errorf("the host has a node's state but no kubeboot at %s to reset it with", h.binary)
		}
		t := time.Now()
		err := a.change(ctx, h, "reset", func() error {
			if force {
				return h.kubeboot(ctx, nil, "reset", "--force")
			}
			return h.kubeboot(ctx, []byte("y\n"), "reset")
		})
		if err != nil {
			return err
		}
		a.logf(h.Name(), "reset (%s)", time.Since(t).Round(time.Second))
	} else {
		a.logf(h.Name(), "no node here: nothing to reset")
	}
	if facts.Exists[h.binary] {
		rm := "rm -f " + remote.Quote(h.binary)
		if h.Root != "/" {
			// The directories apply made under a root of its own.
			rm += " && cd " + remote.Quote(h.Root) + " && rmdir -p --ignore-fail-on-non-empty usr/local/bin"
		}
		if _, err := h.conn.Output(ctx, rm); err != nil {
			return err
		}
		a.logf(h.Name(), "removed %s", h.binary)
	}
	return nil
}
