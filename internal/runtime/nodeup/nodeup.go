// Package nodeup brings a node's side up under the node daemon, for init
// and join alike: it hands rendered components to the daemon (starting the
// daemon if the node has none yet) and waits for them, and it runs the
// node steps both commands share: sysctls, the CNI plugins, containerd and
// its configuration, the image import, the kubelet, kube-proxy and the
// pod network's engines.
package nodeup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/poll"
	"github.com/kubeboot/kubeboot/internal/base/version"
	"github.com/kubeboot/kubeboot/internal/host/helpers"
	"github.com/kubeboot/kubeboot/internal/host/host"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/host/nodestate"
	"github.com/kubeboot/kubeboot/internal/host/preflight"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Node is one node being brought up.
type Node struct {
	// Cfg is the node's configuration: on a joining node, the cluster's
	// documents with an InitConfiguration holding this node's
	// registration, as kubeadm builds it.
	Cfg *config.Config
	FS  fsys.FS
	Out io.Writer
	// Role is what the node becomes, for its record (package nodestate).
	Role nodestate.Role
	// Exe is the kubeboot binary the node daemon runs components from.
	Exe string
	// Start is when the command started; progress lines count from it.
	Start time.Time
	// Timeout bounds each wait for a component's readiness.
	Timeout time.Duration

	// KubeletRequires are components the kubelet waits for: a joining
	// control plane's kubelet bootstraps its certificate with its own API
	// server, which serves once its etcd member has joined.
	KubeletRequires []string
	// Mirrors are the registry mirrors containerd pulls through
	// (--registry-mirror).
	Mirrors []node.Mirror

	// StartedDaemon is set when this run started the node daemon, so that
	// an interrupted command stops what it started.
	StartedDaemon bool
	// criSocket is the runtime's socket (a host path), once
	// StartRuntime has run: whatever creates pods waits there for the
	// images they need.
	criSocket     string
	hostDNS       *node.HostDNS
	unitInstalled bool
}

// DaemonStarted reports whether this run started the node daemon, and
// where its logs are.
func (n *Node) DaemonStarted() (bool, string) {
	return n.StartedDaemon, n.FS.Path(node.LogDir)
}

// Logf writes one line of the command's output.
func (n *Node) Logf(format string, args ...any) { fmt.Fprintf(n.Out, format+"\n", args...) }

// Since is the time since the command started, for progress lines.
func (n *Node) Since() string { return time.Since(n.Start).Round(time.Millisecond).String() }

// Renderer renders the node's components.
func (n *Node) Renderer() component.Renderer { return component.Renderer{Cfg: n.Cfg, FS: n.FS} }

// WriteSpec hands a component to the node daemon, starting the daemon if
// this node has none yet.
func (n *Node) WriteSpec(spec component.Spec, prefix string) error {
	n.Logf("[%s] Writing the component spec for %q to %q", prefix, spec.Name, n.FS.Path(component.SpecPath(spec.Name)))
	if err := n.record(spec.Name); err != nil {
		return err
	}
	if err := (component.Store{FS: n.FS}).Write(spec); err != nil {
		return err
	}
	if n.FS.DryRun() {
		n.Logf("[dryrun] Would run: %s %s", spec.Name, strings.Join(spec.Args, " "))
		return nil
	}
	if !n.unitInstalled {
		// Before the daemon first starts: where systemd is init, the unit
		// is what runs it (and brings the node back after a reboot, as
		// kubeadm's kubelet.service).
		if err := daemon.InstallUnit(n.FS, n.Exe, func(format string, args ...any) {
			n.Logf("[%s] %s", prefix, fmt.Sprintf(format, args...))
		}); err != nil {
			return err
		}
		n.unitInstalled = true
	}
	pid, started, err := daemon.Start(n.FS, n.Exe)
	if err != nil {
		return err
	}
	if started {
		n.StartedDaemon = true
		n.Logf("[%s] Started the kubeboot node daemon (pid %d); its log is %q", prefix, pid, n.FS.Path(node.DaemonLogFile))
	}
	return nil
}

