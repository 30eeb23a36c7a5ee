// Package nethost gives tests and benchmarks their own hosts on one
// machine: each host is a network namespace with its own address (an eth0
// whose veth peer stays in the namespace, a default route through it, so
// nothing leaves), a mount namespace held by one long-lived process with
// its own /sys and resolv.conf, and its own kubeboot root prefix.
// Hosts plug into Networks (a bridge each, at an MTU of the test's
// choice), and a Router joins Networks of different IP subnets, as racks
// and cloud subnets are joined; nothing routes off the machine.
// Everything a host, network or router creates is removed by its Close,
// also after a failure.
package nethost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/cleanup"
)

// Host is one test host.
type Host struct {
	Name string // network namespace name
	IP   string // eth0's address, without the prefix length
	Root string // kubeboot's root prefix for this host
	// Binary is the kubeboot binary the host runs.
	Binary string

	holder *exec.Cmd
	dir    string   // scratch dir for the holder's mounts and resolv.conf
	made   []string // machine directories made for private mounts
}

// reaper tracks the children this process starts itself, so that Reap
// collects only orphans (daemons, shims) reparented to us.
var reaper struct {
	sync.Mutex
	own map[int]bool
}

// BecomeSubreaper makes orphaned descendants (the node daemon once `init`
// exits, container shims) children of this process, so that Reap can
// collect them: this machine's PID 1 does not.
func BecomeSubreaper() error {
	const prSetChildSubreaper = 36
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Start starts cmd and records it as our own child.
func Start(cmd *exec.Cmd) error {
	reaper.Lock()
	defer reaper.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	if reaper.own == nil {
		reaper.own = map[int]bool{}
	}
	reaper.own[cmd.Process.Pid] = true
	return nil
}

func forget(pid int) {
	reaper.Lock()
	delete(reaper.own, pid)
	reaper.Unlock()
}

// Reap collects exited orphans that were reparented to this process.
func Reap() {
	reaper.Lock()
	defer reaper.Unlock()
	me := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || reaper.own[pid] {
			continue
		}
		ppid, state, ok := procStat(pid)
		if !ok || ppid != me || state != "Z" {
			continue
		}
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, syscall.WNOHANG, nil) //nolint:errcheck
	}
}

func procStat(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0], true
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// netnsLocks are the locks of the network namespaces this process made:
// each is held, with flock, from addNetns to delNetns, and the kernel
// drops it when the process dies, however it dies.
var netnsLocks = struct {
	sync.Mutex
	files map[string]*os.File
}{files: map[string]*os.File{}}

// netnsLockDir holds one lock file per namespace name the tests use.
const netnsLockDir = "/run/kubeboot-nethost"

// addNetns creates the network namespace name and holds its lock. One of
// that name already there whose lock nobody holds is what a run of the
// tests killed before its cleanup left (the names are the tests' own): it
// is removed first, unless processes still run in it (left running by
// that run: refused, and left as it is). One whose lock is held belongs
// to a run of the tests going on now: refused.
func addNetns(name string) error {
	f, err := lock(name)
	if err != nil {
		return err
	}
	if err := replaceStale(name); err != nil {
		releaseLock(f)
		return err
	}
	if err := run("ip", "netns", "add", name); err != nil {
		releaseLock(f)
		return err
	}
	netnsLocks.Lock()
	netnsLocks.files[name] = f
	netnsLocks.Unlock()
	return nil
}

// lock takes the lock of name: its lock file, created if need be, held
// with flock. A holder removes the file before it lets the lock go (and
// the directory with the last one): a lock taken on a file no longer at
// the path is taken again on the path's.
func lock(name string) (*os.File, error) {
	p := filepath.Join(netnsLockDir, name+".lock")
	for i := 0; ; i++ {
		if i == 10 {
			return nil, fmt.Errorf("lock %s: removed under this test 10 times", p)
		}
		if err := os.MkdirAll(netnsLockDir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the directory went between MkdirAll and open
		}
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("network namespace %s belongs to another run of the tests going on now (its lock %s is held)", name, p)
			}
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		held, err1 := f.Stat()
		there, err2 := os.Stat(p)
		if err1 == nil && err2 == nil && os.SameFile(held, there) {
			return f, nil
		}
		f.Close() // a file its holder removed before letting it go
	}
}

