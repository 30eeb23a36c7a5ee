package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/pkg/carotation"
	"github.com/kubeboot/kubeboot/pkg/component"
	"github.com/kubeboot/kubeboot/pkg/config"
	"github.com/kubeboot/kubeboot/pkg/daemon"
	"github.com/kubeboot/kubeboot/pkg/fsys"
	"github.com/kubeboot/kubeboot/pkg/kubeconfig"
	"github.com/kubeboot/kubeboot/pkg/renewal"
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
				d.Kubeconfig = fsys.NewRoot(g.Root).Path(kubeconfig.AdminPath)
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
			d.SigningCert = func(ctx context.Context, certFile string) error { return signingCert(ctx, gen.FS, certFile) }
			return d.Run(cmd.Context())
		},
	}
	o.addFlags(cmd)
	cmd.Flags().DurationVar(&d.TrustPeriod, "trust-period", carotation.DefaultTrustPeriod, "How long every node trusts both CAs before the new one signs: at least the time your clients take to reload their CA file (client-go: 5 minutes)")
	cmd.Flags().DurationVar(&d.NodeTimeout, "node-timeout", 10*time.Minute, "How long to wait for every node to reach each step")
	return cmd
}

// signingCert points the controller-manager's spec at another signing
// certificate, and waits until the daemon runs it with it.
func signingCert(ctx context.Context, fs fsys.FS, certFile string) error {
	specs, err := (component.Store{FS: fs}).Load()
	if err != nil {
		return err
	}
	const flag = "--cluster-signing-cert-file="
	for _, sp := range specs {
		if sp.Name != component.ControllerManager {
			continue
		}
		i := slices.IndexFunc(sp.Args, func(a string) bool { return strings.HasPrefix(a, flag) })
		if i < 0 {
			return fmt.Errorf("the %s spec has no %s flag", sp.Name, strings.TrimSuffix(flag, "="))
		}
		if sp.Args[i] == flag+fs.Path(certFile) {
			return nil
		}
		sp.Args = slices.Clone(sp.Args)
		sp.Args[i] = flag + fs.Path(certFile)
		return daemon.ReplaceSpec(ctx, fs, sp, 2*time.Minute)
	}
	return fmt.Errorf("no %s spec on this node: run rotate-ca on the control plane", component.ControllerManager)
}

func newCAAgentCommand(g *GlobalFlags, s Streams) *cobra.Command {
	a := &carotation.Agent{}
	var alg string
	var validity time.Duration
	cmd := &cobra.Command{
		Use:    "ca-agent",
		Short:  "Follow rotations of the cluster CA on this node (the node daemon runs it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.Node == "" {
				return fmt.Errorf("--node-name is required")
			}
			if validity <= 0 {
				return fmt.Errorf("--validity must be positive")
			}
			a.FS = g.FS(false, s.Out)
			a.Logf = timestamped(s.Out)
			// On a control plane: its CA files and the certificates the CA
			// signs, re-issued as the cert-renewer does.
			gen, kw := renewal.Writers(a.FS, a.CertDir, alg, validity)
			a.CP = &carotation.ControlPlane{Gen: gen, KW: kw, Logf: a.Logf,
				SigningCert: func(ctx context.Context, certFile string) error { return signingCert(ctx, a.FS, certFile) }}
			return a.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&a.Node, config.FlagNodeName, "", "This node's name")
	cmd.Flags().StringVar(&a.CertDir, config.FlagCertDir, config.DefaultCertificatesDir, "Where certificates are stored (a node path)")
	cmd.Flags().StringVar(&alg, "encryption-algorithm", "RSA-2048", "The key type of re-issued certificates on a control plane (the cluster's encryptionAlgorithm)")
	cmd.Flags().DurationVar(&validity, "validity", 365*24*time.Hour, "The validity of re-issued certificates on a control plane (the cluster's certificateValidityPeriod)")
	return cmd
}
