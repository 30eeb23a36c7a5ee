package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/internal/host/hardening"
	"github.com/kubeboot/kubeboot/pkg/config"
)

func newConfigCommand(_ *GlobalFlags, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print and validate kubeadm v1beta4 configuration files",
		Long: `kubeboot reads kubeadm's v1beta4 configuration: InitConfiguration,
ClusterConfiguration, JoinConfiguration and ResetConfiguration, plus
KubeletConfiguration and KubeProxyConfiguration passed through to the
components, as documents of one YAML file separated by "---".`,
		Args: cobra.NoArgs,
	}
	var hardened bool
	initDefaults := &cobra.Command{
		Use:   "init-defaults",
		Short: "Print the default init configuration, a file that can be used for 'kubeboot init'",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := config.InitDefaults()
			if err != nil {
				return err
			}
			if hardened {
				hardening.Apply(c)
			}
			return printConfig(s, c)
		},
	}
	initDefaults.Flags().BoolVar(&hardened, "hardened", false, "With the settings `kubeboot init --hardened` adds")
	print := &cobra.Command{Use: "print", Short: "Print configuration", Args: cobra.NoArgs}
	print.AddCommand(
		initDefaults,
		&cobra.Command{
			Use:   "join-defaults",
			Short: "Print the default join configuration, a file that can be used for 'kubeboot join'",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return printConfig(s, config.JoinDefaults()) },
		},
		&cobra.Command{
			Use:   "reset-defaults",
			Short: "Print the default reset configuration, a file that can be used for 'kubeboot reset'",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return printConfig(s, config.ResetDefaults()) },
		},
	)
	var file string
	validate := &cobra.Command{
		Use:   "validate",
		Short: "Read a configuration file and report every problem it has",
		Long: `Read a configuration file, apply defaults and check every rule kubeboot
enforces. Errors name the document, the field path and the rule; the exit
code is non-zero when the file is invalid.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if file == "" {
				return fmt.Errorf("--config is required")
			}
			c, err := config.ReadFile(file)
			if err != nil {
				return err
			}
			h := config.DetectHost()
			if c.Init != nil || c.Cluster != nil {
				if err := c.DefaultInit(h); err != nil {
					return err
				}
			}
			if c.Join != nil {
				c.DefaultJoin(h)
			}
			if c.Reset != nil {
				c.DefaultReset()
			}
			if err := c.Validate(); err != nil {
				return err
			}
			fmt.Fprintln(s.Out, "ok")
			return nil
		},
	}
	validate.Flags().StringVar(&file, config.FlagConfig, "", "Path to the configuration file")
	cmd.AddCommand(print, validate)
	return cmd
}

func printConfig(s Streams, c *config.Config) error {
	b, err := c.Marshal()
	if err != nil {
		return err
	}
	_, err = s.Out.Write(b)
	return err
}
