package cluster

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kubeboot/kubeboot/internal/phases/upgradephases"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
	"github.com/kubeboot/kubeboot/internal/runtime/upgrade"
)

// UpgradeOptions are what `kubeboot upgrade apply|node|plan` take.
type UpgradeOptions struct {
	Node
	// Binary is the kubeboot binary to upgrade to (required): its
	// components replace this node's.
	Binary string
	// Apply is `upgrade apply`, for the cluster's first control plane:
	// kubeadm's skew policy is checked against the whole cluster and etcd
	// is saved first. Otherwise `upgrade node`, for every other node.
	Apply bool
	// Force goes on despite the skew errors that can be skipped
	// (kubeadm's --force).
	Force bool
	// Yes upgrades without asking; otherwise Apply asks on Confirm and
	// goes on only when the answer is yes.
	Yes     bool
	Confirm io.Reader
	// Timeout is how long each component gets to be ready again; 0 is 5
	// minutes.
	Timeout time.Duration
}

// UpgradeResult is what an upgrade changed on the node.
type UpgradeResult struct {
	// From and To are the Kubernetes versions, "v1.37.2".
	From, To string
	// Binary is where the new binary was installed under the root.
	Binary string
	// Snapshot is the etcd snapshot Apply saved first, if any.
	Snapshot string
}

// Upgrade replaces the node's components with those of another kubeboot
// binary, one at a time, each once the one before is ready again, as
// `kubeboot upgrade apply` (Apply) or `kubeboot upgrade node` does. A run
// of one phase returns a nil result. `kubeboot upgrade rollback` puts
// back what it replaced.
func Upgrade(ctx context.Context, o UpgradeOptions) (*UpgradeResult, error) {
	o.Node.defaults()
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	phases := upgradephases.NodePhases()
	if o.Apply {
		phases = upgradephases.ApplyPhases()
	}
	if o.DryRun {
		return nil, fmt.Errorf("an upgrade has no dry run: `kubeboot upgrade plan` shows what it would change")
	}
	runner := &workflow.Runner[*upgradephases.Data]{Phases: phases}
	d := &upgradephases.Data{FS: o.withoutExplain().fs(), In: o.Confirm, Out: o.Out, Err: o.Err,
		Binary: o.Binary, Apply: o.Apply, Force: o.Force, Yes: o.Yes, Timeout: o.Timeout}
	if err := runner.Run(ctx, d, o.workflow(nil)); err != nil {
		return nil, err
	}
	if o.Phase != "" {
		return nil, nil
	}
	t, _ := d.Target(ctx)
	if o.Apply {
		fmt.Fprintf(o.Out, "[upgrade/successful] SUCCESS! This control plane runs v%s. Upgrade the other control planes, then the workers, with `kubeboot upgrade node --binary <kubeboot v%s>`.\n", t.Version, t.Version)
	} else {
		fmt.Fprintf(o.Out, "[upgrade] The node runs v%s.\n", t.Version)
	}
	return &UpgradeResult{From: d.State.From, To: d.State.To, Binary: d.State.Binary, Snapshot: d.State.Snapshot}, nil
}

// UpgradePlan is what an upgrade of the node would do, and whether the
// version-skew policy allows it.
type UpgradePlan struct {
	// APIServer is the version the cluster's API server runs, Target the
	// binary's.
	APIServer, Target string
	// Binary is the binary's absolute path.
	Binary string
	// ControlPlane is set when the node runs an API server: `upgrade
	// apply` upgrades it (the first control plane), `upgrade node` any
	// other.
	ControlPlane bool
	// Components are what the upgrade replaces, with their versions.
	Components []upgrade.ComponentVersion
	// Problems are the policy's errors ("[ERROR] ...") and the errors
	// --force skips ("[WARNING, --force skips it] ..."); none when the
	// upgrade is allowed.
	Problems []string
}

// PlanUpgrade checks, without changing anything, whether the node can
// upgrade to o.Binary, and lists what would change (`kubeboot upgrade
// plan`).
func PlanUpgrade(ctx context.Context, o UpgradeOptions) (*UpgradePlan, error) {
	o.Node.defaults()
	fs := o.withoutExplain().withoutDryRun().fs()
	t, err := upgrade.Prepare(ctx, fs, o.Binary)
	if err != nil {
		return nil, err
	}
	p := &UpgradePlan{APIServer: "v" + t.APIServer.String(), Target: "v" + t.Version.String(), Binary: t.Binary, ControlPlane: t.ControlPlane}
	m, sk, err := t.Policy(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range m {
		p.Problems = append(p.Problems, "[ERROR] "+e.Error())
	}
	for _, e := range sk {
		p.Problems = append(p.Problems, "[WARNING, --force skips it] "+e.Error())
	}
	if p.Components, err = t.Versions(ctx, fs); err != nil {
		return nil, err
	}
	return p, nil
}
