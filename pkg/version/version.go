// Package version holds the versions kubeboot is built with. The variables
// are set at build time with -ldflags -X; the defaults name the pinned
// upstream versions so that a plain `go build` still reports them.
package version

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
