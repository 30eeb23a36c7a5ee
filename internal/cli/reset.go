package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kubeboot/kubeboot/pkg/cleanup"
	"github.com/kubeboot/kubeboot/pkg/component"
	"github.com/kubeboot/kubeboot/pkg/cpugroup"
	"github.com/kubeboot/kubeboot/pkg/daemon"
	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/netagent"
	"github.com/kubeboot/kubeboot/pkg/node"
)

// nodeStatePaths are the node paths kubeboot creates, besides the etcd
// data dir (read from the etcd spec) and the certificates dir.
var nodeStatePaths = []string{"/etc/kubernetes", "/var/lib/kubeboot", daemon.LogDir, daemon.RunDir,
	node.KubeletDir, node.KubeProxyDir, node.CNIConfDir, node.CNIDataDir}

func newResetCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var force, dryRun bool
	var certDir string
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Performs a best effort revert of changes made to this host by 'kubeboot init' or 'kubeboot join'",
		Long: `Stop the node daemon and every component it runs, then remove every file and
directory kubeboot created on this node: certificates, kubeconfig files,
component specs, etcd data, logs and pid files. Running it again is a no-op.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := g.FS(dryRun, s.Out)
			if !force && !dryRun {
				f, ok := s.In.(*os.File)
				if !ok || !term.IsTerminal(int(f.Fd())) {
					return fmt.Errorf("reset removes this node's cluster state under %s: confirm with --force when not on a terminal", fs.Path("/"))
				}
				fmt.Fprintf(s.Out, "[reset] WARNING: Changes made to this host by 'kubeboot init' or 'kubeboot join' will be reverted.\n[reset] Are you sure you want to proceed? [y/N]: ")
				answer, _ := bufio.NewReader(s.In).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
					return fmt.Errorf("aborted reset operation")
				}
			}
			paths := append([]string(nil), nodeStatePaths...)
			if certDir != "" {
				paths = append(paths, certDir)
			}
			if dd := etcdDataDir(fs); dd != "" {
				paths = append(paths, dd)
			}
			if dryRun {
				if pid := daemon.Running(fs); pid != 0 {
					fmt.Fprintf(s.Out, "[dryrun] Would stop every container, the kubeboot daemon (pid %d) and its components\n", pid)
				}
			} else {
				// The kubelet first, or it restarts the containers we kill;
				// then the containers, while containerd still runs: they are
				// not the daemon's children and would outlive it.
				if err := daemon.StopComponent(cmd.Context(), fs, component.Kubelet, time.Minute); err != nil {
					return err
				}
				if err := cleanup.KillContainers(cmd.Context(), fs.Path(node.ContainerdSocket), s.Out); err != nil {
					fmt.Fprintf(s.Err, "[reset] %v\n", err)
				}
				if err := stopDaemon(cmd.Context(), g, s); err != nil {
					return err
				}
				cleanup.KillProcesses(fs.Path(node.ContainerdState), s.Out)
				cleanup.KillCgroup("kubepods", s.Out)
				// Only under kubeboot's own directories: with --root / an
				// unmount under the root would take the host's mounts.
				for _, dir := range []string{node.KubeletDir, node.ContainerdState, node.ContainerdRoot, daemon.RunDir} {
					if err := cleanup.Unmount(fs.Path(dir), s.Out); err != nil {
						return err
					}
				}
				cleanup.DeleteLink(node.BridgeName, s.Out)
				if err := cleanup.FlushChains([]string{"KUBE-", "CNI-", netagent.ChainPrefix}, s.Out); err != nil {
					fmt.Fprintf(s.Err, "[reset] %v\n", err)
				}
				cleanup.RemoveCgroups("kubepods", s.Out)
				cleanup.RemoveCgroups(cpugroup.Name(fs.Path("/")), s.Out)
			}
			removed, err := cleanup.Remove(fs, paths, s.Out)
			if err != nil {
				return err
			}
			if len(removed) == 0 && !dryRun {
				fmt.Fprintf(s.Out, "[reset] Nothing to remove under %s\n", fs.Path("/"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "Reset the node without prompting for confirmation")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "Don't apply any changes; just output what would be done")
	cmd.Flags().StringVar(&certDir, "cert-dir", "", "A certificates dir outside /etc/kubernetes to remove as well")
	return cmd
}

// etcdDataDir reads the local etcd member's data dir from its spec, so
// that a custom etcd.local.dataDir is removed too.
func etcdDataDir(fs fsys.FS) string {
	b, err := fs.ReadFile(component.SpecPath(component.Etcd))
	if err != nil {
		return "/var/lib/etcd"
	}
	var spec component.Spec
	if json.Unmarshal(b, &spec) != nil {
		return "/var/lib/etcd"
	}
	for _, a := range spec.Args {
		if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
			// The spec holds host paths; turn it back into a node path.
			root := fs.Path("/")
			if rel, ok := strings.CutPrefix(v, strings.TrimSuffix(root, "/")); ok && path.IsAbs(rel) {
				return rel
			}
			return v
		}
	}
	return "/var/lib/etcd"
}