// replaceStale removes a namespace name that no running test holds.
func replaceStale(name string) error {
	if _, err := os.Stat(filepath.Join("/run/netns", name)); err != nil {
		return nil
	}
	out, err := exec.Command("ip", "netns", "pids", name).Output()
	if err != nil {
		return fmt.Errorf("network namespace %s exists and its processes cannot be listed: %v", name, err)
	}
	if pids := strings.Fields(string(out)); len(pids) > 0 {
		return fmt.Errorf("network namespace %s, left by an earlier run of the tests, still has processes %s in it: end them", name, strings.Join(pids, " "))
	}
	if err := run("ip", "netns", "del", name); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "nethost: removed network namespace %s, left by an earlier run\n", name)
	return nil
}

// delNetns removes the namespace name and lets its lock go.
func delNetns(name string) error {
	err := run("ip", "netns", "del", name)
	netnsLocks.Lock()
	if f := netnsLocks.files[name]; f != nil {
		releaseLock(f)
		delete(netnsLocks.files, name)
	}
	netnsLocks.Unlock()
	return err
}

// releaseLock removes a lock file this process holds, then lets it go:
// nothing of the test is left.
func releaseLock(f *os.File) {
	os.Remove(f.Name())
	os.Remove(netnsLockDir) // when no other name's lock is in it
	f.Close()
}

// Options shape a host beyond its name and address.
type Options struct {
	// Network, when set, connects the host's eth0 to the network's bridge,
	// so that hosts on it reach each other; without it the host is alone.
	// eth0 gets the network's MTU.
	Network *Network
	// Gateway, when set, is the address the host's default route goes
	// through (a Router's leg on the host's network), so that the host
	// reaches other subnets; without it every address is on eth0's link.
	Gateway string
	// ExtraIPs are further addresses of eth0 (/24 each).
	ExtraIPs []string
	// IPv6, when set, is eth0's IPv6 address (/64) besides the host's
	// IPv4 one, with a default route of its own (through Gateway6, or
	// straight out of eth0): a dual-stack host. A host whose own address
	// is IPv6 is IPv6-only.
	IPv6     string
	Gateway6 string
	// ResolvConf is the host's /etc/resolv.conf; empty means
	// "nameserver 127.0.0.1", a local resolver as on hosts running
	// systemd-resolved or dnsmasq.
	ResolvConf string
	// SystemdResolved, when set, is the content of
	// /run/systemd/resolve/resolv.conf: the host looks like one whose
	// systemd-resolved knows these upstream servers.
	SystemdResolved string
	// PrivateDirs get an empty tmpfs of their own in the host, for programs
	// that write at fixed paths (upstream kubeadm's /etc/kubernetes and
	// /var/lib/kubelet). A directory the machine lacks is made for the
	// mount and removed by Close.
	PrivateDirs []string
}

// New creates a host named name with address ip/24, its root prefix
// under dir. On error, whatever was created is removed.
func New(name, ip, dir, binary string) (*Host, error) {
	return NewWith(name, ip, dir, binary, Options{})
}

