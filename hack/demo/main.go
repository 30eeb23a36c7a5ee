// Command demo brings a single-node kubeboot cluster up (or down) in a
// network-namespace host on this machine: the README's main job.
//
//	go run ./hack/demo up     # init, then print how to use the cluster
//	go run ./hack/demo down   # reset and remove the host
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubeboot/kubeboot/test/nethost"
)

const (
	name = "kubeboot-demo"
	ip   = "10.203.0.2"
	dir  = "/var/lib/kubeboot-demo"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "up" && os.Args[1] != "down") {
		fmt.Fprintln(os.Stderr, "usage: demo up [init flags...] | down")
		os.Exit(2)
	}
	bin, err := filepath.Abs("_output/kubeboot")
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "build kubeboot first: make build")
		os.Exit(1)
	}
	if os.Args[1] == "down" {
		err = down(bin)
	} else {
		err = up(bin, os.Args[2:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func up(bin string, extra []string) error {
	if _, err := os.Stat(filepath.Join(dir, "holder.pid")); err == nil {
		return fmt.Errorf("a demo host exists already; remove it with: go run ./hack/demo down")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	h, err := nethost.New(name, ip, dir, bin)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "holder.pid"), []byte(strconv.Itoa(h.HolderPID())), 0o644); err != nil {
		return err
	}
	// A single-node cluster: the control-plane node runs workloads. The
	// host's resolv.conf names only 127.0.0.1, so CoreDNS answers cluster
	// names only (init says so): nothing here may reach a resolver outside.
	args := append([]string{"init", "--node-name", "demo", "--single-node"}, extra...)
	cmd := h.Kubeboot(args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubeboot init failed (logs in %s; `go run ./hack/demo down` cleans up): %w", filepath.Join(h.Root, "var/log/kubeboot"), err)
	}
	fmt.Printf("\n[demo] init took %s\n", time.Since(start).Round(time.Millisecond))
	kubeconfig := filepath.Join(h.Root, "etc/kubernetes/admin.conf")
	fmt.Println("[demo] Waiting for the node and CoreDNS to be Ready...")
	for i := 0; i < 240; i++ {
		out, err := nethost.Run(h.Command(bin, "kubectl", "--kubeconfig", kubeconfig, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns",
			"-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status} {end}`))
		if f := strings.Fields(out); err == nil && len(f) == 2 && f[0] == "True" && f[1] == "True" {
			fmt.Printf("[demo] CoreDNS Ready %s after init started\n", time.Since(start).Round(time.Millisecond))
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	enter := fmt.Sprintf("nsenter -t %d -m -n -u --", h.HolderPID())
	for _, c := range [][]string{{"--root", h.Root, "status"}, {"kubectl", "--kubeconfig", filepath.Join(h.Root, "etc/kubernetes/admin.conf"), "get", "nodes,pods", "-A", "-o", "wide"}} {
		out, _ := nethost.Run(h.Command(bin, c...))
		fmt.Printf("\n$ kubeboot %s\n%s", strings.Join(c, " "), out)
	}
	fmt.Printf(`
[demo] The node runs in the network namespace host %q (%s). Use it with:
  %s %s kubectl --kubeconfig %s get pods -A
[demo] Remove it with: go run ./hack/demo down
`, name, ip, enter, bin, filepath.Join(h.Root, "etc/kubernetes/admin.conf"))
	return nil
}

func down(bin string) error {
	b, err := os.ReadFile(filepath.Join(dir, "holder.pid"))
	if err != nil {
		return fmt.Errorf("no demo host: %w", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	h, err := nethost.Attach(name, ip, dir, bin, pid)
	if err == nil {
		cmd := h.Kubeboot("reset", "--force")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if rerr := cmd.Run(); rerr != nil {
			fmt.Fprintln(os.Stderr, "reset:", rerr)
		}
		return h.Close()
	}
	// The holder is gone: remove what is left.
	fmt.Fprintln(os.Stderr, err)
	exec.Command("ip", "netns", "del", name).Run() //nolint:errcheck
	return os.RemoveAll(dir)
}
