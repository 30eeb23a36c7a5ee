#!/usr/bin/env bash
# Runs every test: unit tests, then the end-to-end tests against the built
# binary (real processes in network-namespace hosts; needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/install-deps.sh
make test
