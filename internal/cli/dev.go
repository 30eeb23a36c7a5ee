package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/poll"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/internal/runtime/devmode"
)

func newDevCommand(g *GlobalFlags, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run components by hand or under a debugger against a live cluster",
		Long: `Developer mode, local-up-cluster.sh done right.

  kubeboot dev up                    a local cluster in the foreground; Ctrl-C removes it
  kubeboot dev print [component...]  how to run a component as its upstream program:
                                     shell, JSON, VS Code, GoLand or dlv
  kubeboot dev swap <component>      stop the node daemon's instance and wait for yours
  kubeboot dev restore <component>   hand the component back to the node daemon

Everything is read from the component specs the node daemon runs
(` + node.SpecDir + `), on a dev cluster or a real node (--root).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newDevPrintCommand(g, s), newDevSwapCommand(g, s), newDevRestoreCommand(g, s), newDevUpCommand(g, s))
	return cmd
}

// printFlags are the flags of every command that prints launches.
type printFlags struct {
	format, kubernetesSource, kubebootSource, modCache string
}

func (f *printFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.format, "format", "shell", "shell, json, vscode (a launch.json), goland (run configurations, XML) or dlv (dlv debug and dlv exec lines)")
	cmd.Flags().StringVar(&f.kubernetesSource, "source", "", "A Kubernetes source checkout to build the components from (default: k8s.io/kubernetes in the Go module cache, at the version kubeboot embeds)")
	cmd.Flags().StringVar(&f.kubebootSource, "kubeboot-source", "", "A kubeboot checkout, for kubeboot's own components (default: VS Code's ${workspaceFolder})")
	cmd.Flags().StringVar(&f.modCache, "modcache", devmode.DefaultModCache(), "The Go module cache")
}

// printFormats are dev print's formats, by --format.
var printFormats = map[string]func(io.Writer, []devmode.Launch) error{
	"shell": devmode.Shell, "json": devmode.JSON, "vscode": devmode.VSCode, "goland": devmode.GoLand, "dlv": devmode.Dlv,
}

func (f *printFlags) write(s Streams, ls []devmode.Launch) error {
	if err := f.validate(); err != nil {
		return err
	}
	return printFormats[f.format](s.Out, ls)
}

func (f *printFlags) validate() error {
	if _, ok := printFormats[f.format]; !ok {
		return fmt.Errorf("--format %q: use shell, json, vscode, goland or dlv", f.format)
	}
	return nil
}

// launches reads the specs of the named components (all when none are
// named) and turns them into launches, with the environment and working
// directory the running daemon gives its components.
func (f *printFlags) launches(fs fsys.FS, names []string) ([]devmode.Launch, error) {
	specs, err := component.Store{FS: fs}.Load()
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("no component specs in %s: this is not a kubeboot node (give --root for another)", fs.Path(node.SpecDir))
	}
	var known []string
	for _, sp := range specs {
		known = append(known, sp.Name)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("this node runs no component %q; it runs %s", n, strings.Join(known, ", "))
		}
	}
	env, dir := daemon.ComponentEnv(os.Environ()), fs.Path("/")
	if r, err := daemon.NewClient(fs).Status(context.Background()); err == nil && r.Dir != "" {
		env, dir = r.Env, r.Dir
	}
	// PATH is the developer's own: the upstream programs are looked up in
	// it, and the daemon's PATH is that of whoever started it.
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	src := devmode.Sources{Kubernetes: f.kubernetesSource, Kubeboot: f.kubebootSource, ModCache: f.modCache}
	var out []devmode.Launch
	for _, sp := range specs {
		if len(names) == 0 || slices.Contains(names, sp.Name) {
			out = append(out, devmode.FromSpec(sp, fs.Path(component.SpecPath(sp.Name)), env, dir, src))
		}
	}
	return out, nil
}

func newDevPrintCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var f printFlags
	cmd := &cobra.Command{
		Use:   "print [component...]",
		Short: "Print how to run components as their upstream programs, with this node's certificates and kubeconfigs",
		Long: `Print, for each component (all when none is named), the exact command line
the node daemon runs it with, as the upstream program (kube-apiserver, etcd,
...) with its own flags: every certificate, key and kubeconfig path, the
environment and the working directory. Formats: shell lines, JSON, a VS Code
launch.json (Go launch configurations building the upstream package), GoLand
run configurations, or dlv command lines.

Stop the daemon's instance first with ` + "`kubeboot dev swap <component>`" + `.`,
		RunE: func(_ *cobra.Command, names []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			ls, err := f.launches(g.FS(false, s.Out), names)
			if err != nil {
				return err
			}
			return f.write(s, ls)
		},
	}
	f.add(cmd)
	return cmd
}

func newDevSwapCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var f printFlags
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "swap <component>",
		Short: "Stop the node daemon's instance of a component, print how to run yours, and wait until it answers",
		Long: `Stop the node daemon's instance of one component and keep it stopped, print
the command line your own process must be started with (as ` + "`dev print`" + `), and
wait until your process answers the component's readiness probe. The rest of
the cluster keeps running. ` + "`kubeboot dev restore <component>`" + ` hands the component
back to the daemon; with --wait, this command stays in the foreground and
Ctrl-C does it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			name, fs := args[0], g.FS(false, s.Out)
			ls, err := f.launches(fs, []string{name})
			if err != nil {
				return err
			}
			specs, _ := component.Store{FS: fs}.Load()
			idx := slices.IndexFunc(specs, func(sp component.Spec) bool { return sp.Name == name })
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := daemon.NewClient(fs).Swap(ctx, name, time.Minute); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "[dev] The node daemon no longer runs %s: the slot is yours until `kubeboot dev restore %s`. Start your process with:\n\n", name, name)
			if err := f.write(s, ls); err != nil {
				return err
			}
			fmt.Fprintln(s.Out)
			probe := specs[idx].Probe
			if probe.Empty() {
				fmt.Fprintf(s.Out, "[dev] %s has no readiness probe: the cluster uses it as soon as it runs\n", name)
			} else {
				fmt.Fprintf(s.Out, "[dev] Waiting for your %s to answer its readiness probe (%s)\n", name, probe)
				start := time.Now()
				limit := timeout
				if limit == 0 {
					limit = 24 * time.Hour
				}
				logf := func(format string, args ...any) { fmt.Fprintf(s.Out, format+"\n", args...) }
				if err := probe.WaitReady(ctx, limit, poll.Progress(logf, "dev", name, false)); err != nil {
					if ctx.Err() != nil && wait {
						return restoreAfterSignal(s, fs, name)
					}
					return fmt.Errorf("%s did not answer %s: %v (the slot stays yours; `kubeboot dev restore %s` hands it back)", name, probe, err, name)
				}
				fmt.Fprintf(s.Out, "[dev] Your %s answers its readiness probe after %s\n", name, time.Since(start).Round(time.Millisecond))
			}
			if !wait {
				return nil
			}
			fmt.Fprintf(s.Out, "[dev] Ctrl-C hands %s back to the node daemon\n", name)
			<-ctx.Done()
			return restoreAfterSignal(s, fs, name)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "Stay in the foreground; Ctrl-C hands the component back to the node daemon")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "How long to wait for your process to answer the readiness probe (0: no limit)")
	return cmd
}

func restoreAfterSignal(s Streams, fs fsys.FS, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := daemon.NewClient(fs).Restore(ctx, name, 2*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "[dev] The node daemon runs %s again\n", name)
	return nil
}

func newDevRestoreCommand(g *GlobalFlags, s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "restore <component>",
		Short: "Hand a swapped component back to the node daemon, and wait until it is ready",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fs := g.FS(false, s.Out)
			start := time.Now()
			if err := daemon.NewClient(fs).Restore(cmd.Context(), args[0], 2*time.Minute); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "[dev] The node daemon runs %s again; ready after %s\n", args[0], time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
}

// devRoot is dev up's default root: under the user's cache directory.
func devRoot() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "kubeboot", "dev"), nil
}
