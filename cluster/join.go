package cluster

import (
	"context"
	"fmt"
	"path"

	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/phases/joinphases"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// JoinCommand is what a node needs to join a cluster with a bootstrap
// token: what `kubeboot join` takes, as data (its String is the command
// line, its Config the JoinConfiguration Join takes).
type JoinCommand = bootstrap.JoinCommand

// JoinOptions are what `kubeboot join` takes.
type JoinOptions struct {
	Node
	Runtime
	// Config holds the JoinConfiguration (and nothing else), as `--config`
	// reads it or JoinCommand.Config makes it. Join applies kubeadm's
	// defaults and validates it before anything is written.
	Config *config.Config
	// NodeChecksOnly runs the preflight phase alone, with this node's
	// checks only: no discovery, so that it works before the cluster
	// exists (Apply checks every host before it changes any). Its
	// discovery settings are validated but not used.
	NodeChecksOnly bool
}

// JoinResult is what a caller needs once the node has joined.
type JoinResult struct {
	// NodeName is the node's name.
	NodeName string
	// ControlPlane is set when the node joined as a control plane.
	ControlPlane bool
	// Kubeconfig is the host path of the kubelet's kubeconfig; a control
	// plane's AdminKubeconfig that of admin.conf.
	Kubeconfig, AdminKubeconfig string
}

// Join makes the node a node of an existing cluster, as `kubeboot join`
// does: a worker, or a control plane with Config's controlPlane section.
// A dry run, or a run of one phase, returns a nil result. On failure and
// on cancellation it behaves as Init.
func Join(ctx context.Context, o JoinOptions) (*JoinResult, error) {
	o.Node.defaults()
	if o.Config == nil || o.Config.Join == nil {
		return nil, fmt.Errorf("no JoinConfiguration: Join needs one (JoinCommand.Config makes one)")
	}
	host := o.host()
	c := o.Config
	c.DefaultJoin(host)
	if err := c.ValidateKinds(config.KindJoin); err != nil {
		return nil, err
	}
	lc, err := o.lifecycle()
	if err != nil {
		return nil, err
	}
	d := joinphases.NewData(c.Join, host, o.fs(), o.Out)
	if d.Exe, err = o.binary(o.DryRun); err != nil {
		return nil, err
	}
	d.IgnorePreflightErrors = o.IgnorePreflightErrors
	// A control plane's renewal and snapshots (a worker has neither).
	d.Cfg.Lifecycle = lc
	if d.Mirrors, err = o.mirrors(c.Join.NodeRegistration.CRISocket); err != nil {
		return nil, err
	}
	if o.NodeChecksOnly {
		if o.Phase != "" && o.Phase != "preflight" {
			return nil, fmt.Errorf("node checks only run the preflight phase, not %q", o.Phase)
		}
		o.Phase, d.NodeChecksOnly = "preflight", true
	}
	runner := &workflow.Runner[*joinphases.Data]{Phases: joinphases.Phases()}
	wo := o.workflow(c.Join.SkipPhases)
	if err := runner.Validate(wo); err != nil {
		return nil, err
	}
	if err := runNode(ctx, "join", runner, d, wo, o.Node); err != nil {
		return nil, err
	}
	if o.Phase != "" || o.DryRun {
		if o.DryRun && o.Phase == "" {
			fmt.Fprintln(o.Out, "[dryrun] Finished dry-running successfully. Above are the resources that would be created")
		}
		return nil, nil
	}
	res := &JoinResult{
		NodeName:     c.Join.NodeRegistration.Name,
		ControlPlane: c.Join.ControlPlane != nil,
		Kubeconfig:   d.FS.Path(path.Join(node.KubernetesDir, "kubelet.conf")),
	}
	if res.ControlPlane {
		res.AdminKubeconfig = d.FS.Path(node.AdminKubeconfig)
	}
	return res, nil
}
