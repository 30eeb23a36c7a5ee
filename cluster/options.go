package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/runtime/explain"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Node says where a node lives and how its run reports: the options Init,
// Join, Reset and Restore share.
type Node struct {
	// Root is the prefix every path of the node sits under; "" or "/" is
	// the host itself. Several nodes can share a host under distinct roots.
	Root string
	// DryRun writes nothing and starts nothing; the run prints what it
	// would do.
	DryRun bool
	// Explain names, under each phase's log line, every file written and
	// what it is.
	Explain bool
	// Out receives the phases' log lines (kubeadm's); nil discards them.
	Out io.Writer
	// Err receives warnings and what to do after a failure; nil discards
	// them.
	Err io.Writer
	// SkipPhases lists phases to leave out, with their sub-phases
	// ("addon/coredns").
	SkipPhases []string
	// Phase, when set, runs only that phase and its sub-phases, as
	// `kubeboot init phase <name>` does ("certs/apiserver"); the
	// configuration's and SkipPhases' skips do not apply then.
	Phase string
	// PhaseDone, when set, is called after each phase that ran with its
	// path.
	PhaseDone func(path string)
}

func (n *Node) defaults() {
	if n.Out == nil {
		n.Out = io.Discard
	}
	if n.Err == nil {
		n.Err = io.Discard
	}
}

// fs is the node's filesystem as the run sees it: under Root, written
// only for real unless DryRun, and explained when asked.
func (n Node) fs() fsys.FS {
	var fs fsys.FS = fsys.NewRoot(n.Root)
	if n.DryRun {
		fs = fsys.NewDryRun(fsys.NewRoot(n.Root), n.Out)
	}
	if n.Explain {
		fs = &explain.FS{FS: fs, Out: n.Out}
	}
	return fs
}

// Runtime are the settings of the node side Init and Join bring up.
type Runtime struct {
	// Binary is the kubeboot binary the node daemon runs every component
	// from. Default: the `kubeboot` found on PATH.
	Binary string
	// Host is what the configuration's dynamic defaults need (hostname,
	// default-route address); zero detects them.
	Host *config.Host
	// Lifecycle are kubeboot's day-2 settings (renewal, scheduled etcd
	// snapshots); nil means config.DefaultLifecycle().
	Lifecycle *config.Lifecycle
	// RegistryMirrors are `--registry-mirror` values,
	// "REGISTRY=URL[,URL...]", for the containerd kubeboot runs.
	RegistryMirrors []string
	// IgnorePreflightErrors lists checks whose errors become warnings;
	// "all" ignores every check.
	IgnorePreflightErrors []string
}

func (r *Runtime) host() config.Host {
	if r.Host != nil {
		return *r.Host
	}
	return config.DetectHost()
}

func (r *Runtime) lifecycle() (config.Lifecycle, error) {
	l := config.DefaultLifecycle()
	if r.Lifecycle != nil {
		l = *r.Lifecycle
	}
	return l, l.Validate()
}

// ErrNoBinary is returned when no kubeboot binary is given or found.
var ErrNoBinary = errors.New("no kubeboot binary: set Binary, or put kubeboot on PATH (`make build` writes _output/kubeboot)")

// binary finds the kubeboot binary the node daemon runs; a dry run
// starts nothing and needs none.
func (r *Runtime) binary(dryRun bool) (string, error) {
	if r.Binary != "" {
		if _, err := os.Stat(r.Binary); err != nil {
			return "", fmt.Errorf("the kubeboot binary: %w", err)
		}
		return r.Binary, nil
	}
	if p, err := exec.LookPath("kubeboot"); err == nil {
		return p, nil
	}
	if dryRun {
		return "", nil
	}
	return "", ErrNoBinary
}

// mirrors reads RegistryMirrors, refusing them beside a runtime of the
// operator's (criSocket), whose mirrors are theirs to configure.
func (r *Runtime) mirrors(criSocket string) ([]node.Mirror, error) {
	if len(r.RegistryMirrors) == 0 {
		return nil, nil
	}
	if criSocket != node.ManagedCRISocket {
		return nil, fmt.Errorf("--registry-mirror configures the containerd kubeboot carries; the node uses the runtime at %s (--cri-socket): configure its registry mirrors there", criSocket)
	}
	return node.ParseMirrors(r.RegistryMirrors)
}
