#!/usr/bin/env bash
# Runs every test: a fast subset of upstream conformance, the unit tests,
# then the end-to-end tests against the built binary (real processes in
# network-namespace hosts; needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/install-deps.sh
make build
# A fast subset of the upstream conformance suite (Services, DNS, exec,
# logs, pod lifecycle) on 1 control plane + 2 workers, through the offline
# harness beside the project (its first build takes ~15 min, then cached),
# the test images pulled through a registry mirror under upstream names.
if [[ -x ../shared/conformance/run.sh ]]; then
	go run ./hack/conformance -fast
else
	echo "conformance subset not run: no offline harness at ../shared/conformance"
fi
make test
