package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/host/nodestate"
	"github.com/kubeboot/kubeboot/internal/kube/manifests"
	"github.com/kubeboot/kubeboot/internal/programs/settle"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/internal/runtime/service"
	"github.com/kubeboot/kubeboot/internal/runtime/supervisor"
)

func newDaemonCommand(g *GlobalFlags, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run, start or stop the node daemon that supervises this node's components, or restart one of them",
		Long: `The node daemon runs every component of this node (etcd, the control plane,
and on workers the container runtime, kubelet and kube-proxy) as child
processes: it starts them in dependency order, waits for each to be ready,
restarts them with back-off when they exit, and stops them in reverse order.
"kubeboot init" and "kubeboot join" start it; their phases hand it the
components to run as spec files in /etc/kubernetes/kubeboot/components.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(
		&cobra.Command{
			Use:   "run",
			Short: "Run the node daemon in the foreground (SIGTERM stops it and every component)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				fs := g.FS(false, s.Out)
				logw := io.Writer(s.Out)
				if os.Getenv("INVOCATION_ID") != "" {
					// Run by systemd (its unit): the journal has the output,
					// and the log file too, where `kubeboot status` and the
					// operator look without systemd.
					if err := os.MkdirAll(fs.Path(node.LogDir), 0o755); err != nil {
						return err
					}
					f, err := os.OpenFile(fs.Path(node.DaemonLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
					if err != nil {
						return err
					}
					defer f.Close()
					logw = io.MultiWriter(s.Out, f)
				}
				settle.Start()
				return daemon.New(fs, exe, logw, service.InProcess(fs)).Run(cmd.Context())
			},
		},
		&cobra.Command{
			Use:   "start",
			Short: "Start the node daemon in the background, if it does not run yet",
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				fs := g.FS(false, s.Out)
				pid, started, err := daemon.Start(fs, exe)
				if err != nil {
					return err
				}
				if started {
					fmt.Fprintf(s.Out, "[daemon] Started the kubeboot daemon (pid %d); its log is %s\n", pid, fs.Path(node.DaemonLogFile))
				} else {
					fmt.Fprintf(s.Out, "[daemon] The kubeboot daemon already runs (pid %d)\n", pid)
				}
				return nil
			},
		},
		&cobra.Command{
			Use:   "restart COMPONENT",
			Short: "Restart one component of this node at once and wait until it is ready again",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				fs := g.FS(false, s.Out)
				// Checked before the line that says it restarts.
				if err := daemon.NewClient(fs).Runs(args[0]); err != nil {
					return err
				}
				start := time.Now()
				fmt.Fprintf(s.Out, "[daemon] Restarting %s\n", args[0])
				if err := daemon.NewClient(fs).Restart(cmd.Context(), args[0], "asked by `kubeboot daemon restart`", true, 2*time.Minute); err != nil {
					return err
				}
				fmt.Fprintf(s.Out, "[daemon] %s restarted and ready after %s\n", args[0], time.Since(start).Round(time.Millisecond))
				return nil
			},
		},
		&cobra.Command{
			Use:   "stop",
			Short: "Stop the node daemon and every component it runs",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return stopDaemon(cmd.Context(), g, s)
			},
		},
	)
	return cmd
}

func stopDaemon(ctx context.Context, g *GlobalFlags, s Streams) error {
	return daemon.StopAndReport(ctx, g.FS(false, s.Out), s.Out)
}

func newStatusCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var watch bool
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the components of this node: pid, state, readiness, restarts and log",
		Example: `  kubeboot status            # the node's record and its components
  kubeboot status --watch    # then a line at each change, until interrupted
  kubeboot status -o json    # the same as data (with --watch, one document per line)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "json", "yaml"); err != nil {
				return err
			}
			if watch && output == "yaml" {
				return errors.New("--watch prints one JSON document per line: -o json, or no -o")
			}
			fs := g.FS(false, s.Out)
			pid := daemon.Running(fs)
			if pid == 0 {
				if output != "" || watch {
					return fmt.Errorf("the kubeboot daemon is not running for %s", fs.Path("/"))
				}
				fmt.Fprintf(s.Out, "The kubeboot daemon is not running for %s\n", fs.Path("/"))
				return nil
			}
			c := daemon.NewClient(fs)
			r, err := c.Status(cmd.Context())
			if err != nil {
				return fmt.Errorf("the kubeboot daemon runs (pid %d) but does not tell its status: %w", pid, err)
			}
			n, nerr := (component.Store{FS: fs}).Node()
			if output != "" {
				st := nodeStatus{Status: *r}
				if nerr == nil && n.Name != "" {
					st.Node = &n
				}
				if watch {
					return watchJSON(cmd.Context(), c, s.Out, st)
				}
				return printAs(s.Out, output, st)
			}
			fmt.Fprintf(s.Out, "kubeboot daemon: pid %d, status of %s\n", pid, r.Updated.Format(time.RFC3339))
			if nerr == nil && n.Name != "" {
				fmt.Fprintf(s.Out, "%s\n", nodeLine(n))
			}
			fmt.Fprintln(s.Out)
			w := tabwriter.NewWriter(s.Out, 4, 4, 3, ' ', 0)
			fmt.Fprintln(w, "COMPONENT\tROLE\tPID\tSTATE\tREADY\tRESTARTS\tSINCE\tLOG")
			for _, c := range r.Components {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%v\t%d\t%s\t%s\n", c.Name, component.RoleOf(c.Name), pidString(c), c.State, c.Ready, c.Restarts, time.Since(c.Since).Round(time.Second), c.LogFile)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if err := printManifests(fs, s.Out); err != nil || !watch {
				return err
			}
			return watchText(cmd.Context(), c, s.Out, *r)
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "After the status, print each change of a component (its state, readiness, pid, restarts) as it happens, until interrupted")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Print the node's record and its daemon's status as 'json' or 'yaml'")
	return cmd
}

