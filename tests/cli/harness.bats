#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The test harness itself, over small bats files made here: teardown stops
# what a failed test started (tests/lib/teardown.bash), a file that hangs
# is cut off and counted as failed while the others run
# (tests/lib/bats-each.sh), and run-all's totals count it
# (tests/lib/tap-count.bash).

load helpers
# bats file_tags=source-only

EACH=$ROOT/tests/lib/bats-each.sh

# How long bats takes here and now to run a file of two quick tests
# (BASE_MS, the slowest of three runs), measured once for the file: the deadlines below are reckoned
# from it, not fixed, so that they hold on a loaded machine (the cli tier
# runs beside the guests and other builds). HANG_LIMIT: the hanging file's
# limit, long enough for bats to start and report its two tests first, ten
# times the baseline, at least 8 s (at 3 s a loaded CI machine once cut it
# off before them; at a fixed 8 s, a load of 5 to 8 on two cores did).
# WAIT_LIMIT: how long the hang test waits for bats, four times the
# baseline, at least 3 s.
setup_file() {
	local d=$BATS_FILE_TMPDIR/baseline t0
	mkdir -p "$d"
	printf '%s\n' '@test "b1" { true; }' '@test "b2" { true; }' >"$d/base.bats"
	BASE_MS=0
	for _ in 1 2 3; do # the slowest of three: a load comes and goes
		t0=$(date +%s%N)
		bats --tap "$d/base.bats" >/dev/null 2>&1 || true
		t0=$((($(date +%s%N) - t0) / 1000000))
		((t0 <= BASE_MS)) || BASE_MS=$t0
	done
	HANG_LIMIT=$(((10 * BASE_MS + 999) / 1000))
	((HANG_LIMIT >= 8)) || HANG_LIMIT=8
	WAIT_LIMIT=$(((4 * BASE_MS + 999) / 1000))
	((WAIT_LIMIT >= 3)) || WAIT_LIMIT=3
	export BASE_MS HANG_LIMIT WAIT_LIMIT
	echo "# bats baseline: $BASE_MS ms; hang limit $HANG_LIMIT s, wait limit $WAIT_LIMIT s" >&3
}

# fixture NAME: write stdin to $BATS_TEST_TMPDIR/t/NAME, where "TEST" at the
# start of a line becomes "@test" (bats would take it for its own here)
fixture() {
	mkdir -p "$BATS_TEST_TMPDIR/t"
	sed 's/^TEST /@test /' >"$BATS_TEST_TMPDIR/t/$1"
}

# alive PID: the process runs (a zombie does not)
alive() {
	local state
	state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[[ $state != Z* ]]
}

# A failing test whose background process holds bats' fd 3; with
# PASS_TO_STARTED=1 it passes the process to `started`.
leaker() {
	fixture leak.bats <<EOF
load '$ROOT/tests/lib/teardown'
teardown() {
	common_teardown
}
TEST "starts a process, then an assertion fails" {
	sleep 300 &
	echo "\$!" >"$BATS_TEST_TMPDIR/leak.pid"
	[ "\${PASS_TO_STARTED:-}" != 1 ] || started "\$!"
	[ 1 = 2 ]
}
EOF
}

@test "common_teardown stops what a failed test passed to started: bats ends at once" {
	leaker
	SECONDS=0
	PASS_TO_STARTED=1 run timeout 60 bats --tap "$BATS_TEST_TMPDIR/t/leak.bats"
	assert_failure 1
	assert_line "not ok 1 starts a process, then an assertion fails"
	# teardown's SIGTERM, not the sleep's 300 s
	((SECONDS < 22 + HANG_LIMIT)) || fail "bats took $SECONDS s (a baseline of $BASE_MS ms)"
	! alive "$(cat "$BATS_TEST_TMPDIR/leak.pid")" || fail "the test's sleep still runs"
}

@test "the same test without started: bats waits for the process (the hang that teardown prevents)" {
	leaker
	PASS_TO_STARTED=0 run timeout "$WAIT_LIMIT" bats --tap "$BATS_TEST_TMPDIR/t/leak.bats"
	assert_failure 124
	assert_line "not ok 1 starts a process, then an assertion fails"
}

