#!/usr/bin/env bash
# Installs what kubeboot's node and tests need from Debian's packages:
# runc (kubeboot carries containerd 2 and its shim; runc is the one runtime
# piece it takes from the distribution), the tools kube-proxy and the
# kubelet call (iptables, conntrack, ...), and what the tests use
# (iproute2 for network namespaces, util-linux for nsenter/unshare, procps
# for ps, openssl, systemd for systemd-analyze, which checks the node
# daemon's unit, openssh-server for the hosts `kubeboot apply` reaches).
set -euo pipefail
pkgs=(runc iptables ipset conntrack socat ethtool iproute2 util-linux procps openssl systemd make git openssh-server)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# No package starts a service here (openssh-server would listen on the
	# machine's port 22): the tests start what they need, in their hosts.
	policy=/usr/sbin/policy-rc.d
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
		trap 'rm -f "$policy"' EXIT
	fi
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
command -v go >/dev/null || { echo "Go is required (see go.mod for the version)" >&2; exit 1; }
