// Package version holds the versions kubeboot is built with. The variables
// are set at build time with -ldflags -X; the defaults name the pinned
// upstream versions so that a plain `go build` still reports them.
package version

import "runtime"

// Kubernetes is the one Kubernetes version whose components kubeboot embeds
// and whose control plane it brings up.
var Kubernetes = "v1.37.2"

// Etcd is the version of the embedded etcd server.
var Etcd = "3.7.0"

// Containerd is the version of the embedded containerd (without its "v").
var Containerd = "2.4.2"

// Kubeboot is kubeboot's own version ("dev" for an unreleased build).
var Kubeboot = "dev"

// GitCommit is the commit kubeboot was built from, when known.
var GitCommit = ""

// Info is what `kubeboot version -o json` prints: the versions a binary
// carries, for programs (an upgrade reads the new binary's) rather than
// people.
type Info struct {
	Kubeboot   string `json:"kubeboot"`
	GitCommit  string `json:"gitCommit,omitempty"`
	Kubernetes string `json:"kubernetes"`
	Etcd       string `json:"etcd"`
	Containerd string `json:"containerd"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
}

// Release is the kubeboot release i names, with its commit when known:
// "v0.9.0 (1a2b3c4)", as `kubeboot version` prints it.
func (i Info) Release() string {
	if i.GitCommit == "" {
		return i.Kubeboot
	}
	return i.Kubeboot + " (" + i.GitCommit + ")"
}

// Get returns this binary's Info.
func Get() Info {
	return Info{Kubeboot: Kubeboot, GitCommit: GitCommit, Kubernetes: Kubernetes, Etcd: Etcd, Containerd: Containerd,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}
