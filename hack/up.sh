#!/usr/bin/env bash
# Sets up this machine and brings up a single-node cluster with
# `kubeboot init`. The node runs in its own network namespace host
# ("kubeboot-demo", 10.203.0.2): kube-apiserver refuses a loopback
# advertise address, and nothing here may use the machine's own address.
# On a real host you would simply run `sudo kubeboot init`.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/install-deps.sh
make build
exec go run ./hack/demo up "$@"