// NewWith creates a host as New does, shaped by o.
func NewWith(name, ip, dir, binary string, o Options) (h *Host, err error) {
	h = &Host{Name: name, IP: ip, Root: filepath.Join(dir, "root"), Binary: binary, dir: dir}
	if err := addNetns(name); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			h.Close()
			h = nil
		}
	}()
	if err = os.MkdirAll(h.Root, 0o755); err != nil {
		return h, err
	}
	veth := vethName()
	steps := [][]string{
		{"ip", "link", "add", veth + "a", "type", "veth", "peer", "name", veth + "b"},
	}
	if o.Network != nil {
		steps = append(steps, o.Network.mtuSteps(veth+"a", veth+"b")...)
	}
	steps = append(steps, []string{"ip", "link", "set", veth + "a", "netns", name})
	if o.Network != nil {
		// The peer plugs into the network's bridge.
		steps = append(steps, o.Network.plugSteps(veth+"b")...)
	} else {
		// The peer stays in the namespace, up, so that eth0 is up.
		steps = append(steps,
			[]string{"ip", "link", "set", veth + "b", "netns", name},
			[]string{"ip", "-n", name, "link", "set", veth + "b", "up"})
	}
	v6 := o.IPv6
	v4 := ip
	if strings.Contains(ip, ":") {
		v4, v6 = "", ip
	}
	steps = append(steps, []string{"ip", "-n", name, "link", "set", veth + "a", "name", "eth0"})
	if v4 != "" {
		steps = append(steps, []string{"ip", "-n", name, "addr", "add", v4 + "/24", "dev", "eth0"})
	}
	if v6 != "" {
		// No duplicate address detection: the address is usable at once.
		steps = append(steps, []string{"ip", "-n", name, "addr", "add", v6 + "/64", "dev", "eth0", "nodad"})
	}
	for _, extra := range o.ExtraIPs {
		steps = append(steps, []string{"ip", "-n", name, "addr", "add", extra + "/24", "dev", "eth0"})
	}
	steps = append(steps,
		[]string{"ip", "-n", name, "link", "set", "eth0", "up"},
		[]string{"ip", "-n", name, "link", "set", "lo", "up"})
	if v4 != "" {
		steps = append(steps, defaultRoute(name, o.Gateway))
	}
	if v6 != "" {
		steps = append(steps, defaultRoute6(name, o.Gateway6))
	}
	for _, s := range steps {
		if err = run(s[0], s[1:]...); err != nil {
			// A pair not yet moved out of the machine's namespace would
			// outlive the host's.
			_ = run("ip", "link", "del", veth+"a")
			return h, err
		}
	}
	resolvConf := o.ResolvConf
	if resolvConf == "" {
		resolvConf = "nameserver 127.0.0.1\n"
	}
	resolv := filepath.Join(dir, "resolv.conf")
	if err = os.WriteFile(resolv, []byte(resolvConf), 0o644); err != nil {
		return h, err
	}
	cg := filepath.Join(dir, "cgroup")
	if err = os.MkdirAll(cg, 0o755); err != nil {
		return h, err
	}
	// The holder owns the host's mount namespace: a fresh sysfs (so /sys
	// shows this namespace's links), the cgroup tree moved back under it,
	// and a resolv.conf that resolves nothing outside.
	script := fmt.Sprintf(`set -e
hostname %[3]s
mount --rbind /sys/fs/cgroup %[1]s
mount -t sysfs sysfs /sys
mount --move %[1]s /sys/fs/cgroup
mount --bind %[2]s /etc/resolv.conf
`, cg, resolv, name)
	for _, d := range o.PrivateDirs {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			if err = os.MkdirAll(d, 0o755); err != nil {
				return h, err
			}
			h.made = append(h.made, d)
		}
		script += fmt.Sprintf("mount -t tmpfs tmpfs %s\n", d)
	}
	if o.SystemdResolved != "" {
		// A tmpfs over /run/systemd (it exists on Debian even without
		// systemd running) holds the fake resolver's upstream file.
		upstream := filepath.Join(dir, "systemd-resolved.conf")
		if err = os.WriteFile(upstream, []byte(o.SystemdResolved), 0o644); err != nil {
			return h, err
		}
		script += fmt.Sprintf(`mount -t tmpfs tmpfs /run/systemd
mkdir -p /run/systemd/resolve
cp %s /run/systemd/resolve/resolv.conf
`, upstream)
	}
	script += "echo ready\nexec sleep infinity"
	// Its own UTS namespace too: a host has a hostname of its own (an API
	// server names its identity lease after it).
	h.holder = exec.Command("nsenter", "--net=/run/netns/"+name, "unshare", "--mount", "--uts", "--propagation", "slave", "sh", "-c", script)
	var out bytes.Buffer
	h.holder.Stdout, h.holder.Stderr = &out, &out
	if err = Start(h.holder); err != nil {
		return h, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "ready") {
		if time.Now().After(deadline) {
			return h, fmt.Errorf("host %s: holder did not start: %s", name, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Wait for the exec into sleep, so that the holder's pid is the one
	// whose namespaces we enter.
	time.Sleep(20 * time.Millisecond)
	return h, nil
}

// vethName returns a link name no other test host uses at the moment.
func vethName() string {
	vethSeq.Lock()
	defer vethSeq.Unlock()
	vethSeq.n++
	return "kb" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36) + strconv.Itoa(vethSeq.n)
}

var vethSeq struct {
	sync.Mutex
	n int
}

// defaultRoute is the step that gives a host its default route: through
// gateway when there is one, else straight out of eth0.
func defaultRoute(netns, gateway string) []string {
	if gateway != "" {
		return []string{"ip", "-n", netns, "route", "add", "default", "via", gateway, "dev", "eth0"}
	}
	return []string{"ip", "-n", netns, "route", "add", "default", "dev", "eth0"}
}

// defaultRoute6 is defaultRoute's IPv6 twin.
func defaultRoute6(netns, gateway string) []string {
	if gateway != "" {
		return []string{"ip", "-6", "-n", netns, "route", "add", "default", "via", gateway, "dev", "eth0"}
	}
	return []string{"ip", "-6", "-n", netns, "route", "add", "default", "dev", "eth0"}
}

// bridgeName is the bridge of a Network, inside its own namespace.
const bridgeName = "br0"

// Network is a switch that several hosts plug into: a bridge in a network
// namespace of its own, with no uplink, so that nothing the hosts send
// leaves the namespaces the test made.
type Network struct {
	Name string
	// MTU is the bridge's and every link plugged into it (hosts' eth0
	// and their peers, a router's legs); 0 leaves the kernel's 1500.
	MTU int
}

// NewNetwork creates the network's namespace and bridge.
func NewNetwork(name string) (*Network, error) { return NewNetworkMTU(name, 0) }

// NewNetworkMTU creates a network whose links all have the given MTU, as
// on clouds and VPNs whose links carry less than Ethernet's 1500 bytes.
func NewNetworkMTU(name string, mtu int) (*Network, error) {
	n := &Network{Name: name, MTU: mtu}
	if err := addNetns(name); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"ip", "-n", name, "link", "add", bridgeName, "type", "bridge"},
	}
	if mtu > 0 {
		steps = append(steps, []string{"ip", "-n", name, "link", "set", bridgeName, "mtu", strconv.Itoa(mtu)})
	}
	steps = append(steps, []string{"ip", "-n", name, "link", "set", bridgeName, "up"})
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// mtuSteps set the network's MTU on the links given (a veth pair still in
// the machine's namespace), if it has one.
func (n *Network) mtuSteps(links ...string) [][]string {
	if n.MTU == 0 {
		return nil
	}
	var steps [][]string
	for _, l := range links {
		steps = append(steps, []string{"ip", "link", "set", l, "mtu", strconv.Itoa(n.MTU)})
	}
	return steps
}

