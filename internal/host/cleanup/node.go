package cleanup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/vishvananda/netlink"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeboot/kubeboot/internal/host/images"
)

// KillContainers kills and deletes every container of containerd's k8s.io
// namespace, through containerd's Go client, so that no pod process
// outlives the node, and returns their IDs. It does nothing when the
// socket is not there.
func KillContainers(ctx context.Context, socket string, out io.Writer) ([]string, error) {
	if _, err := os.Stat(socket); err != nil {
		return nil, nil
	}
	c, err := images.Connect(socket)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	containers, err := c.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	var ids []string
	stopped := 0
	for _, ctr := range containers {
		if ctx.Err() != nil {
			return ids, ctx.Err()
		}
		// WithProcessKill kills the task's process and waits for it
		// before deleting the task.
		if task, err := ctr.Task(ctx, nil); err == nil {
			if _, err := task.Delete(ctx, containerd.WithProcessKill); err == nil {
				stopped++
			}
		}
		ctr.Delete(ctx) //nolint:errcheck
		ids = append(ids, ctr.ID())
	}
	if stopped > 0 {
		fmt.Fprintf(out, "[reset] Stopped %d containers\n", stopped)
	}
	return ids, nil
}

// KillProcesses kills every process whose command line mentions marker
// (the containerd shims of a node name its state dir) and waits for them.
func KillProcesses(marker string, out io.Writer) {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck
		fmt.Fprintf(out, "[reset] Killed leftover process %d\n", pid)
	}
	// Gone: reaped, or a zombie. At most 5 s, then reset goes on.
	_ = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return !slices.ContainsFunc(pids, func(pid int) bool {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			return err == nil && !strings.Contains(string(b), ") Z ")
		}), nil
	})
}

// Unmount unmounts every mount point under prefix, deepest first.
func Unmount(prefix string, out io.Writer) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescape(fields[4])
		if mp == prefix || strings.HasPrefix(mp, strings.TrimSuffix(prefix, "/")+"/") {
			points = append(points, mp)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	n := 0
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
			continue
		}
		n++
	}
	if n > 0 {
		fmt.Fprintf(out, "[reset] Unmounted %d mounts under %s\n", n, prefix)
	}
	return errors.Join(errs...)
}

// unescape decodes the octal escapes of /proc/self/mountinfo.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// DeleteLink removes a network link (the CNI bridge) if it exists.
func DeleteLink(name string, out io.Writer) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return
	}
	if err := netlink.LinkDel(l); err != nil {
		fmt.Fprintf(out, "[reset] Could not delete link %s: %v\n", name, err)
		return
	}
	fmt.Fprintf(out, "[reset] Deleted network link %s\n", name)
}

// FlushChains removes the iptables chains whose names start with one of
// prefixes (kube-proxy's KUBE-, the CNI plugins' CNI-, kubeboot's own
// KUBEBOOT-), and every rule that
// jumps to them, from every table, for IPv4 and IPv6. Other rules stay.
func FlushChains(prefixes []string, out io.Writer) error {
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		save, err := exec.Command(bin + "-save").Output()
		if err != nil {
			continue // no such tool, or no table support
		}
		filtered, removed := filterRules(string(save), prefixes)
		if removed == 0 {
			continue
		}
		cmd := exec.Command(bin + "-restore")
		cmd.Stdin = strings.NewReader(filtered)
		if b, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s-restore: %v: %s", bin, err, b))
			continue
		}
		fmt.Fprintf(out, "[reset] Removed %d %s chains and rules of kube-proxy, the CNI plugins and kubeboot\n", removed, bin)
	}
	return errors.Join(errs...)
}

func filterRules(save string, prefixes []string) (string, int) {
	ours := func(chain string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(chain, p) {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	removed := 0
	for _, line := range strings.Split(save, "\n") {
		f := strings.Fields(line)
		drop := false
		switch {
		case len(f) > 0 && strings.HasPrefix(f[0], ":") && ours(f[0][1:]):
			drop = true
		case len(f) > 1 && f[0] == "-A":
			if ours(f[1]) {
				drop = true
			}
			for i := 2; i+1 < len(f); i++ {
				if (f[i] == "-j" || f[i] == "-g") && ours(f[i+1]) {
					drop = true
				}
			}
		}
		if drop {
			removed++
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String(), removed
}

// CgroupRoot is where the cgroup filesystem is mounted.
var CgroupRoot = "/sys/fs/cgroup"

// Cgroups lists the cgroup directories named name that exist at the root
// of a cgroup v1 hierarchy or of the v2 unified one.
func Cgroups(name string) []string {
	roots, _ := filepath.Glob(filepath.Join(CgroupRoot, "*"))
	tops := []string{filepath.Join(CgroupRoot, name)} // cgroup v2
	for _, r := range roots {
		tops = append(tops, filepath.Join(r, name)) // each v1 hierarchy
	}
	var found []string
	for _, top := range tops {
		if fi, err := os.Stat(top); err == nil && fi.IsDir() {
			found = append(found, top)
		}
	}
	return found
}

// RemoveCgroups removes the (empty) cgroup directories named name, and
// everything below them, deepest first: at the root of every cgroup v1
// hierarchy and of the v2 unified one. It reports how many it removed.
func RemoveCgroups(name string, out io.Writer) int {
	n := 0
	for _, top := range Cgroups(name) {
		var dirs []string
		filepath.Walk(top, func(p string, info os.FileInfo, err error) error { //nolint:errcheck
			if err == nil && info.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if os.Remove(d) == nil {
				n++
			}
		}
	}
	if n > 0 {
		fmt.Fprintf(out, "[reset] Removed %d %s cgroups\n", n, name)
	}
	return n
}

// KillCgroup kills every process in the cgroup named name (and below it)
// of the pids hierarchy (v1) or the unified one (v2): the pods'
// processes, when containerd can no longer be asked to stop them.
func KillCgroup(name string, out io.Writer) {
	tops := []string{filepath.Join(CgroupRoot, "pids", name), filepath.Join(CgroupRoot, name)}
	killed := 0
	// Rounds 50 ms apart until one finds none, at most 20.
	_ = wait.ExponentialBackoff(wait.Backoff{Duration: 50 * time.Millisecond, Steps: 20}, func() (bool, error) {
		found := 0
		for _, top := range tops {
			filepath.Walk(top, func(p string, info os.FileInfo, err error) error { //nolint:errcheck
				if err != nil || info.IsDir() || info.Name() != "cgroup.procs" {
					return nil
				}
				b, _ := os.ReadFile(p)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck
						found++
					}
				}
				return nil
			})
		}
		killed += found
		return found == 0, nil
	})
	if killed > 0 {
		fmt.Fprintf(out, "[reset] Killed %d pod processes left in the %s cgroup\n", killed, name)
	}
}
