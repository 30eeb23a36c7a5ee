package cluster

import (
	"context"
	"io"

	"github.com/kubeboot/kubeboot/internal/phases/resetphases"
	"github.com/kubeboot/kubeboot/internal/phases/workflow"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/internal/runtime/explain"
)

// ResetOptions are what `kubeboot reset` takes.
type ResetOptions struct {
	Node
	// Force resets without asking. Otherwise reset asks on Confirm, which
	// must be a terminal, and goes on only when the answer is yes.
	Force   bool
	Confirm io.Reader
	// CertDir is a certificates directory outside /etc/kubernetes to
	// remove as well.
	CertDir string
}

// Reset stops the node daemon and every component it runs, takes the node
// out of its cluster (its etcd member, a worker's Node object) and removes
// everything kubeboot made on it, as `kubeboot reset` does. Running it
// again is a no-op.
func Reset(ctx context.Context, o ResetOptions) error {
	o.Node.defaults()
	out := o.Out
	if o.Explain {
		out = explain.Reset(o.Out, o.Node.withoutExplain().fs().Path("/"))
	}
	n := o.Node.withoutExplain()
	n.Out = out
	fs := n.fs()
	d := &resetphases.Data{FS: fs, In: o.Confirm, Out: out, Err: o.Err, Force: o.Force, CertDir: o.CertDir,
		StopDaemon: func(ctx context.Context) error { return daemon.StopAndReport(ctx, n.withoutDryRun().fs(), o.Out) }}
	runner := &workflow.Runner[*resetphases.Data]{Phases: resetphases.Phases()}
	return runner.Run(ctx, d, n.workflow(nil))
}

// withoutExplain is n with Explain off: reset explains what it removes,
// not what it writes.
func (n Node) withoutExplain() Node { n.Explain = false; return n }

// withoutDryRun is n for real.
func (n Node) withoutDryRun() Node { n.DryRun = false; return n }