// plugSteps move a veth peer from the machine's namespace into the
// network's and attach it to the bridge.
func (n *Network) plugSteps(peer string) [][]string {
	return [][]string{
		{"ip", "link", "set", peer, "netns", n.Name},
		{"ip", "-n", n.Name, "link", "set", peer, "master", bridgeName},
		{"ip", "-n", n.Name, "link", "set", peer, "up"},
	}
}

// Close removes the network's namespace, its bridge and the hosts' peers
// plugged into it.
func (n *Network) Close() error { return delNetns(n.Name) }

// Leg is a router's connection to one network: its address there, with
// the prefix length (10.206.0.1/24), which hosts on that network name as
// their Gateway.
type Leg struct {
	Network *Network
	Addr    string
}

// Router joins networks of different IP subnets: a network namespace with
// a leg (eth0, eth1, ...) on each network's bridge and IPv4 forwarding on.
// It has no route but its legs' subnets, so what it forwards stays among
// the test's networks.
type Router struct {
	Name string
}

// NewRouter creates a router named name with the given legs. On error,
// whatever was created is removed.
func NewRouter(name string, legs ...Leg) (*Router, error) {
	r := &Router{Name: name}
	if err := addNetns(name); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"ip", "-n", name, "link", "set", "lo", "up"},
		{"ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
	}
	var veths []string
	for i, l := range legs {
		veth, leg := vethName(), "eth"+strconv.Itoa(i)
		veths = append(veths, veth+"a")
		steps = append(steps, []string{"ip", "link", "add", veth + "a", "type", "veth", "peer", "name", veth + "b"})
		steps = append(steps, l.Network.mtuSteps(veth+"a", veth+"b")...)
		steps = append(steps, l.Network.plugSteps(veth+"b")...)
		steps = append(steps,
			[]string{"ip", "link", "set", veth + "a", "netns", name},
			[]string{"ip", "-n", name, "link", "set", veth + "a", "name", leg},
			[]string{"ip", "-n", name, "addr", "add", l.Addr, "dev", leg},
			[]string{"ip", "-n", name, "link", "set", leg, "up"})
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			r.Close()
			// A pair made but not yet moved out of the machine's namespace
			// would stay there.
			for _, v := range veths {
				_ = run("ip", "link", "del", v)
			}
			return nil, err
		}
	}
	return r, nil
}

// Close removes the router's namespace and its legs (their peers on the
// networks' bridges go with them).
func (r *Router) Close() error { return delNetns(r.Name) }

// Command returns a command that runs inside the host (its network, mount
// and UTS namespaces).
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	full := append([]string{"-t", strconv.Itoa(h.holder.Process.Pid), "-m", "-n", "-u", "--", name}, args...)
	return exec.Command("nsenter", full...)
}

// Kubeboot returns a command running kubeboot with the host's root.
func (h *Host) Kubeboot(args ...string) *exec.Cmd {
	return h.Command(h.Binary, append([]string{"--root", h.Root}, args...)...)
}

// Run runs a command to completion and returns its combined output.
func Run(cmd *exec.Cmd) (string, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := wait(cmd)
	return out.String(), err
}

// Output runs a command to completion and returns its standard output
// and, apart, its standard error.
func Output(cmd *exec.Cmd) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = wait(cmd)
	return o.String(), e.String(), err
}

