package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubeboot/kubeboot/cluster"
	"github.com/kubeboot/kubeboot/internal/phases/joinphases"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// joinOptions are the flags of `join` and of each `join phase` command.
type joinOptions struct {
	cfg                   config.JoinFlags
	dryRun                bool
	explain               bool
	ignorePreflightErrors []string
	lifecycle             config.Lifecycle
	registryMirrors       []string
	nodeChecksOnly        bool
}

func (o *joinOptions) addFlags(fs *pflag.FlagSet) {
	addJoinConfigFlags(fs, &o.cfg)
	addLifecycleFlags(fs, &o.lifecycle)
	addRegistryMirrorFlag(fs, &o.registryMirrors)
	fs.BoolVar(&o.dryRun, "dry-run", false, "Don't apply any changes; just output what would be done (discovery still reads from the cluster)")
	fs.StringSliceVar(&o.ignorePreflightErrors, "ignore-preflight-errors", nil, "Pre-flight checks whose errors become warnings, e.g. 'Port-10250'; 'all' ignores every check")
	fs.BoolVar(&o.nodeChecksOnly, "node-checks-only", false, "Run only this node's pre-flight checks, without asking the cluster (which may not exist yet), and change nothing: what 'kubeboot apply' runs on every host before it changes any")
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
	cmd := &cobra.Command{
		Use:   "join [api-server-endpoint]",
		Short: "Run this on any machine you wish to join an existing cluster",
		Long:  joinLong,
		Example: `  # Join a worker, as printed by 'kubeboot init' or 'kubeboot token create --print-join-command':
  kubeboot join 10.0.0.1:6443 --token abcdef.0123456789abcdef \
      --discovery-token-ca-cert-hash sha256:1234...cdef

  # Join with a JoinConfiguration file (kubeadm v1beta4):
  kubeboot join --config join.yaml`,
	}
	runner := &workflow.Runner[*joinphases.Data]{Phases: joinphases.Phases(), Args: cobra.MaximumNArgs(1)}
	runner.BindToCommand(cmd, func(cmd *cobra.Command) func(context.Context, []string, workflow.Selection) error {
		o := &joinOptions{}
		o.addFlags(cmd.Flags())
		return func(ctx context.Context, args []string, sel workflow.Selection) error {
			opts, err := o.options(g, s, cmd.Flags(), args)
			if err != nil {
				return err
			}
			opts.Phase, opts.SkipPhases = sel.Only, sel.Skip
			res, err := cluster.Join(ctx, opts)
			if err != nil || res == nil {
				return err
			}
			fmt.Fprint(s.Out, `
This node has joined the cluster:
* Certificate signing request was sent to apiserver and a response was received.
* The Kubelet was informed of the new secure connection details.

Run 'kubectl get nodes' on the control-plane to see this node join the cluster.
`)
			return nil
		}
	})
	return cmd
}

// options maps the flags onto the lifecycle API's.
func (o *joinOptions) options(g *GlobalFlags, s Streams, fs *pflag.FlagSet, args []string) (cluster.JoinOptions, error) {
	c, err := config.LoadJoin(&o.cfg, given(fs), args, config.DetectHost())
	if err != nil {
		return cluster.JoinOptions{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return cluster.JoinOptions{}, err
	}
	return cluster.JoinOptions{
		Node:           cluster.Node{Root: g.Root, DryRun: o.dryRun, Explain: o.explain, Out: s.Out, Err: s.Err},
		Runtime:        cluster.Runtime{Binary: exe, Lifecycle: &o.lifecycle, RegistryMirrors: o.registryMirrors, IgnorePreflightErrors: o.ignorePreflightErrors},
		Config:         c,
		NodeChecksOnly: o.nodeChecksOnly,
	}, nil
}
