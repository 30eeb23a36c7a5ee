package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubeboot/kubeboot/internal/phases/initphases"
	"github.com/kubeboot/kubeboot/internal/workflow"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// initOptions are the flags of `init` and of each `init phase` command.
type initOptions struct {
	cfg                   config.InitFlags
	dryRun                bool
	skipPhases            []string
	ignorePreflightErrors []string
	uploadCerts           bool
}

func (o *initOptions) addFlags(fs *pflag.FlagSet) {
	o.cfg.AddFlags(fs)
	fs.BoolVar(&o.dryRun, "dry-run", false, "Don't apply any changes; just output what would be done")
	fs.StringSliceVar(&o.ignorePreflightErrors, "ignore-preflight-errors", nil, "Pre-flight checks whose errors become warnings, e.g. 'Port-6443,Swap'; 'all' ignores every check")
	fs.BoolVar(&o.uploadCerts, "upload-certs", false, "Upload control-plane certificates to the kubeadm-certs Secret")
}

func newInitCommand(g *GlobalFlags, s Streams) *cobra.Command {
	runner := &workflow.Runner[*initphases.Data]{Phases: initphases.Phases()}
	setup := func(cmd *cobra.Command) func(context.Context) (*initphases.Data, workflow.Options, error) {
		o := &initOptions{}
		o.addFlags(cmd.Flags())
		return func(ctx context.Context) (*initphases.Data, workflow.Options, error) {
			return o.build(g, s, cmd.Flags())
		}
	}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Run this command in order to set up the Kubernetes control plane",
		Long:  "Run this command in order to set up the Kubernetes control plane.\n\n" + runner.Help("init"),
		Args:  cobra.NoArgs,
	}
	build := setup(cmd)
	var skip []string
	cmd.Flags().StringSliceVar(&skip, "skip-phases", nil, "List of phases to be skipped, e.g. 'addon/kube-proxy,upload-certs'")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		d, o, err := build(cmd.Context())
		if err != nil {
			return err
		}
		o.Skip = append(o.Skip, skip...)
		if err := runner.Run(cmd.Context(), d, o); err != nil {
			return err
		}
		if o.DryRun {
			fmt.Fprintln(s.Out, "[dryrun] Finished dry-running successfully. Above are the resources that would be created")
		}
		return nil
	}
	cmd.AddCommand(runner.PhaseCommand(setup))
	return cmd
}

// build loads and validates the configuration before anything is written.
func (o *initOptions) build(g *GlobalFlags, s Streams, fs *pflag.FlagSet) (*initphases.Data, workflow.Options, error) {
	c, err := config.LoadInit(&o.cfg, fs, config.DetectHost())
	if err != nil {
		return nil, workflow.Options{}, err
	}
	d := initphases.NewData(c, g.FS(o.dryRun, s.Out), s.Out)
	return d, workflow.Options{DryRun: o.dryRun, Skip: c.Init.SkipPhases, Out: s.Out}, nil
}