// record writes the node's record (package nodestate) with one more
// component, before its spec: the record names everything the node runs.
func (n *Node) record(name string) error {
	rec, _, err := nodestate.Read(n.FS)
	if err != nil {
		return err
	}
	r, c := n.Renderer(), n.Cfg
	rec.Name, rec.Role, rec.Addresses = c.Init.NodeRegistration.Name, n.Role, r.NodeIPs()
	rec.CertificatesDir, rec.PodSubnets = config.DefaultCertificatesDir, nil
	if c.Cluster != nil {
		rec.CertificatesDir = c.Cluster.CertificatesDir
		if c.Cluster.Networking.PodSubnet != "" {
			rec.PodSubnets = strings.Split(c.Cluster.Networking.PodSubnet, ",")
		}
	}
	rec.Version, rec.Kubeboot = version.Kubernetes, version.Get().Release()
	if name == component.Etcd {
		rec.Etcd = r.EtcdMember()
	}
	rec.Add(name)
	return nodestate.Write(n.FS, rec)
}

// Wait waits for a component's probe, with a progress line every 5 s.
func (n *Node) Wait(ctx context.Context, prefix string, spec component.Spec) error {
	if n.FS.DryRun() {
		n.Logf("[dryrun] Would wait for %s at %s", spec.Name, spec.Probe)
		return nil
	}
	err := spec.Probe.WaitReady(ctx, n.Timeout, poll.Progress(n.Logf, prefix, fmt.Sprintf("%s at %s", spec.Name, spec.Probe), false))
	if err != nil {
		return fmt.Errorf("%s is not healthy: %w; its log is %s", spec.Name, err, n.FS.Path(node.ComponentLog(spec.Name)))
	}
	n.Logf("[%s] %s is healthy after %s", prefix, spec.Name, n.Since())
	return nil
}

// Checks are the pre-flight checks of the node side.
func (n *Node) Checks() []preflight.Check {
	r := n.Renderer()
	checks := []preflight.Check{
		preflight.Port(component.KubeletPort),
		preflight.FileAvailable(n.FS, node.KubeletConfig),
		preflight.FileExisting("/proc/sys/net/ipv4/ip_forward", "IPv4 forwarding is not available in this kernel"),
	}
	if r.ManagedContainerd() {
		checks = append(checks, component.PortChecks([]component.Spec{r.ImageRegistrySpec()})...)
	}
	// kubeboot loads the modules and sets the sysctls itself (host.Prepare,
	// in kubelet-start); these fail where it cannot.
	need := n.hostNeeds()
	for _, m := range need.Modules {
		name := "KernelModule-" + m
		if m == "br_netfilter" {
			name = "FileExisting--proc-sys-net-bridge-bridge-nf-call-iptables" // kubeadm's name
		}
		checks = append(checks, preflight.Check{Name: name, Run: func() ([]string, error) { return nil, host.CheckModule(m) }})
	}
	for _, s := range need.Sysctls {
		checks = append(checks, preflight.Check{Name: "FileContent-" + strings.ReplaceAll(host.SysctlPath(s), "/", "-"), Run: func() ([]string, error) { return nil, host.CheckSysctl(s) }})
	}
	checks = append(checks, preflight.Check{Name: "SystemVerification", Run: func() ([]string, error) {
		if host.CgroupV2() {
			return nil, nil
		}
		// As kubeadm warns: the kubelet runs on v1 only with failCgroupV1: false.
		return []string{"cgroups v1 support is in maintenance mode and deprecated upstream, please migrate to cgroups v2 (this node's kubelet runs with failCgroupV1: false)"}, nil
	}})
	for _, name := range component.NodeProcesses {
		checks = append(checks, preflight.FileAvailable(n.FS, component.SpecPath(name)))
	}
	sockets := []string{path.Join(node.KubeletDir, "pod-resources/kubelet.sock"), path.Join(node.KubeletDir, "device-plugins/kubelet.sock")}
	if r.ManagedContainerd() {
		sockets = append(sockets, node.ContainerdSocket+".ttrpc")
	}
	checks = append(checks, preflight.SocketPaths(n.FS, sockets...))
	if r.ManagedContainerd() {
		checks = append(checks,
			// kubeboot carries containerd 2 and its shim; runc (or, on a
			// cgroup v2 host that has it, crun) is the one runtime piece
			// it takes from the distribution.
			preflight.Check{Name: "FileExisting-runc", Run: func() ([]string, error) {
				return node.CheckHostRuntimes(n.systemdCgroup())
			}},
			preflight.Check{Name: "Helpers", Run: func() ([]string, error) {
				_, err := helpers.Load()
				if errors.Is(err, helpers.ErrNotBuilt) && n.Exe != "" {
					// A program that imports kubeboot's API: the kubeboot
					// binary it runs the node with carries them.
					if out, err := exec.Command(n.Exe, "helpers").CombinedOutput(); err != nil {
						return nil, fmt.Errorf("%s: %v: %s", n.Exe, err, bytes.TrimSpace(out))
					}
					return nil, nil
				}
				return nil, err
			}},
		)
	}
	checks = append(checks, preflight.InPath("iptables", "kube-proxy and the CNI plugins need iptables: run `apt-get install iptables`"))
	if r.RunsNetworkPolicy() {
		checks = append(checks, preflight.InPath("ipset", "kube-router's network policy controller, which enforces NetworkPolicies, needs ipset: run `apt-get install ipset` (or give init --disable-network-policy)"))
	}
	checks = append(checks, preflight.Check{Name: "NodeDaemon", Run: func() ([]string, error) {
		if pid := daemon.Running(n.FS); pid != 0 {
			return nil, fmt.Errorf("a kubeboot daemon already runs for %s (pid %d): run `kubeboot reset` first", n.FS.Path("/"), pid)
		}
		return nil, nil
	}})
	return checks
}

