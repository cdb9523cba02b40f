#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# One command on a fresh Debian 12 machine: install what is missing, build,
# and run the main job (examples/roundtrip.sh). Where the machine has no
# usable RDMA device (no rdma_ucm, or no active port), it runs inside the
# SoftRoCE guest of tests/vm/ on real rdma_rxe.
set -euo pipefail

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
tests/deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" >/dev/null

active=$(build/cli/rdmactl -j probe-topology 2>/dev/null |
	jq '[.devices[]?.ports[]? | select(.state == "ACTIVE")] | length' || echo 0)
if [ "${active:-0}" -gt 0 ] && [ -e /dev/infiniband/rdma_cm ]; then
	exec examples/roundtrip.sh "$@"
fi
echo "demo: no RDMA device here: running in the SoftRoCE guest (tests/vm/run.sh)" >&2
exec tests/vm/run.sh -- examples/roundtrip.sh "$@"
