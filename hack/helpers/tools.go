//go:build tools

// The helpers' upstream main packages, never compiled here: this import
// keeps their dependencies in go.mod and go.sum for `go run ./hack/helpers`.
package main

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
	_ "github.com/rancher/local-path-provisioner"
)
