package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/carotation"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/runtime/service"
)

func newRotateCACommand(g *GlobalFlags, s Streams) *cobra.Command {
	o := &clusterOptions{prefix: "certs/rotate-ca"}
	d := &carotation.Driver{}
	cmd := &cobra.Command{
		Use:   "rotate-ca",
		Short: "Rotate the cluster CA on every node, without API downtime",
		Long: `Replace the cluster CA (ca.crt and ca.key, which sign the API server's serving
certificate, every client certificate and the kubelets' certificates) on every node
of the cluster, while the API keeps serving. Run it on the control plane. Three steps,
each reached by every node before the next (the kubeboot daemon of each node applies
them, and the command waits for all):

  trust   a new CA is made; every node trusts the old and the new one (ca.crt, the CA
          of every kubeconfig, cluster-info, the pods' kube-root-ca.crt). Both stay
          trusted for --trust-period, so that clients which reload their CA file
          (client-go does every 5 minutes) catch up.
  switch  the new CA signs: every certificate and kubeconfig of the control plane is
          re-issued, each kubelet gets new client and serving certificates.
  drop    the old CA is trusted no more, anywhere.

With several control planes, run it on any one: it seals the new CA key for the
others (kube-system/kubeboot-ca-rotation, encrypted under a key derived from the
current CA key, readable by the control-plane nodes only while the rotation runs),
and each one's daemon switches its own CA files and re-issues its own certificates.

Service-account tokens stay valid (sa.key signs them, and is kept). The etcd and
front-proxy CAs are not rotated. Kubeconfig files copied off the cluster before the
switch trust only the old CA: replace them with new copies (admin.conf) afterwards.
If the command stops half-way, run it again: it continues where it stopped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if d.TrustPeriod < 0 || d.NodeTimeout <= 0 {
				return fmt.Errorf("--trust-period must not be negative and --node-timeout must be positive")
			}
			d.Kubeconfig = o.kubeconfig
			if d.Kubeconfig == "" {
				d.Kubeconfig = fsys.NewRoot(g.Root).Path(node.AdminKubeconfig)
			}
			if _, err := os.Stat(d.Kubeconfig); err != nil {
				return fmt.Errorf("rotate-ca runs on the control plane, with the API: %w", err)
			}
			gen, kw, err := o.writers(g, s)
			if err != nil {
				return err
			}
			d.Gen, d.KW = gen, kw
			d.Logf = func(format string, args ...any) { fmt.Fprintf(s.Out, format+"\n", args...) }
			d.SigningCert = func(ctx context.Context, certFile string) error { return service.SigningCert(ctx, gen.FS, certFile) }
			return d.Run(cmd.Context())
		},
	}
	o.addFlags(cmd)
	cmd.Flags().DurationVar(&d.TrustPeriod, "trust-period", carotation.DefaultTrustPeriod, "How long every node trusts both CAs before the new one signs: at least the time your clients take to reload their CA file (client-go: 5 minutes)")
	cmd.Flags().DurationVar(&d.NodeTimeout, "node-timeout", 10*time.Minute, "How long to wait for every node to reach each step")
	return cmd
}