// installHelpers writes the per-pod helpers this process carries, or,
// in a program that imports kubeboot's API and carries none, has the
// kubeboot binary the node runs with write its own (`kubeboot helpers
// install`): the helpers the node daemon verifies are that binary's.
func (n *Node) installHelpers(dir string) (helpers.Result, error) {
	res, err := helpers.Install(dir, n.Logf)
	if !errors.Is(err, helpers.ErrNotBuilt) || n.Exe == "" {
		return res, err
	}
	cmd := exec.Command(n.Exe, "--root", n.FS.Path("/"), "helpers", "install")
	if out, err := cmd.CombinedOutput(); err != nil {
		return res, fmt.Errorf("%s helpers install: %v: %s", n.Exe, err, bytes.TrimSpace(out))
	}
	current, err := os.Readlink(filepath.Join(dir, helpers.Current))
	if err != nil {
		return res, err
	}
	return helpers.Result{Dir: filepath.Join(dir, current)}, nil
}

// hostNeeds are the kernel modules and sysctls of this node: every node's,
// and its pod network's (the overlay's module, ipsets for policies, IPv6
// forwarding). Before a joining node has read the cluster's choice (its
// first preflight), only every node's.
func (n *Node) hostNeeds() host.Needs {
	if n.Cfg.Cluster == nil {
		return host.Base()
	}
	r := n.Renderer()
	p := host.PodNetwork{Policy: r.RunsNetworkPolicy()}
	if r.RunsFlannel() {
		p.Backend = n.Cfg.PodNetwork.FlannelType()
	}
	for _, s := range strings.Split(n.Cfg.Cluster.Networking.PodSubnet, ",") {
		if strings.Contains(s, ":") {
			p.IPv6 = true
		}
	}
	return host.Base().With(p)
}

// PrepareHost loads the kernel modules and sets the sysctls the node needs
// (package host) and writes the per-pod helpers (the runc shim, pause, the
// CNI plugins) under the root prefix.
func (n *Node) PrepareHost(prefix string) error {
	if err := host.Prepare(n.FS, n.hostNeeds(), func(format string, args ...any) {
		n.Logf("[%s] %s", prefix, fmt.Sprintf(format, args...))
	}); err != nil {
		return err
	}
	if !n.Renderer().ManagedContainerd() {
		return nil
	}
	dir := n.FS.Path(node.HelpersRoot)
	if n.FS.DryRun() {
		n.Logf("[dryrun] Would write the per-pod helpers (%s, %s and the CNI plugins %v) to %q", helpers.Shim, helpers.Pause, helpers.CNIPlugins, dir)
		return nil
	}
	res, err := n.installHelpers(dir)
	if err != nil {
		return fmt.Errorf("writing the per-pod helpers: %w", err)
	}
	// containerd's PATH starts with its opt bin: the helpers.
	if err := n.FS.MkdirAll(node.ContainerdOpt, 0o711); err != nil {
		return err
	}
	optBin := n.FS.Path(node.ContainerdOptBin)
	target, err := filepath.Rel(path.Dir(optBin), n.FS.Path(node.HelpersDir))
	if err != nil {
		return err
	}
	if _, err := fsys.Symlink(target, optBin); err != nil {
		return err
	}
	n.Logf("[%s] Wrote the per-pod helpers (%s, %s and the CNI plugins %v) to %q, verified by sha256", prefix, helpers.Shim, helpers.Pause, helpers.CNIPlugins, res.Dir)
	return nil
}

