#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The test harness itself, over small bats files made here: teardown stops
# what a failed test started (tests/lib/teardown.bash).

load helpers

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
	((SECONDS < 30)) || fail "bats took $SECONDS s"
	! alive "$(cat "$BATS_TEST_TMPDIR/leak.pid")" || fail "the test's sleep still runs"
}

@test "the same test without started: bats waits for the process (the hang that teardown prevents)" {
	leaker
	PASS_TO_STARTED=0 run timeout 3 bats --tap "$BATS_TEST_TMPDIR/t/leak.bats"
	assert_failure 124
	assert_line "not ok 1 starts a process, then an assertion fails"
}
