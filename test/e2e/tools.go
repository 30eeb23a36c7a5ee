//go:build tools

// The e2e tests build upstream kubeadm from the pinned k8s.io/kubernetes
// (kubeadm_test.go). This import, never compiled, keeps kubeadm's own
// dependencies (corefile-migration, system-validators) in go.mod, where
// go mod tidy would otherwise drop them.
package e2e

import _ "k8s.io/kubernetes/cmd/kubeadm"
