#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Install the host packages the SoftRoCE guest harness needs, and only those
# that are missing. The guest runs the host's own binaries over a read-only
# 9p root, so rdma-core, perftest and bats are needed on the host even though
# the host kernel cannot run RDMA itself.
#
# Usage: tests/vm/deps.sh [EXTRA-PACKAGE...]   (quiet when nothing is missing)
# tests/deps.sh passes the build and test packages as extras.
# `apt-get update` runs only when something must be installed. Needs root,
# or sudo when run as another user.
set -euo pipefail

packages=(
	qemu-system-x86 busybox-static cpio kmod xz-utils
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
	iproute2 bats bats-support bats-assert e2fsprogs mount
)
packages+=("$@")

# dpkg-query, not dpkg -s: dpkg -s also succeeds for a package that was
# removed but whose configuration files remain.
missing=()
for pkg in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null) || status=
	[[ "$status" == installed ]] || missing+=("$pkg")
done
((${#missing[@]})) || exit 0

sudo=()
if ((EUID != 0)); then
	command -v sudo >/dev/null ||
		{ echo "deps.sh: missing ${missing[*]}; run as root or install sudo" >&2; exit 1; }
	sudo=(sudo)
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q >&2
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