# Four files: one passes (and skips), one leaves a process behind so that
# bats never ends, one fails, one does not parse. The hanging file is cut
# off after HANG_LIMIT seconds.
four_files() {
	fixture 1-pass.bats <<'EOF'
TEST "p1" { true; }
TEST "p2" { skip "not here"; }
EOF
	fixture 2-hang.bats <<EOF
TEST "h1" { true; }
TEST "h2 leaves a process holding fd 3" {
	sleep 300 &
	echo "\$!" >"$BATS_TEST_TMPDIR/hang.pid"
}
EOF
	fixture 3-fail.bats <<'EOF'
TEST "f1" { true; }
TEST "f2" { [ 1 = 2 ]; }
EOF
	fixture 4-broken.bats <<'EOF'
TEST "b1" {
EOF
}

@test "bats-each: a file that hangs is cut off and fails, naming it; the files after it run" {
	four_files
	SECONDS=0
	run "$EACH" --file-timeout "$HANG_LIMIT" --timing -- "$BATS_TEST_TMPDIR/t"
	assert_failure 1
	# the hanging file's limit and three short files: 30 s at the least
	((SECONDS < 2 * HANG_LIMIT + 14)) || fail "took $SECONDS s (a baseline of $BASE_MS ms)"
	local t=$BATS_TEST_TMPDIR/t
	assert_line --index 0 "# file: $t/1-pass.bats"
	assert_line --regexp '^ok 1 p1 in [0-9]+ms$'
	assert_line --regexp '^ok 2 p2 in [0-9]+ms # skip not here$'
	assert_line --regexp '^ok 3 h1 in '
	assert_line --regexp '^ok 4 h2 leaves a process holding fd 3 in '
	assert_line "not ok 5 $t/2-hang.bats: cut off after $HANG_LIMIT s (--file-timeout): a test or a process it left behind hung; the tests after the last result above (if any) did not run"
	assert_line --regexp '^ok 6 f1 in '
	assert_line --regexp '^not ok 7 f2 in '
	assert_line --regexp '^not ok 8 '
	assert_line --index $((${#lines[@]} - 1)) "1..8"
	[ "$(grep -c '^not ok' <<<"$output")" -eq 3 ]
	# the left-behind process went with its file
	! alive "$(cat "$t/../hang.pid")" || fail "the hanging file's sleep still runs"
}

@test "bats-each: run-all's totals count the cut-off file as one failure, naming the file" {
	four_files
	run "$EACH" --file-timeout "$HANG_LIMIT" --timing -- "$BATS_TEST_TMPDIR/t"
	echo "$output" >"$BATS_TEST_TMPDIR/tier.tap"
	local repo=$ROOT
	echo 'rxe | p2 | a fixture' >"$BATS_TEST_TMPDIR/skips"
	SKIPS_FILE=$BATS_TEST_TMPDIR/skips
	source "$ROOT/tests/lib/tap-count.bash"
	count_bats rxe "$BATS_TEST_TMPDIR/tier.tap" 1
	echo "rdmactl tests: $passed passed, $failed failed, $skipped skipped"
	printf '%s\n' "${failed_tests[@]}"
	[ "$passed" -eq 4 ]
	[ "$failed" -eq 3 ]
	[ "$skipped" -eq 1 ]
	[ "${#failed_tests[@]}" -eq 3 ]
	[[ ${failed_tests[0]} == "rxe: 2-hang.bats: 5 $BATS_TEST_TMPDIR/t/2-hang.bats: cut off after $HANG_LIMIT s"* ]]
	[[ ${failed_tests[1]} == "rxe: 3-fail.bats: 7 f2 in "* ]]
	[[ ${failed_tests[2]} == "rxe: 4-broken.bats: 8 "* ]]
	[ "${failures[*]}" = rxe ]
	[[ ${skips_seen[0]} == "rxe: p2 (allowed: a fixture)" ]]
}

@test "bats-each: every file passing exits 0; bad usage exits 2 with the cause" {
	fixture 1-pass.bats <<'EOF'
TEST "p1" { true; }
EOF
	run "$EACH" --file-timeout 30 -- "$BATS_TEST_TMPDIR/t/1-pass.bats"
	assert_success
	assert_line "ok 1 p1"
	assert_line "1..1"
	run "$EACH" --file-timeout 2x -- "$BATS_TEST_TMPDIR/t"
	assert_failure 2
	assert_output --partial "--file-timeout wants whole seconds, not '2x'"
	run "$EACH" -- "$BATS_TEST_TMPDIR/nothing-here"
	assert_failure 2
	assert_output --partial "no such file or folder: $BATS_TEST_TMPDIR/nothing-here"
}

@test "bats-each: a sanitizer report that no teardown took up fails the file that left it" {
	local sd=$BATS_TEST_TMPDIR/sanitizer
	mkdir -p "$sd"
	fixture 1-quiet.bats <<'EOF2'
TEST "q1" { true; }
EOF2
	fixture 2-leaky.bats <<EOF2
TEST "l1" { echo "ERROR: LeakSanitizer: detected memory leaks" >"$sd/asan.123"; }
EOF2
	RDMACTL_SANITIZER_DIR=$sd run "$EACH" --file-timeout 30 -- "$BATS_TEST_TMPDIR/t"
	assert_failure 1
	assert_line "ok 1 q1"
	assert_line "ok 2 l1"
	assert_line "not ok 3 $BATS_TEST_TMPDIR/t/2-leaky.bats: sanitizer report asan.123 outside any test's teardown"
	assert_line "# ERROR: LeakSanitizer: detected memory leaks"
	[ ! -e "$sd/asan.123" ]
	grep -q "^file: $BATS_TEST_TMPDIR/t/2-leaky.bats" "$sd"/seen/*asan.123
}
