package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc/grpclog"

	"github.com/kubeboot/kubeboot/internal/phases/joinphases"
	"github.com/kubeboot/kubeboot/internal/workflow"
	"github.com/kubeboot/kubeboot/pkg/config"
	"github.com/kubeboot/kubeboot/pkg/daemon"
)

// joinOptions are the flags of `join` and of each `join phase` command.
type joinOptions struct {
	cfg                   config.JoinFlags
	dryRun                bool
	explain               bool
	ignorePreflightErrors []string
	lifecycle             config.Lifecycle
	registryMirrors       []string
}

func (o *joinOptions) addFlags(fs *pflag.FlagSet) {
	o.cfg.AddFlags(fs)
	o.lifecycle.AddFlags(fs)
	addRegistryMirrorFlag(fs, &o.registryMirrors)
	fs.BoolVar(&o.dryRun, "dry-run", false, "Don't apply any changes; just output what would be done (discovery still reads from the cluster)")
	fs.StringSliceVar(&o.ignorePreflightErrors, "ignore-preflight-errors", nil, "Pre-flight checks whose errors become warnings, e.g. 'Port-10250'; 'all' ignores every check")
	fs.BoolVar(&o.explain, "explain", false, "Under each phase's log line, name every file written, its mode and what it is: a certificate's identity and issuer, a kubeconfig's user and server, a component's ports")
}

const joinLong = `Run this on any machine you wish to join an existing cluster.

When joining a kubeboot- or kubeadm-made cluster, the node and the control
plane verify each other, as kubeadm's join does:

  * The node reads the cluster-info ConfigMap from the API server endpoint
    given as the argument, checks its signature with the bootstrap token
    (--token) and the cluster CA against its public-key pin
    (--discovery-token-ca-cert-hash), then reads it again over TLS trusting
    only that CA. Or it trusts a kubeconfig file given with --discovery-file.
  * The control plane admits the node through the bootstrap token: the
    kubelet asks for its client certificate (TLS bootstrap) and the
    controller-manager approves it.

The node then runs containerd, the kubelet, kube-proxy and kubeboot's network
agent under its node daemon, and talks to the cluster through the endpoint
it was given (not the one cluster-info names). Every refusal says which check
failed and what to do.

`

func newJoinCommand(g *GlobalFlags, s Streams) *cobra.Command {
	runner := &workflow.Runner[*joinphases.Data]{Phases: joinphases.Phases(), Args: cobra.MaximumNArgs(1)}
	setup := func(cmd *cobra.Command) func(context.Context, []string) (*joinphases.Data, workflow.Options, error) {
		o := &joinOptions{}
		o.addFlags(cmd.Flags())
		return func(ctx context.Context, args []string) (*joinphases.Data, workflow.Options, error) {
			return o.build(g, s, cmd.Flags(), args)
		}
	}
	cmd := &cobra.Command{
		Use:   "join [api-server-endpoint]",
		Short: "Run this on any machine you wish to join an existing cluster",
		Long:  joinLong + runner.Help("join"),
		Example: `  # Join a worker, as printed by 'kubeboot init' or 'kubeboot token create --print-join-command':
  kubeboot join 10.0.0.1:6443 --token abcdef.0123456789abcdef \
      --discovery-token-ca-cert-hash sha256:1234...cdef

  # Join with a JoinConfiguration file (kubeadm v1beta4):
  kubeboot join --config join.yaml`,
		Args: cobra.MaximumNArgs(1),
	}
	build := setup(cmd)
	var skip []string
	cmd.Flags().StringSliceVar(&skip, "skip-phases", nil, "List of phases to be skipped")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		// A control-plane join dials its etcd member before it serves,
		// and says itself what it waits for: gRPC's warnings about each
		// refused dial are noise there. Its errors still show.
		grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, s.Err))
		d, o, err := build(cmd.Context(), args)
		if err != nil {
			return err
		}
		o.Skip = append(o.Skip, skip...)
		if err := runner.Validate(o); err != nil {
			return err
		}
		err = runner.Run(cmd.Context(), d, o)
		if err != nil && d.StartedDaemon && cmd.Context().Err() != nil {
			fmt.Fprintln(s.Err, "[join] Interrupted: stopping the kubeboot daemon this run started")
			stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if serr := daemon.Stop(stopCtx, d.FS, time.Minute, nil); serr != nil {
				err = errors.Join(err, serr)
			}
		}
		if err != nil {
			if d.StartedDaemon && cmd.Context().Err() == nil {
				fmt.Fprintf(s.Err, "[join] The node daemon keeps running for inspection (`kubeboot status`, logs in %s); `kubeboot reset` removes everything\n", d.FS.Path(daemon.LogDir))
			}
			return err
		}
		if o.DryRun {
			fmt.Fprintln(s.Out, "[dryrun] Finished dry-running successfully. Above are the resources that would be created")
			return nil
		}
		fmt.Fprint(s.Out, `
This node has joined the cluster:
* Certificate signing request was sent to apiserver and a response was received.
* The Kubelet was informed of the new secure connection details.

Run 'kubectl get nodes' on the control-plane to see this node join the cluster.
`)
		return nil
	}
	cmd.AddCommand(runner.PhaseCommand(setup))
	return cmd
}

// build loads and validates the configuration before anything is written.
func (o *joinOptions) build(g *GlobalFlags, s Streams, fs *pflag.FlagSet, args []string) (*joinphases.Data, workflow.Options, error) {
	host := config.DetectHost()
	c, err := config.LoadJoin(&o.cfg, fs, args, host)
	if err != nil {
		return nil, workflow.Options{}, err
	}
	if err := o.lifecycle.Validate(); err != nil {
		return nil, workflow.Options{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, workflow.Options{}, err
	}
	d := joinphases.NewData(c.Join, host, explainFS(g.FS(o.dryRun, s.Out), o.explain, s), s.Out)
	d.Exe = exe
	d.IgnorePreflightErrors = o.ignorePreflightErrors
	// A control plane's renewal and snapshots (a worker has neither).
	d.Cfg.Lifecycle = o.lifecycle
	if d.Mirrors, err = registryMirrors(o.registryMirrors, c.Join.NodeRegistration.CRISocket); err != nil {
		return nil, workflow.Options{}, err
	}
	return d, workflow.Options{DryRun: o.dryRun, Skip: c.Join.SkipPhases, Out: s.Out}, nil
}