// StartRuntime writes containerd's configuration, starts it under the
// daemon and waits for its socket; then it hands the daemon the
// image-registry, which serves kubeboot's images to containerd from the
// binary and imports them, the node's first, off this run's path. A
// runtime the operator runs (--cri-socket) is left alone: the images are
// imported into it all the same.
func (n *Node) StartRuntime(ctx context.Context, prefix string) error {
	r := n.Renderer()
	n.criSocket = strings.TrimPrefix(r.CRISocket(), "unix://")
	if r.ManagedContainerd() {
		for _, m := range n.Mirrors {
			n.Logf("[%s] Pulls of %s/... go to the mirrors %s first: writing %q", prefix, m.Registry, strings.Join(m.Endpoints, ", "), n.FS.Path(node.HostsFile(m.Registry)))
		}
		if err := node.WriteMirrors(n.FS, n.Mirrors); err != nil {
			return err
		}
		n.Logf("[%s] Pulls of %s/... go to the node's image-registry, which serves them from this binary: writing %q", prefix, images.Registry, n.FS.Path(node.HostsFile(images.Registry)))
		if err := node.WriteImageRegistry(n.FS); err != nil {
			return err
		}
		rt, notUsed := node.HostRuntimes(n.systemdCgroup())
		if c := rt.Choice(notUsed); c != "" {
			n.Logf("[%s] %s", prefix, c)
		}
		n.Logf("[%s] Writing containerd configuration to file %q", prefix, n.FS.Path(node.ContainerdConfig))
		if err := n.FS.WriteFile(node.ContainerdConfig, []byte(node.ContainerdConfigTOML(n.FS, n.systemdCgroup(), rt, !r.RunsFlannel())), 0o644); err != nil {
			return err
		}
		spec := r.ContainerdSpec()
		if err := n.WriteSpec(spec, prefix); err != nil {
			return err
		}
		if err := n.Wait(ctx, prefix, spec); err != nil {
			return err
		}
	}
	if !n.FS.DryRun() {
		n.Logf("[images] Importing %s into the runtime from this binary, in the node daemon's image-registry", strings.Join(images.Names(images.All()), ", "))
	}
	spec := r.ImageRegistrySpec()
	if err := n.WriteSpec(spec, "images"); err != nil {
		return err
	}
	return n.Wait(ctx, "images", spec)
}

// WaitImages waits until the runtime has the node's images (pause,
// CoreDNS', the test server's), whoever brought them.
func (n *Node) WaitImages(ctx context.Context) error { return n.waitImages(ctx, images.Node()) }

// WaitAllImages waits until the runtime has every image of kubeboot's,
// the add-ons' too.
func (n *Node) WaitAllImages(ctx context.Context) error { return n.waitImages(ctx, images.All()) }

// WaitSandboxImage waits until the runtime has pause, the image of every
// pod's sandbox: what a node needs before its first pod.
func (n *Node) WaitSandboxImage(ctx context.Context) error {
	return n.waitImages(ctx, []images.Image{images.Sandbox()})
}

func (n *Node) waitImages(ctx context.Context, imgs []images.Image) error {
	if n.FS.DryRun() || n.criSocket == "" {
		return nil
	}
	start := time.Now()
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = kubeadmconstants.ControlPlaneComponentHealthCheckTimeout // as a component's health
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := images.WaitPresent(wctx, n.criSocket, imgs); err != nil {
		return fmt.Errorf("%w; the node daemon's image-registry imports them, and its log is %s", err, n.FS.Path(node.ComponentLog(component.ImageRegistry)))
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		n.Logf("[images] Waited %s for %s", d.Round(time.Millisecond), strings.Join(images.Names(imgs), ", "))
	}
	return nil
}

