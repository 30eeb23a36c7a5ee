#!/usr/bin/env bash
# Refreshes third_party/kube-router from a clone of kube-router at a tag:
# the packages kubeboot's policy engine links (network policy controller
# and what it imports), their files unmodified, without tests, and a
# manifest of their hashes (checked by internal/network/kuberouter's tests).
#
#   hack/third-party/kube-router.sh ~/src/kube-router v2.11.1
set -euo pipefail
src=${1:?clone of github.com/cloudnativelabs/kube-router}
tag=${2:?tag, e.g. v2.11.1}
here=$(cd "$(dirname "$0")/../.." && pwd)
dst=$here/third_party/kube-router
pkgs=(internal/nlretry pkg/controllers/netpol pkg/healthcheck pkg/metrics pkg/options pkg/svcip pkg/utils pkg/version)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$src" archive "$tag" LICENSE "${pkgs[@]}" | tar -x -C "$tmp"
find "$tmp" -name '*_test.go' -delete
rm -rf "${pkgs[@]/#/$dst/}" "$dst/LICENSE"
cp -r "$tmp"/. "$dst"/
commit=$(git -C "$src" rev-parse "$tag^{commit}")
(cd "$dst" && find LICENSE internal pkg -type f | LC_ALL=C sort | xargs sha256sum) > "$dst/UPSTREAM.sha256"
sed -i "s/^upstream: .*/upstream: $tag ($commit)/" "$dst/README.md"
echo "third_party/kube-router: $tag ($commit); now: cd $dst && go mod tidy; cd $here && go mod tidy"
