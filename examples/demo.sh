#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# One command on a fresh Debian 12 machine: install what is missing, build,
# and run the main job (examples/roundtrip.sh). Where the machine has no
# usable RDMA device (no rdma_ucm, or no active port), it runs inside the
# SoftRoCE guest of tests/vm/ on real rdma_rxe.
#
# Usage: examples/demo.sh [ADDR]
#   ADDR        an address of an RDMA device for the main job (default:
#               the first active RoCE port's, or the guest's)
#   -h, --help  this text; nothing is installed, built or started
# Prints the build's progress and the main job's steps on stderr, and the
# main job's JSON summary on stdout; exits 0 when the data came back
# verified, 1 on a failure, 2 on a usage error.
set -euo pipefail

case ${1:-} in
-h | --help)
	sed -n '/^# Usage/,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
-*) echo "demo: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
echo "demo: installing the packages that are missing (tests/deps.sh)" >&2
tests/deps.sh
echo "demo: building rdmactl (a few minutes on two cores; the log is build/demo-build.log)" >&2
mkdir -p build
# the build's progress, a line every tenth of the way (pipefail: a failed
# build fails the pipe)
if ! { cmake -S . -B build && cmake --build build -j "$(nproc)"; } 2>&1 |
	tee build/demo-build.log |
	awk '/^\[ *[0-9]+%\]/ { p = substr($0, 2, index($0, "%") - 2) + 0
		if (p >= at) { printf "demo: build %d%%\n", p; fflush(); at = p - p % 10 + 10 } }' >&2; then
	tail -n 20 build/demo-build.log >&2
	echo "demo: the build failed (build/demo-build.log)" >&2
	exit 1
fi
echo "demo: built build/cli/rdmactl" >&2

active=$(build/cli/rdmactl -j probe-topology 2>/dev/null |
	jq '[.devices[]?.ports[]? | select(.state == "ACTIVE")] | length' || echo 0)
if [ "${active:-0}" -gt 0 ] && [ -e /dev/infiniband/rdma_cm ]; then
	exec examples/roundtrip.sh "$@"
fi
echo "demo: no RDMA device here: running in the SoftRoCE guest (tests/vm/run.sh)" >&2
exec tests/vm/run.sh -- examples/roundtrip.sh "$@"
