# SPDX-License-Identifier: MIT
# Shared by the cli tests: bats-support/bats-assert and the binary under test
# ($RDMACTL, else the build tree's).
bats_require_minimum_version 1.5.0
load '../lib/assert'
load '../lib/teardown'

ROOT=${BATS_TEST_DIRNAME%/tests/*}
RDMACTL="${RDMACTL:-$ROOT/build/cli/rdmactl}"

require_binary() {
	[[ -x $RDMACTL ]] || fail "no rdmactl at $RDMACTL: build first (cmake --build build) or set RDMACTL"
}
