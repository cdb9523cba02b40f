# SPDX-License-Identifier: MIT
# Shared by the cli tests: bats-support/bats-assert and the binary under test
# ($RDMACTL, else the build tree's).
bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

ROOT="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
RDMACTL="${RDMACTL:-$ROOT/build/cli/rdmactl}"

require_binary() {
	[[ -x $RDMACTL ]] || fail "no rdmactl at $RDMACTL: build first (cmake --build build) or set RDMACTL"
}
