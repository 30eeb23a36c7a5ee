package cluster

import (
	"context"

	"github.com/kubeboot/kubeboot/internal/apply"
)

// ApplyOptions are what `kubeboot apply -f` takes.
type ApplyOptions = apply.Options

// ApplyResult is what Apply did.
type ApplyResult = apply.Result

// ApplyPlan is what Apply does, decided from every host's state before it
// changes anything (ApplyResult.Plan; a dry run's whole result).
type ApplyPlan = apply.Plan

// ApplyHostStep is what Apply does to one host of the file; ApplyOtherNode
// is a Node of the cluster no host of the file is (pruned or left alone).
type (
	ApplyHostStep  = apply.HostStep
	ApplyOtherNode = apply.OtherNode
	ApplyAction    = apply.Action
)

// The actions of a host's step.
const (
	ApplyNothing          = apply.Nothing
	ApplyInit             = apply.Init
	ApplyJoinControlPlane = apply.JoinControlPlane
	ApplyJoinWorker       = apply.JoinWorker
)

// ResetHostsOptions are what `kubeboot reset -f` takes.
type ResetHostsOptions = apply.ResetHostsOptions

// Apply brings the cluster of the file up, or converges it: it connects
// to every host and checks it (preflight) before it changes any, copies
// kubeboot's binary where it differs, runs init on the first control
// plane, joins the other control planes one at a time and the workers in
// parallel, waits until every node is Ready and writes the admin
// kubeconfig. Hosts already in the cluster are left alone; a host whose
// join failed is reset and joined again by the next Apply. Tokens and
// certificate keys go to the hosts' kubeboot on its standard input:
// none is on a command line, in a file apply writes, or printed (a join
// keeps the token in its bootstrap-kubelet.conf, 0600, until the kubelet
// has its certificate, as kubeadm's does).
//
// Cancelled (ctx), it says which hosts may have changed: those whose
// step had started and had not finished.
func Apply(ctx context.Context, o ApplyOptions) (*ApplyResult, error) {
	return apply.Run(ctx, o)
}

// ResetHosts resets every host of the file that has a node's state,
// workers first (in parallel), then the control planes one at a time, the
// first last; and removes the kubeboot binary Apply copied.
func ResetHosts(ctx context.Context, o ResetHostsOptions) error {
	return apply.ResetHosts(ctx, o)
}
