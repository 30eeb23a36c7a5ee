package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubeboot/kubeboot/cluster"
	"github.com/kubeboot/kubeboot/internal/etcd/etcdbackup"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// etcdSubcommands are kubeboot's own under "etcd": `kubeboot etcd` with
// anything else (flags) is the embedded etcd server, which takes no
// positional arguments.
var etcdSubcommands = []string{"snapshot", "members"}

// IsOwnSubcommand tells whether args (without argv[0]) name one of
// kubeboot's commands rather than an embedded component of the same name.
func IsOwnSubcommand(args []string) bool {
	return len(args) > 1 && args[0] == "etcd" && slices.Contains(etcdSubcommands, args[1])
}

func newEtcdCommand(g *GlobalFlags, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Back up and restore the cluster's etcd, list its members",
		Long: `Back up and restore the cluster's etcd, list its members.

` + "`kubeboot etcd snapshot ...` and `kubeboot etcd members`" + ` are kubeboot's; ` + "`kubeboot etcd`" + `
with flags runs the embedded etcd server itself.`,
		Args: cobra.NoArgs,
	}
	snap := &cobra.Command{Use: "snapshot", Short: "Save etcd with the cluster's keys, or bring a control plane back from such a file", Args: cobra.NoArgs}
	snap.AddCommand(newEtcdSaveCommand(g, s), newEtcdRestoreCommand(g, s))
	cmd.AddCommand(snap, newEtcdMembersCommand(g, s))
	return cmd
}

func newEtcdSaveCommand(g *GlobalFlags, s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "save FILE",
		Short: "Save a consistent snapshot of etcd with the cluster's CAs and keys (mode 0600)",
		Long: `Save a consistent snapshot of this control plane's etcd member into FILE,
together with what is needed to bring the cluster back from it: the shared
CAs and keys (cluster, front-proxy and etcd CA, service-account key, and the
key of Secrets at rest with --hardened) and the cluster's configuration.
FILE is written with mode 0600: it opens the whole cluster, keep it as you
keep the CA keys. ` + "`kubeboot etcd snapshot restore FILE`" + ` brings it back.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fs := g.FS(false, s.Out)
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			cfg, err := etcdbackup.LocalCluster(ctx, fs)
			if err != nil {
				return err
			}
			if cfg.Cluster.Etcd.External != nil {
				return fmt.Errorf("the cluster's etcd is external: back it up where it runs")
			}
			node := component.Store{FS: fs}.EtcdMember()
			start := time.Now()
			m, err := etcdbackup.Save(ctx, fs, cfg, node, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "[snapshot] Saved etcd at revision %d (%d keys, %.1f MiB) from member %q, the cluster's configuration and %d shared keys and certificates (%s) to %s in %s\n",
				m.Revision, m.Keys, float64(m.SnapshotBytes)/(1<<20), node, len(m.PKI), strings.Join(m.PKI, ", "), args[0], time.Since(start).Round(time.Millisecond))
			fmt.Fprintf(s.Out, "[snapshot] The file has mode 0600: it holds the CA and service-account keys, which open the whole cluster; keep it as you keep them\n")
			return nil
		},
	}
}

func newEtcdRestoreCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var advertise, nodeName string
	var ignore []string
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Bring a control plane back from a snapshot, on an empty node",
		Long: `Bring a cluster back from a file ` + "`kubeboot etcd snapshot save`" + ` wrote, on a node
where kubeboot has nothing yet: the shared CAs and keys are put back (so
kubeconfigs of the old cluster keep working), etcd's data is restored as a
one-member cluster of this node, and ` + "`kubeboot init`" + ` runs with the cluster's
configuration and this node's address and name. Every object comes back; more
control planes join as usual.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			_, err = cluster.Restore(cmd.Context(), cluster.RestoreOptions{
				Node:     cluster.Node{Root: g.Root, Out: s.Out, Err: s.Err},
				Runtime:  cluster.Runtime{Binary: exe, IgnorePreflightErrors: ignore},
				Snapshot: args[0], AdvertiseAddress: advertise, NodeName: nodeName,
			})
			return err
		},
	}
	cmd.Flags().StringVar(&advertise, "apiserver-advertise-address", "", "This node's address: the restored etcd member's and API server's")
	cmd.Flags().StringVar(&nodeName, "node-name", "", "This node's name")
	cmd.Flags().StringSliceVar(&ignore, "ignore-preflight-errors", nil, "Pre-flight checks whose errors become warnings, as for init")
	return cmd
}

func newEtcdMembersCommand(g *GlobalFlags, s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "members",
		Short: "List the etcd members, their roles and health",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := g.FS(false, s.Out)
			certDir := config.DefaultCertificatesDir
			if n, err := (component.Store{FS: fs}).Node(); err == nil && n.CertificatesDir != "" {
				certDir = n.CertificatesDir
			}
			cc, err := etcdbackup.Client(fs, certDir)
			if err != nil {
				return err
			}
			ec, err := clientv3.New(*cc)
			if err != nil {
				return err
			}
			defer ec.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			list, err := ec.MemberList(ctx)
			if err != nil {
				return fmt.Errorf("listing etcd's members through this node's member: %w", err)
			}
			w := tabwriter.NewWriter(s.Out, 4, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tID\tROLE\tCLIENT URL\tHEALTH\tDB SIZE\tRAFT INDEX")
			for _, m := range list.Members {
				role := "voter"
				if m.IsLearner {
					role = "learner"
				}
				health, size, index := "unhealthy", "-", "-"
				if len(m.ClientURLs) > 0 {
					sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
					st, err := ec.Status(sctx, m.ClientURLs[0])
					scancel()
					if err == nil {
						health = "healthy"
						if st.Leader == m.ID {
							role += ", leader"
						}
						size, index = fmt.Sprintf("%.1f MiB", float64(st.DbSize)/(1<<20)), fmt.Sprint(st.RaftIndex)
					} else {
						health = "unhealthy: " + err.Error()
					}
				}
				client := strings.Join(m.ClientURLs, ",")
				if client == "" {
					client = "(not started)"
				}
				fmt.Fprintf(w, "%s\t%x\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.ID, role, client, health, size, index)
			}
			return w.Flush()
		},
	}
}
