// Package cli builds kubeboot's command line. Each command has its flags
// in a struct of its own; nothing lives in package variables, so tests run
// commands in-process with Run.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/grpclog"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

// Streams are a command's standard streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// GlobalFlags are the flags every command has.
type GlobalFlags struct {
	// Root is the prefix every path kubeboot reads or writes sits under.
	Root string
}

// FS returns the node filesystem, or a dry-run view of it.
func (g *GlobalFlags) FS(dryRun bool, out io.Writer) fsys.FS {
	root := fsys.NewRoot(g.Root)
	if dryRun {
		return fsys.NewDryRun(root, out)
	}
	return root
}

// NewCommand returns the kubeboot command tree. components names the
// embedded upstream components, for the help text.
func NewCommand(s Streams, components []string) *cobra.Command {
	g := &GlobalFlags{}
	cmd := &cobra.Command{
		Use:   "kubeboot",
		Short: "kubeboot: bootstrap a Kubernetes cluster from one binary",
		Long: `kubeboot turns Linux hosts into a Kubernetes cluster the way kubeadm does,
with every component embedded in this one binary and nothing to download.

    ┌──────────────────────────────────────────────────────────┐
    │ On the first control-plane node: kubeboot init            │
    │ On every other node:             kubeboot join <endpoint> │
    └──────────────────────────────────────────────────────────┘` + componentsHelp(components),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(s.In)
	cmd.SetOut(s.Out)
	cmd.SetErr(s.Err)
	cmd.PersistentFlags().StringVar(&g.Root, "root", "/", "Prefix for every path kubeboot reads or writes (lets several nodes or tests share one host)")
	addVersionFlag(cmd, s)
	cmd.AddCommand(
		newInitCommand(g, s),
		newJoinCommand(g, s),
		newApplyCommand(g, s),
		newConfigCommand(g, s),
		newDevCommand(g, s),
		newEtcdCommand(g, s),
		newCertsCommand(g, s),
		newKubeconfigCommand(g, s),
		newTokenCommand(g, s),
		newResetCommand(g, s),
		newUpgradeCommand(g, s),
		newDaemonCommand(g, s),
		newStatusCommand(g, s),
		newImagesCommand(g, s),
		newHelpersCommand(g, s),
		newVersionCommand(s),
		newAPICommand(s),
	)
	cmd.AddCommand(newOwnComponentCommands(g, s)...)
	return cmd
}

func componentsHelp(components []string) string {
	if len(components) == 0 {
		return ""
	}
	sorted := append([]string(nil), components...)
	sort.Strings(sorted)
	return "\n\nEmbedded components, run as `kubeboot <component> [args]` or through a link\nnamed after the component:\n  " + strings.Join(sorted, ", ")
}

// Run executes kubeboot with args (without the program name) and returns
// the process exit code. SIGINT and SIGTERM cancel the command's context,
// so a long phase stops what it started.
func Run(args []string, s Streams, components []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	quietGRPC(s.Err)
	cmd := NewCommand(s, components)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil && !errors.Is(err, errVersionPrinted) {
		fmt.Fprintf(s.Err, "error: %v\n", err)
		return 1
	}
	return 0
}

// quietGRPC keeps gRPC's warnings and information out of kubeboot's own
// commands, and its errors in errw. k8s.io/apiserver, linked in for the
// embedded components, sends gRPC's log to klog on stderr (its package
// init): an init, a join or a reset that dials etcd before it serves
// would print a warning for each refused dial, while it says itself
// what it waits for. The embedded components do not come here
// (cmd/kubeboot dispatches them first) and keep upstream's logging.
func quietGRPC(errw io.Writer) {
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, errw))
}
