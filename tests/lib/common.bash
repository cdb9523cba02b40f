# SPDX-License-Identifier: MIT
# Shared by the bats tiers: where the binary is, and bats helper libraries.
# No forks here: bats sources this for every test, and under the guest's
# emulation each fork costs.
REPO_ROOT=${BATS_TEST_DIRNAME%/tests/*}
BUILD_DIR=${RDMACTL_BUILD_DIR:-$REPO_ROOT/build}
RDMACTL=${RDMACTL:-$BUILD_DIR/cli/rdmactl}
export RDMACTL

source "$REPO_ROOT/tests/lib/assert.bash"
source "$REPO_ROOT/tests/lib/teardown.bash"

# tests/lib/sanitizer-cover.sh: each test's processes write their coverage
# (gcov) under a folder of the test's own; common_teardown names it.
if [[ -n "${RDMACTL_COVERAGE_DIR:-}" ]]; then
	export GCOV_PREFIX="$RDMACTL_COVERAGE_DIR/${BATS_TEST_FILENAME##*/}/$BATS_TEST_NAME"
fi

# In the guest, the tests' own filters run on gojq (Debian's jq in Go): under
# the guest's emulation jq 1.6 takes 175 ms to start (it compiles its
# builtins each time) and gojq 30 ms, and the rxe tiers call jq some
# thousands of times. Only the tests' filters: the examples they run are
# separate scripts and keep the user's jq. The cli tier, on the host, runs
# the same kind of filters on jq itself. Without gojq, jq.
if [[ -n "${RDMACTL_VM:-}" ]] && command -v gojq >/dev/null; then
	jq() { gojq "$@"; }
fi

# Run rdmactl with a bound on time: no test may hang.
rdmactl() {
	timeout --kill-after=5 "${RDMACTL_TEST_TIMEOUT:-60}" "$RDMACTL" "$@"
}

# sanitizer_reports: fail, printing them, when a sanitizer (ASan, LeakSanitizer,
# UBSan) wrote a report since the last call. tests/rxe/sanitized.sh points
# the sanitizers' log_path into $RDMACTL_SANITIZER_DIR; without it, a no-op.
# Call it from teardown, after the test's servers were stopped with SIGTERM
# (a leak is only reported by a process that exits).
sanitizer_reports() {
	local d=${RDMACTL_SANITIZER_DIR:-} f found=0
	[[ -n "$d" ]] || return 0
	mkdir -p "$d/seen"
	for f in "$d"/*; do
		[[ -f "$f" ]] || continue
		echo "sanitizer report ${f##*/}:"
		cat "$f"
		{ echo "test: ${BATS_TEST_FILENAME##*/}: ${BATS_TEST_DESCRIPTION:-?}"; cat "$f"; } >"$d/seen/${BATS_SUITE_TEST_NUMBER:-0}-${f##*/}"
		rm -f "$f"
		found=1
	done >&2
	((found == 0))
}
