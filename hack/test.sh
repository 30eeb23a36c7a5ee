#!/usr/bin/env bash
# Runs every test: a fast subset of upstream conformance, the unit tests,
# then the end-to-end tests against the built binary (real processes in
# network-namespace hosts; needs root), then kubeboot on Debian 12 VMs.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/install-deps.sh
make build
# The shared harnesses (offline conformance, Debian VMs) sit beside the
# project; KUBEBOOT_SHARED points at them from a clone elsewhere.
shared="${KUBEBOOT_SHARED:-$(cd .. && pwd)/shared}"
# A fast subset of the upstream conformance suite (Services, DNS, exec,
# logs, pod lifecycle) on 1 control plane + 2 workers, through the offline
# harness beside the project (its first build takes ~15 min, then cached),
# the test images pulled through a registry mirror under upstream names.
if [[ -x "$shared/conformance/run.sh" ]]; then
	go run ./hack/conformance -fast -harness "$shared/conformance"
else
	echo "conformance subset not run: no offline harness at $shared/conformance (set KUBEBOOT_SHARED)"
fi
make test
# The lifecycle API's runnable examples (cluster/example_test.go), alone.
make examples
# Real hosts last, alone on the machine: Debian 12 VMs (systemd as init,
# cgroup v2, a kernel each) from ../shared/vm, under emulation where the
# CPU has no usable virtualization (~15 min here). The base image is built
# once and kept in /var/tmp/kubeboot-vm.
if [[ -x "$shared/vm/vm.sh" ]]; then
	KUBEBOOT_VM=1 KUBEBOOT_VM_HARNESS="$shared/vm/vm.sh" KUBEBOOT_BINARY="$PWD/_output/kubeboot" go test -count=1 -timeout 45m -v ./test/vm
else
	echo "VM tests not run: no harness at $shared/vm (set KUBEBOOT_SHARED)"
fi
