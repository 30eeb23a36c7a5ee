package daemon

import (
	"sync"
	"time"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/cpugroup"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/supervisor"
)

// bringUpLimit bounds the low weight of the node side: past it, a control
// plane that never got ready no longer holds the node back.
const bringUpLimit = 2 * time.Minute

// bringUp places components in their CPU groups and keeps the node side at
// a low weight while this node's API server comes up (see package
// cpugroup). Without cgroups it does nothing.
type bringUp struct {
	groups *cpugroup.Groups
	logf   func(string, ...any)
	start  time.Time

	mu   sync.Mutex
	done bool
}

func newBringUp(fs fsys.FS, logf func(string, ...any)) *bringUp {
	b := &bringUp{logf: logf, start: time.Now()}
	g, err := cpugroup.Open(fs.Path("/"))
	if err != nil {
		logf("CPU groups are not used: %v", err)
		b.done = true
		return b
	}
	b.groups = g
	if err := g.SetWeight(cpugroup.ControlPlane, cpugroup.Normal); err != nil {
		logf("setting the control plane's CPU weight: %v", err)
	}
	if err := g.SetWeight(cpugroup.Node, cpugroup.Low); err != nil {
		logf("setting the node side's CPU weight: %v", err)
	}
	return b
}

func group(spec component.Spec) string {
	role := spec.Role
	if role == "" { // a spec written before specs carried their role
		role = component.RoleOf(spec.Name)
	}
	if role == component.RoleControlPlane {
		return cpugroup.ControlPlane
	}
	return cpugroup.Node
}

// place puts a started component in its group.
func (b *bringUp) place(spec component.Spec, pid int) {
	if b.groups == nil {
		return
	}
	if err := b.groups.Add(group(spec), pid); err != nil {
		b.logf("placing %s (pid %d) in its CPU group: %v", spec.Name, pid, err)
	}
}

// specs ends the bring-up on a node whose specs run a kubelet but no API
// server: a worker has nothing to wait for.
func (b *bringUp) specs(specs []component.Spec) {
	api, kubelet := false, false
	for _, s := range specs {
		api = api || s.Name == component.APIServer
		kubelet = kubelet || s.Name == component.Kubelet
	}
	if kubelet && !api {
		b.finish("no API server runs here")
	}
}

// check ends the bring-up once the API server is ready, or past its limit.
func (b *bringUp) check(st []supervisor.Status) {
	for _, s := range st {
		if s.Name == component.APIServer && s.Ready {
			b.finish("kube-apiserver is ready")
			return
		}
	}
	if time.Since(b.start) > bringUpLimit {
		b.finish("kube-apiserver was not ready within " + bringUpLimit.String())
	}
}

func (b *bringUp) finish(why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if err := b.groups.SetWeight(cpugroup.Node, cpugroup.Normal); err != nil {
		b.logf("setting the node side's CPU weight: %v", err)
		return
	}
	b.logf("%s: the node side gets its full CPU weight", why)
}
