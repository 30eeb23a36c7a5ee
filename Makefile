# kubeboot build. One binary carries the bootstrapper and every upstream
# component, built from their Go modules at the versions go.mod pins.
KUBE_VERSION := v1.37.2
KUBE_MAJOR   := 1
KUBE_MINOR   := 37
OUT          ?= _output
COMMIT       := $(shell git rev-parse --short HEAD 2>/dev/null)
# The commit date, not the build time, so a rebuild of the same commit links
# the same binary and the Go build cache stays warm.
ETCD_VERSION := $(shell go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3 | sed 's/^v//')
CONTAINERD_VERSION := $(shell go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
BUILD_DATE   := $(shell git log -1 --format=%cd --date=format:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo 1970-01-01T00:00:00Z)

VERSION_LDFLAGS = \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(KUBE_MAJOR) \
	-X k8s.io/component-base/version.gitMinor=$(KUBE_MINOR) \
	-X k8s.io/component-base/version.gitCommit= \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/component-base/version.buildDate=$(BUILD_DATE) \
	-X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/client-go/pkg/version.gitMajor=$(KUBE_MAJOR) \
	-X k8s.io/client-go/pkg/version.gitMinor=$(KUBE_MINOR) \
	-X k8s.io/client-go/pkg/version.gitCommit= \
	-X k8s.io/client-go/pkg/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.buildDate=$(BUILD_DATE) \
	-X github.com/kubeboot/kubeboot/internal/base/version.Kubernetes=$(KUBE_VERSION) \
	-X github.com/kubeboot/kubeboot/internal/base/version.Etcd=$(ETCD_VERSION) \
	-X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION:v%=%) \
	-X github.com/kubeboot/kubeboot/internal/base/version.Containerd=$(CONTAINERD_VERSION:v%=%) \
	-X github.com/kubeboot/kubeboot/internal/base/version.GitCommit=$(COMMIT) \
	-X github.com/kubeboot/kubeboot/internal/base/version.Kubeboot=$(KUBEBOOT_VERSION)$(KUBEBOOT_SUFFIX)

# The same code reporting the next patch release: the end-to-end test of
# `kubeboot upgrade` upgrades a cluster to it (one Kubernetes version is
# pinned, so two builds that report different versions test the mechanism).
NEXT_VERSION := $(shell echo $(KUBE_VERSION) | awk -F. '{print $$1"."$$2"."$$3+1}')
KUBEBOOT_VERSION ?= dev

.PHONY: build build-next bench-scale helpers test test-short examples clean
# Static (CGO_ENABLED=0): the same binary runs on the host and as the only
# file of the images kubeboot builds, where there is no dynamic loader.
# First the per-pod helpers (the runc shim, pause, the CNI plugins), small
# binaries of their own that kubeboot embeds (internal/host/helpers).
build: helpers
	CGO_ENABLED=0 go build -tags kubeboot_helpers -ldflags "-s -w $(VERSION_LDFLAGS)" -o $(OUT)/kubeboot ./cmd/kubeboot

build-next: KUBE_VERSION := $(NEXT_VERSION)
build-next: KUBEBOOT_SUFFIX := -next
build-next: helpers
	CGO_ENABLED=0 go build -tags kubeboot_helpers -ldflags "-s -w $(VERSION_LDFLAGS)" -o $(OUT)/kubeboot-next ./cmd/kubeboot

# bench/scale is also kubemark's hollow node (`kubeboot-bench-scale
# hollow-node`): upstream's test fakes stay out of the product binary.
bench-scale:
	CGO_ENABLED=0 go build -tags kubeboot_helpers -ldflags "$(VERSION_LDFLAGS)" -o $(OUT)/kubeboot-bench-scale ./bench/scale

helpers:
	go run ./hack/helpers -o internal/host/helpers/bin

# The Go API module (api/, a module of its own) first.
test-short:
	cd api && go test -short ./...
	go test -short ./...

# The full suite: unit tests, then the end-to-end tests against the binary.
test: build build-next
	cd api && go test -count=1 ./...
	go test -count=1 -tags kubeboot_helpers ./internal/host/helpers/
	KUBEBOOT_BINARY=$(CURDIR)/$(OUT)/kubeboot KUBEBOOT_NEXT_BINARY=$(CURDIR)/$(OUT)/kubeboot-next go test -count=1 -timeout 60m ./...

# The lifecycle API's examples, run alone: a control plane, then a
# single-node cluster running a pod, in a network namespace of their own.
examples: build
	KUBEBOOT_EXAMPLES=1 KUBEBOOT_BINARY=$(CURDIR)/$(OUT)/kubeboot go test -count=1 -v -run Example ./cluster

clean:
	rm -rf $(OUT)
