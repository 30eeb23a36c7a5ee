package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubeboot/kubeboot/bench/internal/hacluster"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// undo holds what puts the machine back should the run end mid-fault
// (an error, a panic, SIGINT): rules removed, processes continued.
type undo struct {
	mu sync.Mutex
	fs []func()
}

func (u *undo) push(f func()) {
	u.mu.Lock()
	u.fs = append(u.fs, f)
	u.mu.Unlock()
}

func (u *undo) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.fs)
}

// truncate forgets what was pushed after the first n: it was done.
func (u *undo) truncate(n int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.fs = u.fs[:n]
}

func (u *undo) run() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := len(u.fs) - 1; i >= 0; i-- {
		u.fs[i]()
	}
	u.fs = nil
}

// A fault is injected on a victim host; the function it returns heals it.
type fault struct {
	name string
	// leader: the victim is etcd's leader; otherwise a follower.
	leader bool
	hold   time.Duration
	inject func(h *nethost.Host, u *undo) (heal func() error, err error)
}

// cutRules drop every packet that enters or leaves the host by its link,
// before conntrack on the way in: the host's own and its pods'. Sockets
// stay open on both sides, as in a real cut (a link set down would also
// delete every route through it).
var cutRules = [][]string{
	{"-t", "raw", "PREROUTING", "-i", "eth0", "-m", "comment", "--comment", "kbbench-faults", "-j", "DROP"},
	{"-t", "mangle", "POSTROUTING", "-o", "eth0", "-m", "comment", "--comment", "kbbench-faults", "-j", "DROP"},
}

func iptables(h *nethost.Host, op string, rule []string) error {
	args := append([]string{"-w", "5", rule[0], rule[1], op, rule[2]}, rule[3:]...)
	if op == "-I" {
		args = append([]string{"-w", "5", rule[0], rule[1], op, rule[2], "1"}, rule[3:]...)
	}
	_, err := nethost.Run(h.Command("iptables", args...))
	return err
}

func partition(h *nethost.Host, u *undo) (func() error, error) {
	heal := func() error {
		var errs []string
		for _, r := range cutRules {
			if err := iptables(h, "-D", r); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("healing %s: %s", nodeName(h), strings.Join(errs, "; "))
		}
		return nil
	}
	u.push(func() { heal() }) //nolint:errcheck
	for _, r := range cutRules {
		if err := iptables(h, "-I", r); err != nil {
			return heal, err
		}
	}
	return heal, nil
}

// kill SIGKILLs the host's node daemon and everything under it; healing
// starts the daemon again, which starts the rest.
func kill(h *nethost.Host, u *undo) (func() error, error) {
	h.KillAll()
	if left := h.Processes(); len(left) > 0 {
		return nil, fmt.Errorf("%s: processes left after the kill: %v", nodeName(h), left)
	}
	return func() error {
		_, err := hacluster.Kubeboot(h, "daemon", "start")
		return err
	}, nil
}

// pause stops the host's etcd and API server (SIGSTOP) until healed.
func pause(h *nethost.Host, u *undo) (func() error, error) {
	var pids []int
	for _, name := range []string{"etcd", "kube-apiserver"} {
		pid := processNamed(h, name)
		if pid == 0 {
			return nil, fmt.Errorf("%s: no %s process", nodeName(h), name)
		}
		pids = append(pids, pid)
	}
	cont := func() error {
		var errs []error
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				errs = append(errs, fmt.Errorf("SIGCONT %d: %w", pid, err))
			}
		}
		return errors.Join(errs...)
	}
	u.push(func() { cont() }) //nolint:errcheck
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return cont, err
		}
	}
	return cont, nil
}

// processNamed finds the host's process whose argv[0] is name (the
// supervisor names each component's process so).
func processNamed(h *nethost.Host, name string) int {
	for _, pid := range h.Processes() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.SplitN(string(b), "\x00", 2)[0] == name {
			return pid
		}
	}
	return 0
}

var allFaults = []fault{
	{name: "pause-leader", leader: true, hold: 5 * time.Second, inject: pause},
	{name: "partition-follower", hold: 10 * time.Second, inject: partition},
	{name: "partition-leader", leader: true, hold: 10 * time.Second, inject: partition},
	{name: "kill-leader", leader: true, hold: 10 * time.Second, inject: kill},
}