// nodeStatus is what `kubeboot status -o json` prints: the node's record
// and its daemon's status.
type nodeStatus struct {
	Node   *nodestate.Node     `json:"node,omitempty"`
	Status daemon.StatusReport `json:"status"`
}

// watchJSON prints the daemon's status with the node's record at once and
// at each change, one JSON document per line, until ctx ends or the
// daemon does. The watch's first report is the status now.
func watchJSON(ctx context.Context, c *daemon.Client, out io.Writer, st nodeStatus) error {
	enc := json.NewEncoder(out)
	var werr error
	err := c.Watch(ctx, func(r daemon.StatusReport) bool {
		st.Status = r
		werr = enc.Encode(st)
		return werr == nil
	})
	return errors.Join(werr, err)
}

// watchText prints, at each change of the daemon's status, a line per
// component whose state, readiness, pid or restarts changed (and one per
// component gone), until ctx ends or the daemon does.
func watchText(ctx context.Context, c *daemon.Client, out io.Writer, last daemon.StatusReport) error {
	const row = "%-12s  %-23s  %-7s  %-8s  %-5s  %-8s  %s\n"
	fmt.Fprintln(out, "\nChanges (until interrupted):")
	fmt.Fprintf(out, row, "TIME", "COMPONENT", "PID", "STATE", "READY", "RESTARTS", "LAST EXIT")
	before := map[string]supervisor.Status{}
	for _, st := range last.Components {
		before[st.Name] = st
	}
	var werr error
	err := c.Watch(ctx, func(r daemon.StatusReport) bool {
		now := map[string]supervisor.Status{}
		at := r.Updated.Local().Format("15:04:05.000")
		for _, st := range r.Components {
			now[st.Name] = st
			if b, ok := before[st.Name]; ok && b.State == st.State && b.Ready == st.Ready && b.PID == st.PID && b.Restarts == st.Restarts {
				continue
			}
			_, werr = fmt.Fprintf(out, row, at, st.Name, pidString(st), st.State, fmt.Sprint(st.Ready), fmt.Sprint(st.Restarts), st.LastExit)
		}
		for _, name := range slices.Sorted(maps.Keys(before)) {
			if _, ok := now[name]; !ok {
				_, werr = fmt.Fprintf(out, row, at, name, "-", "gone", "-", "-", "")
			}
		}
		before = now
		return werr == nil
	})
	return errors.Join(werr, err)
}

// nodeLine is the node's record in one line: "node cp1 (control-plane),
// Kubernetes v1.37.2, addresses 10.0.0.2; etcd member cp1 at
// https://10.0.0.2:2380; kubeboot v0.9.0 (1a2b3c4)".
func nodeLine(n nodestate.Node) string {
	line := fmt.Sprintf("node %s (%s)", n.Name, n.Role)
	if n.Version != "" {
		line += ", Kubernetes " + n.Version
	}
	if len(n.Addresses) > 0 {
		line += ", addresses " + strings.Join(n.Addresses, ", ")
	}
	if n.Etcd != nil {
		line += fmt.Sprintf("; etcd member %s at %s", n.Etcd.Name, n.Etcd.PeerURL)
	}
	if n.Kubeboot != "" {
		line += "; kubeboot " + n.Kubeboot
	}
	return line
}

// printManifests shows what became of each file of the control plane's
// manifests directory, when it has any.
func printManifests(fs fsys.FS, out io.Writer) error {
	st, err := manifests.ReadState(fs)
	if err != nil {
		return fmt.Errorf("the manifests' state: %w", err)
	}
	if len(st.Files) == 0 {
		return nil
	}
	fmt.Fprintf(out, "\nManifests of %s:\n", fs.Path(manifests.Dir))
	w := tabwriter.NewWriter(out, 4, 4, 3, ' ', 0)
	fmt.Fprintln(w, "FILE\tSTATE\tOBJECTS\tSINCE\tERROR")
	for _, f := range st.Files {
		state := "Applied"
		switch {
		case f.Deleted:
			state = "Deleting"
		case f.Error != "":
			state = "Failed"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", f.Name, state, len(f.Objects), time.Since(f.Since).Round(time.Second), strings.ReplaceAll(f.Error, "\n", "; "))
	}
	return w.Flush()
}

func pidString(c supervisor.Status) string {
	if c.PID == 0 {
		return "-"
	}
	return fmt.Sprint(c.PID)
}
