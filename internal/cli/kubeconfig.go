package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/host/node"
)

func newKubeconfigCommand(g *GlobalFlags, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Kubeconfig file utilities",
		Args:  cobra.NoArgs,
	}
	o := &clusterOptions{prefix: "kubeconfig", quiet: true}
	var clientName string
	var orgs []string
	var validity time.Duration
	user := &cobra.Command{
		Use:   "user",
		Short: "Output a kubeconfig file for an additional user",
		Long: `Output a kubeconfig file for an additional user, with a client certificate
signed by the cluster CA. The server URL is the control-plane endpoint of
--config, or else the one in this node's admin.conf.`,
		Example: `  # Output a kubeconfig file for an additional user named foo in group bar
  kubeboot kubeconfig user --client-name=foo --org=bar`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if clientName == "" {
				return fmt.Errorf("--client-name is required")
			}
			gen, kw, err := o.writers(g, s)
			if err != nil {
				return err
			}
			if validity > 0 {
				gen.Cfg.Cluster.CertificateValidityPeriod = &metav1.Duration{Duration: validity}
			}
			server := kubeconfig.ServerURL(gen.Cfg)
			if o.configFile == "" {
				_, cl, _, err := kw.Load(node.AdminKubeconfig)
				if err != nil {
					return fmt.Errorf("no --config given and %w", err)
				}
				server = cl.Server
			}
			ca, err := gen.CA("ca")
			if err != nil {
				return err
			}
			kp, err := gen.NewClientKeyPair("ca", clientName, orgs)
			if err != nil {
				return err
			}
			kc, err := kubeconfig.Build(server, gen.Cfg.Cluster.ClusterName, ca.Cert, clientName, kp)
			if err != nil {
				return err
			}
			b, err := clientcmd.Write(*kc)
			if err != nil {
				return err
			}
			_, err = s.Out.Write(b)
			return err
		},
	}
	o.addFlags(user)
	user.Flags().StringVar(&clientName, "client-name", "", "The name of user. It will be used as the CN if client certificates are created")
	user.Flags().StringSliceVar(&orgs, "org", nil, "The organizations of the client certificate. It will be used as the O if client certificates are created")
	user.Flags().DurationVar(&validity, "validity-period", 0, "The validity period of the client certificate (default: the configured certificate validity)")
	cmd.AddCommand(user)
	return cmd
}
