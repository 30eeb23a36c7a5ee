package benchutil

import (
	"testing"
	"time"
)

// The add-ons' CPU between two readings: theirs only, a process new in
// the second reading from zero.
func TestCPUInAddOns(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	before := map[int]ProcCPU{
		1: {Name: "kube-router", Self: ms(100), Children: ms(200)},
		2: {Name: "kube-apiserver", Self: ms(1000)},
		3: {Name: "flannel", Self: ms(50)},
	}
	after := map[int]ProcCPU{
		1: {Name: "kube-router", Self: ms(130), Children: ms(260)},
		2: {Name: "kube-apiserver", Self: ms(3000)},
		3: {Name: "flannel", Self: ms(55)},
		4: {Name: "metrics-server", Self: ms(7), Children: ms(1)},
		5: {Name: "test-server", Self: ms(40)},
	}
	if got, want := CPUIn(before, after, AddOn), ms(30+60+5+8); got != want {
		t.Fatalf("add-ons' CPU %s, want %s", got, want)
	}
}

// An add-on is neither one of Kubernetes' components nor the runtime's:
// the like-for-like figures leave out only what a kubeadm node lacks.
func TestAddOnIsNotUpstreamNorRuntime(t *testing.T) {
	for _, name := range []string{"kube-apiserver", "kubelet", "kube-proxy", "coredns", "etcd", "containerd", "containerd-shim-runc-v2", "pause", "test-server", "kubeboot daemon"} {
		if AddOn(name) {
			t.Errorf("%s counted as an add-on", name)
		}
	}
	for _, name := range []string{"flannel", "kube-router", "metrics-server", "local-path-provisioner", "local-path-helper"} {
		if !AddOn(name) || upstreamComponent(name) || runtimeProcess(name) {
			t.Errorf("%s: add-on %v, upstream %v, runtime %v", name, AddOn(name), upstreamComponent(name), runtimeProcess(name))
		}
	}
}