// StartKubelet writes the kubelet's configuration for this node and hands
// the kubelet to the daemon.
func (n *Node) StartKubelet(prefix string) error {
	r := n.Renderer()
	if err := n.FS.MkdirAll(node.ManifestsDir, 0o755); err != nil {
		return err
	}
	dns, err := n.HostDNS()
	if err != nil {
		return err
	}
	if dns.Write != nil {
		n.Logf("[%s] Writing the resolv.conf for pods with dnsPolicy Default to %q: %s without its loopback nameservers %v", prefix, n.FS.Path(node.PodResolvConf), dns.Source.Path, dns.Source.Loopback)
		if err := n.FS.WriteFile(node.PodResolvConf, dns.Write, 0o644); err != nil {
			return err
		}
	}
	if dns.Note != "" {
		n.Logf("[%s] %s", prefix, dns.Note)
	}
	if w := dns.Warning(); w != "" {
		n.Logf("[%s] WARNING: %s", prefix, w)
	}
	name := n.Cfg.Init.NodeRegistration.Name
	dir, stale, err := node.EnsureStorageDir(n.FS, name, func(root string) bool { return daemon.Running(fsys.NewRoot(root)) != 0 })
	if err != nil {
		return fmt.Errorf("the directory of this node's volumes: %w", err)
	}
	if stale != "" {
		n.Logf("[%s] Replaced the stale link %s -> %s: no node runs there any more", prefix, node.StorageLink(n.FS, name), stale)
	}
	if link := node.StorageLink(n.FS, name); link != "" {
		n.Logf("[%s] The storage add-on's volumes on this node go to %q (%s links to it)", prefix, dir, link)
	} else {
		n.Logf("[%s] The storage add-on's volumes on this node go to %q", prefix, dir)
	}
	kc, err := node.LocalKubeletConfiguration(n.Cfg, n.FS, r.CRISocket(), dns.KubeletResolvConf)
	if err != nil {
		return err
	}
	n.Logf("[%s] Writing kubelet configuration to file %q", prefix, n.FS.Path(node.KubeletConfig))
	// 0600 where kubeadm writes 0644: only the kubelet (root) reads it,
	// and CIS 4.1.9 asks for 600.
	if err := n.FS.WriteFile(node.KubeletConfig, kc, 0o600); err != nil {
		return err
	}
	spec := r.KubeletSpec()
	if len(n.KubeletRequires) > 0 {
		spec.Requires = append(spec.Requires, n.KubeletRequires...)
		n.Logf("[%s] Starting the kubelet once %v is ready", prefix, strings.Join(n.KubeletRequires, ", "))
	} else {
		n.Logf("[%s] Starting the kubelet", prefix)
	}
	if err := n.WriteSpec(spec, prefix); err != nil {
		return err
	}
	// The node follows CA rotations from the time its kubelet can read
	// them (kubeboot certs rotate-ca).
	return n.WriteSpec(r.CAAgentSpec(), prefix)
}

// HostDNS is the node's resolver decision (see node.DetectHostDNS), made
// once per run.
func (n *Node) HostDNS() (node.HostDNS, error) {
	if n.hostDNS == nil {
		var configured *string
		if n.Cfg.Kubelet != nil {
			configured = n.Cfg.Kubelet.ResolverConfig
		}
		h, err := node.DetectHostDNS(configured)
		if err != nil {
			return node.HostDNS{}, err
		}
		n.hostDNS = &h
	}
	return *n.hostDNS, nil
}

// WaitKubelet waits for the kubelet's healthz, as kubeadm's kubelet-check.
func (n *Node) WaitKubelet(ctx context.Context) error {
	spec := n.Renderer().KubeletSpec()
	n.Logf("[kubelet-check] Waiting for a healthy kubelet at %s. This can take up to %s", spec.Probe, n.Timeout)
	return n.Wait(ctx, "kubelet-check", spec)
}

// StartNetwork hands the pod network's engines (flannel, kube-router's
// network policy controller, as the configuration runs them) and
// kube-proxy (unless the configuration turns it off) to the daemon,
// kube-proxy with its configuration for this node.
func (n *Node) StartNetwork(prefix string) error {
	for _, spec := range n.Renderer().EngineSpecs() {
		if err := n.WriteSpec(spec, prefix); err != nil {
			return err
		}
	}
	if n.Cfg.Cluster.Proxy.Disabled {
		return nil
	}
	return n.StartKubeProxy(prefix)
}

// StartKubeProxy writes kube-proxy's configuration and hands it to the
// node daemon; doing it again with the same configuration changes nothing.
func (n *Node) StartKubeProxy(prefix string) error {
	cfg, err := node.KubeProxyConfiguration(n.Cfg, n.FS, n.Cfg.Init.NodeRegistration.Name)
	if err != nil {
		return err
	}
	if err := n.FS.WriteFile(node.KubeProxyConfig, cfg, 0o644); err != nil {
		return err
	}
	return n.WriteSpec(n.Renderer().KubeProxySpec(), prefix)
}

// systemdCgroup reports whether the node's runtime makes cgroups through
// systemd, as its kubelet does.
func (n *Node) systemdCgroup() bool {
	return node.CgroupDriver(n.Cfg) == host.DriverSystemd
}