// wait starts cmd as Start does and waits for it.
func wait(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	err := cmd.Wait()
	forget(cmd.Process.Pid)
	return err
}

// livePIDs lists the live (not zombie) processes for which match, given
// a pid, is true.
func livePIDs(match func(pid int) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, state, ok := procStat(pid); !ok || state == "Z" {
			continue
		}
		if match(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func procFileContains(pid int, file, sub string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	return err == nil && bytes.Contains(b, []byte(sub))
}

// Processes lists the pids of live processes whose command line mentions
// the host's root prefix: every kubeboot process of this host does, and so
// do the containerd shims.
func (h *Host) Processes() []int {
	return livePIDs(func(pid int) bool { return procFileContains(pid, "cmdline", h.Root) })
}

// Pods lists the live processes of the host's pods: those in the cgroups
// under its node's parent cgroup.
func (h *Host) Pods() []int {
	parent := "/" + fsys.Tag(h.Root) + "/"
	return livePIDs(func(pid int) bool { return procFileContains(pid, "cgroup", parent) })
}

// PodProcesses lists the live processes in the kubelet's pod cgroups:
// the containers, whose command lines do not name any root prefix.
func PodProcesses() []int {
	return livePIDs(func(pid int) bool { return procFileContains(pid, "cgroup", "/kubepods") })
}

// KillAll kills every process of the host, its pods included, the way a
// power loss would end them, and waits until they are gone. The host's
// namespaces and files stay: the node can be started again.
func (h *Host) KillAll() {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		pids := append(h.Processes(), h.Pods()...)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck
		}
		time.Sleep(50 * time.Millisecond)
		Reap()
	}
}

// Close stops every process of the host, removes its namespace and its
// directory. It is safe to call more than once.
func (h *Host) Close() error {
	// Until they are gone: a cgroup that a dying process still holds
	// refuses rmdir, and was left behind empty once it had died.
	h.KillAll()
	defer h.removeCgroups()
	if h.holder != nil && h.holder.Process != nil {
		h.holder.Process.Kill() //nolint:errcheck
		h.holder.Wait()         //nolint:errcheck
		forget(h.holder.Process.Pid)
		h.holder = nil
	}
	time.Sleep(50 * time.Millisecond)
	Reap()
	_ = delNetns(h.Name)
	for i := len(h.made) - 1; i >= 0; i-- {
		os.Remove(h.made[i]) // empty once the holder's mounts are gone
	}
	h.made = nil
	return os.RemoveAll(h.dir)
}

// removeCgroups removes the node's cgroups once the zombies that still
// hold them are reaped. KillAll returns when no live process is left,
// but a zombie keeps its cgroup populated until it is reaped, and a
// killed daemon's children become ours to reap only once the daemon
// itself is: one Reap may not reach them all. (The empty cpu groups CI
// runs left behind turned out to be dev up's, not this path's; the loop
// stays because the race is real, and says so when it gives up.)
func (h *Host) removeCgroups() {
	tag := fsys.Tag(h.Root)
	for deadline := time.Now().Add(10 * time.Second); ; {
		Reap()
		cleanup.RemoveCgroups(tag, io.Discard)
		left := cleanup.Cgroups(tag)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "nethost: %s: cgroups left behind: %v\n", h.Name, left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// InNetns runs f on a thread that is in the host's network namespace, so
// that sockets f creates belong to the host (they stay there afterwards).
func (h *Host) InNetns(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	defer self.Close()
	target, err := os.Open("/run/netns/" + h.Name)
	if err != nil {
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return err
	}
	ferr := f()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is stuck in the wrong namespace: let it die with the
		// goroutine rather than serve anyone else.
		runtime.Goexit()
	}
	return ferr
}

// DialContext dials from inside the host, for HTTP clients in tests.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.InNetns(func() error {
		var err error
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// HolderPID is the pid of the process that holds the host's namespaces.
func (h *Host) HolderPID() int { return h.holder.Process.Pid }

// Attach returns a host made earlier (by another process) from its parts.
func Attach(name, ip, dir, binary string, holderPID int) (*Host, error) {
	p, err := os.FindProcess(holderPID)
	if err != nil {
		return nil, err
	}
	if err := p.Signal(syscall.Signal(0)); err != nil {
		return nil, fmt.Errorf("the holder of host %s (pid %d) is gone: %w", name, holderPID, err)
	}
	return &Host{Name: name, IP: ip, Root: filepath.Join(dir, "root"), Binary: binary, dir: dir,
		holder: &exec.Cmd{Process: p}}, nil
}
