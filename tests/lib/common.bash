# SPDX-License-Identifier: MIT
# Shared by the bats tiers: where the binary is, and bats helper libraries.
REPO_ROOT=$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)
BUILD_DIR=${RDMACTL_BUILD_DIR:-$REPO_ROOT/build}
RDMACTL=${RDMACTL:-$BUILD_DIR/cli/rdmactl}
export RDMACTL

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

# Run rdmactl with a bound on time: no test may hang.
rdmactl() {
	timeout --kill-after=5 "${RDMACTL_TEST_TIMEOUT:-60}" "$RDMACTL" "$@"
}
