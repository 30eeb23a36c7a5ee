package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubeboot/kubeboot/pkg/config"
	"github.com/kubeboot/kubeboot/pkg/etcdbackup"
	"github.com/kubeboot/kubeboot/pkg/node"
	"github.com/kubeboot/kubeboot/pkg/renewal"
	"github.com/kubeboot/kubeboot/pkg/supervisor"
)

// inProcess runs one of kubeboot's hidden component commands inside the
// node daemon's process, from its spec's args (the same flags the command
// takes when run as a process of its own).
func inProcess(newCmd func(*GlobalFlags, Streams) *cobra.Command) supervisor.InProcessFunc {
	return func(ctx context.Context, args []string, log io.Writer) error {
		g := &GlobalFlags{}
		root := &cobra.Command{Use: "kubeboot", SilenceUsage: true, SilenceErrors: true}
		root.PersistentFlags().StringVar(&g.Root, "root", "/", "")
		root.AddCommand(newCmd(g, Streams{Out: log, Err: log}))
		root.SetArgs(args)
		root.SetOut(log)
		root.SetErr(log)
		return root.ExecuteContext(ctx)
	}
}

// timestamped logs as the daemon's other components do.
func timestamped(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(w, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
	}
}

func newCertRenewerCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var certDir, alg string
	var validity, renewBefore time.Duration
	cmd := &cobra.Command{
		Use:    "cert-renewer",
		Short:  "Renew this control plane's certificates and kubeconfigs before they expire (the node daemon runs it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if validity <= 0 {
				return fmt.Errorf("--validity must be positive")
			}
			r := renewal.New(g.FS(false, s.Out), certDir, alg, validity, renewBefore, timestamped(s.Out))
			return r.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&certDir, config.FlagCertDir, config.DefaultCertificatesDir, "Where certificates are stored (a node path)")
	cmd.Flags().StringVar(&alg, "encryption-algorithm", "RSA-2048", "The key type of renewed certificates (the cluster's encryptionAlgorithm)")
	cmd.Flags().DurationVar(&validity, "validity", 365*24*time.Hour, "The validity of renewed certificates (the cluster's certificateValidityPeriod)")
	cmd.Flags().DurationVar(&renewBefore, "renew-before", renewal.DefaultRenewBefore, "Renew this long before expiry, or after two thirds of the validity when that comes first")
	return cmd
}

func newEtcdSnapshotterCommand(g *GlobalFlags, s Streams) *cobra.Command {
	sch := &etcdbackup.Schedule{}
	var certDir string
	cmd := &cobra.Command{
		Use:    "etcd-snapshotter",
		Short:  "Save etcd snapshots with the cluster's keys on a schedule, keeping the newest (the node daemon runs it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := g.FS(false, s.Out)
			sch.Dir = fs.Path(sch.Dir)
			sch.Logf = timestamped(s.Out)
			sch.Save = func(ctx context.Context, file string) (*etcdbackup.Manifest, error) {
				ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				defer cancel()
				cfg, err := etcdbackup.LocalCluster(ctx, fs)
				if err != nil {
					return nil, fmt.Errorf("reading the cluster's configuration: %w", err)
				}
				// The node's own certificates dir, as its specs name it.
				cfg.Cluster.CertificatesDir = certDir
				return etcdbackup.Save(ctx, fs, cfg, sch.Node, file)
			}
			return sch.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&sch.Node, config.FlagNodeName, "", "This node's name (in the snapshots' names)")
	cmd.Flags().StringVar(&certDir, config.FlagCertDir, config.DefaultCertificatesDir, "Where certificates are stored (a node path)")
	cmd.Flags().DurationVar(&sch.Interval, "interval", config.DefaultEtcdSnapshotInterval, "Time between two snapshots")
	cmd.Flags().IntVar(&sch.Keep, "keep", config.DefaultEtcdSnapshotKeep, "How many snapshots to keep")
	cmd.Flags().StringVar(&sch.Dir, "dir", config.DefaultEtcdSnapshotDir, "Where to write them (a node path)")
	return cmd
}

func addRegistryMirrorFlag(fs *pflag.FlagSet, values *[]string) {
	fs.StringArrayVar(values, "registry-mirror", nil, "REGISTRY=URL[,URL...]: containerd pulls images of REGISTRY (registry.k8s.io, docker.io, 10.0.0.5:5000, or _default for every one) from these mirrors first, in order, so manifests keep their upstream names on an air-gapped site. Repeat for more registries. Written as containerd's hosts.toml under "+node.RegistryHostsDir+", where your own hosts.toml files (private CAs, credentials) can go too")
}
