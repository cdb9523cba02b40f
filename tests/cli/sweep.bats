#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sweep's bad input, refused before any device is touched (exit 2), and
# its help; the sweep itself runs in tests/rxe/sweep.bats.

load helpers

setup() {
	require_binary
	PEERS=$BATS_TEST_TMPDIR/peers
	printf '0 198.18.0.1:20000\n1 198.18.0.1:20001\n' >"$PEERS"
}

sw() {
	run timeout 30 "$RDMACTL" sweep "$@"
}

@test "a world of one is a usage error" {
	sw -r 0 -w 1 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "sweep needs at least 2 ranks (the world size is 1)"
}

@test "no rendezvous is a usage error; a peers file that is not there fails (1)" {
	sw -r 0 -w 2
	assert_failure 2
	assert_output --partial "sweep needs --rendezvous"
	sw -r 0 -w 2 -R "file:$BATS_TEST_TMPDIR/none"
	assert_failure 1
	assert_output --partial "none"
}

@test "--iters and --duration together, or out of range, are usage errors" {
	sw -r 0 -w 2 -R "file:$PEERS" --iters 10 --duration 1
	assert_failure 2
	assert_output --partial "--iters and --duration exclude each other"
	sw -r 0 -w 2 -R "file:$PEERS" --duration 0
	assert_failure 2
	assert_output --partial "invalid --duration '0'"
	sw -r 0 -w 2 -R "file:$PEERS" --duration 1x
	assert_failure 2
	assert_output --partial "invalid --duration '1x'"
	sw -r 0 -w 2 -R "file:$PEERS" --iters 0
	assert_failure 2
	assert_output --partial "invalid --iters 0"
	# the waiting ranks wait within the timeout
	run timeout 30 "$RDMACTL" -t 1000 sweep -r 0 -w 2 -R "file:$PEERS" --duration 2
	assert_failure 2
	assert_output --partial "needs a timeout (-t) of at least 4000 ms"
}

@test "the judgement's bounds are checked" {
	sw -r 0 -w 2 -R "file:$PEERS" --min-fraction 1.5
	assert_failure 2
	assert_output --partial "invalid --min-fraction '1.5'"
	sw -r 0 -w 2 -R "file:$PEERS" --max-lat-us -3
	assert_failure 2
	assert_output --partial "invalid --max-lat-us '-3'"
	sw -r 0 -w 2 -R "file:$PEERS" --slow-ratio 1.5
	assert_failure 2
	assert_output --partial "invalid --slow-ratio '1.5'"
	sw -r 0 -w 2 -R "file:$PEERS" --lat-ratio 0.5
	assert_failure 2
	assert_output --partial "invalid --lat-ratio '0.5'"
	sw -r 0 -w 2 -R "file:$PEERS" --msg-size 0
	assert_failure 2
	assert_output --partial "invalid --msg-size 0"
	sw -r 0 -w 2 -R "file:$PEERS" --depth 0
	assert_failure 2
	assert_output --partial "invalid --depth '0'"
}

@test "help lists the options" {
	sw --help
	assert_success
	assert_output --partial "--min-fraction"
	assert_output --partial "--svg"
}

@test "--pairs: a wrong line is a usage error naming it; a missing file fails (1)" {
	printf '0 1\n1 5\n' >"$BATS_TEST_TMPDIR/pairs"
	sw -r 0 -w 2 -R "file:$PEERS" --pairs "$BATS_TEST_TMPDIR/pairs"
	assert_failure 2
	assert_output --partial "line 2: \"1 5\": ranks are 0 to 1"
	printf '# none\n' >"$BATS_TEST_TMPDIR/pairs"
	sw -r 0 -w 2 -R "file:$PEERS" --pairs "$BATS_TEST_TMPDIR/pairs"
	assert_failure 2
	assert_output --partial "no pair is named"
	sw -r 0 -w 2 -R "file:$PEERS" --pairs "$BATS_TEST_TMPDIR/none"
	assert_failure 1
	assert_output --partial "No such file or directory"
}

@test "--load and --incast: a mode or rank out of range, with --iters, together, or with --pairs, are usage errors" {
	sw -r 0 -w 2 -R "file:$PEERS" --load sideways
	assert_failure 2
	assert_output --partial "sideways"
	sw -r 0 -w 2 -R "file:$PEERS" --load same-port --iters 10
	assert_failure 2
	assert_output --partial "--load runs for --duration, not --iters"
	sw -r 0 -w 2 -R "file:$PEERS" --incast 0 --load fabric
	assert_failure 2
	assert_output --partial "--load and --incast exclude each other"
	sw -r 0 -w 2 -R "file:$PEERS" --incast 2
	assert_failure 2
	assert_output --partial "--incast 2: the ranks are 0 to 1"
	printf '0 1\n' >"$BATS_TEST_TMPDIR/pairs"
	sw -r 0 -w 2 -R "file:$PEERS" --incast 1 --pairs "$BATS_TEST_TMPDIR/pairs"
	assert_failure 2
	assert_output --partial "--incast measures no pairs: --pairs does not apply"
	sw -r 0 -w 2 -R "file:$PEERS" --load same-pair --leak-ratio 1
	assert_failure 2
	assert_output --partial "--leak-ratio"
}
