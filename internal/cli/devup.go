package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/cluster"
	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/cleanup"
	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// The dev up modes, as local-up-cluster.sh's.
const (
	modeAll          = "all"
	modeControlPlane = "control-plane"
	modeNode         = "node"
)

// preserved are the node paths --preserve-data keeps for the next dev up:
// etcd's data and the certificates and keys that make sense of it (the
// service-account key signed its tokens, the CA its kubeconfigs).
var preserved = []string{config.DefaultEtcdDataDir, config.DefaultCertificatesDir}

func newDevUpCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var mode, advertise, nodeName, cpRoot string
	var preserve bool
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a local cluster in the foreground; Ctrl-C stops and removes it",
		Long: `Run a local cluster in the foreground, as hack/local-up-cluster.sh does, under
its own root (default: kubeboot/dev in your cache directory, or --root).

  --mode all            control plane and node (kubelet, containerd, CNI,
                        kube-proxy, CoreDNS): needs root, as kubeboot init
  --mode control-plane  etcd, API server, controller-manager and scheduler
                        only: no root privileges needed
  --mode node           a node (kubelet, containerd, CNI, kube-proxy) joined
                        to the control plane of a dev up --mode control-plane
                        (--control-plane-root): needs root

It lists each component's log, warns when a component dies (the node daemon
restarts it), and prints the KUBECONFIG to use. Ctrl-C stops everything and
removes the root; --preserve-data keeps etcd's data and the certificates for
the next dev up. ` + "`kubeboot dev print`, `dev swap` and `dev restore`" + ` work on it
with the same --root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mode != modeAll && mode != modeControlPlane && mode != modeNode {
				return fmt.Errorf("--mode %q: use %s, %s or %s", mode, modeAll, modeControlPlane, modeNode)
			}
			ownRoot := !cmd.Flags().Changed("root")
			if ownRoot || (mode == modeNode && cpRoot == "") {
				root, err := devRoot()
				if err != nil {
					return fmt.Errorf("finding your cache directory for the dev root (give --root): %w", err)
				}
				if cpRoot == "" {
					cpRoot = root
				}
				if ownRoot {
					g.Root = root
					if mode == modeNode {
						g.Root = root + "-node"
					}
				}
			}
			if mode == modeNode {
				if preserve {
					return fmt.Errorf("--preserve-data: a node keeps no data of its own (etcd's is the control plane's)")
				}
				return devUpNode(cmd.Context(), g, s, cpRoot, nodeName, ownRoot)
			}
			return devUp(cmd.Context(), g, s, devUpOptions{mode: mode, advertise: advertise, nodeName: nodeName, preserve: preserve, ownRoot: ownRoot})
		},
	}
	cmd.Flags().StringVar(&mode, "mode", modeAll, "all (control plane and node, needs root) or control-plane (no root needed)")
	cmd.Flags().BoolVar(&preserve, "preserve-data", false, "On Ctrl-C, keep etcd's data and the certificates for the next dev up")
	cmd.Flags().StringVar(&advertise, "apiserver-advertise-address", "", "The API server's address (default: the address of the default-route interface)")
	cmd.Flags().StringVar(&nodeName, "node-name", "", "The node's name (default: the hostname)")
	cmd.Flags().StringVar(&cpRoot, "control-plane-root", "", "With --mode node: the root of the dev up --mode control-plane to join (default: kubeboot/dev in your cache directory)")
	return cmd
}

type devUpOptions struct {
	mode, advertise, nodeName string
	preserve, ownRoot         bool
}

func devUp(parent context.Context, g *GlobalFlags, s Streams, o devUpOptions) error {
	fs := fsys.NewRoot(g.Root)
	if err := os.MkdirAll(g.Root, 0o755); err != nil {
		return err
	}
	c := &config.Config{}
	c.EnsureInit()
	c.Init.LocalAPIEndpoint.AdvertiseAddress = o.advertise
	c.Init.NodeRegistration.Name = o.nodeName
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	opts := cluster.InitOptions{
		// The cluster goes with dev up: a failure is not kept for
		// inspection, and says so itself.
		Node:    cluster.Node{Root: g.Root, Out: s.Out, SkipPhases: []string{"show-join-command"}},
		Runtime: cluster.Runtime{Binary: exe},
		Config:  c, SingleNode: o.mode == modeAll, ControlPlaneOnly: o.mode == modeControlPlane,
	}
	var reused []string
	for _, p := range preserved {
		if entries, err := os.ReadDir(fs.Path(p)); err == nil && len(entries) > 0 {
			reused = append(reused, p)
		}
	}
	if len(reused) > 0 {
		// A preserved etcd data dir is the point, not an error.
		opts.IgnorePreflightErrors = []string{"DirAvailable--var-lib-etcd"}
	}
	fmt.Fprintf(s.Out, "[dev] A %s cluster under %s\n", o.mode, g.Root)
	if len(reused) > 0 {
		fmt.Fprintf(s.Out, "[dev] Using the data a previous `dev up --preserve-data` kept: %v\n", reused)
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, runErr := cluster.Init(ctx, opts)
	if runErr == nil {
		printDevStatus(ctx, s, fs)
		fmt.Fprintf(s.Out, "\n[dev] The cluster is up. To use it:\n\nexport KUBECONFIG=%s\n\n", fs.Path(node.AdminKubeconfig))
		fmt.Fprintf(s.Out, "[dev] `kubeboot dev print --root %s` prints how to run any component by hand. Ctrl-C stops and removes the cluster", g.Root)
		if o.preserve {
			fmt.Fprint(s.Out, ", keeping etcd's data and the certificates")
		}
		fmt.Fprintln(s.Out)
		watchComponents(ctx, s, fs)
	}
	fmt.Fprintln(s.Out, "[dev] Stopping the cluster")
	if err := devDown(s, g, fs, o); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil && ctx.Err() == nil {
		return runErr
	}
	return nil
}

// printDevStatus lists the components and their logs.
func printDevStatus(ctx context.Context, s Streams, fs fsys.FS) {
	r, err := daemon.NewClient(fs).Status(ctx)
	if err != nil {
		return
	}
	fmt.Fprintln(s.Out, "[dev] Components and their logs:")
	w := tabwriter.NewWriter(s.Out, 4, 4, 2, ' ', 0)
	for _, c := range r.Components {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", c.Name, c.State, c.LogFile)
	}
	w.Flush()
}

// watchComponents warns, until ctx ends, whenever a component exits,
// from the daemon's watch of its status.
func watchComponents(ctx context.Context, s Streams, fs fsys.FS) {
	var restarts map[string]int
	err := daemon.NewClient(fs).Watch(ctx, func(r daemon.StatusReport) bool {
		first := restarts == nil
		if first {
			restarts = map[string]int{}
		}
		for _, c := range r.Components {
			if !first && c.Restarts > restarts[c.Name] {
				fmt.Fprintf(s.Out, "[dev] WARNING: %s exited (%s); the node daemon restarts it. Its log: %s\n", c.Name, c.LastExit, c.LogFile)
			}
			restarts[c.Name] = c.Restarts
		}
		return true
	})
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(s.Out, "[dev] WARNING: %v; see %s\n", err, fs.Path(node.DaemonLogFile))
	}
}

// devDown stops everything dev up started and removes its root, but for
// the preserved data when asked.
func devDown(s Streams, g *GlobalFlags, fs fsys.FS, o devUpOptions) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	keep := g.Root + ".preserved"
	if o.preserve {
		// etcd stops before its data moves, and the API server before etcd:
		// one that loses etcd takes the whole stop timeout to end. Swapped
		// out rather than removed: their specs still say this node is a
		// control plane, for reset.
		for _, name := range []string{component.APIServer, component.Etcd} {
			if err := daemon.NewClient(fs).Swap(ctx, name, time.Minute); err != nil {
				return err
			}
		}
		for _, p := range preserved {
			if _, err := os.Stat(fs.Path(p)); err != nil {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(keep, p)), 0o700); err != nil {
				return err
			}
			if err := os.Rename(fs.Path(p), filepath.Join(keep, p)); err != nil {
				return err
			}
		}
	}
	if o.mode == modeAll || o.mode == modeNode {
		// The node side leaves containers, mounts, iptables rules and
		// cgroups: reset knows them.
		ro := cluster.ResetOptions{Node: cluster.Node{Root: g.Root, Out: s.Out, Err: s.Err}, Force: true}
		if o.preserve {
			// The member stays, with its data, for the next dev up.
			ro.SkipPhases = []string{"remove-etcd-member"}
		}
		if err := cluster.Reset(ctx, ro); err != nil {
			return fmt.Errorf("kubeboot reset: %w", err)
		}
	} else {
		if err := daemon.Stop(ctx, fs, 2*time.Minute, func(d time.Duration) {
			fmt.Fprintf(s.Out, "[dev] Still stopping (%s)\n", d.Round(time.Second))
		}); err != nil {
			return err
		}
		// The daemon's CPU groups are outside the root (reset removes
		// them where a node side ran).
		cleanup.RemoveCgroups(cpugroup.Name(fs.Path("/")), s.Out)
	}
	if err := os.RemoveAll(g.Root); err != nil {
		return err
	}
	if o.preserve {
		if err := os.Rename(keep, g.Root); err != nil {
			return err
		}
		fmt.Fprintf(s.Out, "[dev] Removed the cluster; kept %v under %s for the next dev up\n", preserved, g.Root)
		return nil
	}
	if o.ownRoot {
		os.Remove(filepath.Dir(g.Root)) // the kubeboot cache directory, when empty
	}
	fmt.Fprintf(s.Out, "[dev] Removed %s\n", g.Root)
	return nil
}

// devUpNode joins a node to a dev control plane: a token from its
// admin.conf, then a join with it, as an operator would.
func devUpNode(parent context.Context, g *GlobalFlags, s Streams, cpRoot, nodeName string, ownRoot bool) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	admin := filepath.Join(cpRoot, node.AdminKubeconfig)
	if _, err := os.Stat(admin); err != nil {
		return fmt.Errorf("no control plane to join under %s (%v): start one with `kubeboot dev up --mode control-plane`, or give --control-plane-root", cpRoot, err)
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	join, err := cluster.CreateToken(ctx, cluster.TokenOptions{Kubeconfig: admin, TTL: time.Hour, Description: "kubeboot dev up --mode node"})
	if err != nil {
		return fmt.Errorf("creating a bootstrap token with %s: %w", admin, err)
	}
	c := join.Config()
	c.Join.NodeRegistration.Name = nodeName
	fmt.Fprintf(s.Out, "[dev] A node under %s, joining the control plane of %s\n", g.Root, cpRoot)
	// A Ctrl-C during the join lets it finish: the node must reach the
	// cluster through its own load balancer to take itself out again.
	_, runErr := cluster.Join(parent, cluster.JoinOptions{
		Node:    cluster.Node{Root: g.Root, Out: s.Out, Err: s.Err},
		Runtime: cluster.Runtime{Binary: exe},
		Config:  c,
	})
	fs := fsys.NewRoot(g.Root)
	if runErr == nil && ctx.Err() == nil {
		printDevStatus(ctx, s, fs)
		fmt.Fprintf(s.Out, "\n[dev] The node runs. Ctrl-C takes it out of the cluster and removes it\n")
		watchComponents(ctx, s, fs)
	}
	fmt.Fprintln(s.Out, "[dev] Stopping the node")
	if err := devDown(s, g, fs, devUpOptions{mode: modeNode, ownRoot: ownRoot}); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil && ctx.Err() == nil {
		return fmt.Errorf("kubeboot join: %w", runErr)
	}
	return nil
}
