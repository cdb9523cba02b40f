#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# alltoall's bad input, refused before any device is touched: exit 2 for
# usage, 1 for a runtime failure (README, exit codes).

load helpers

setup() {
	require_binary
	PEERS=$BATS_TEST_TMPDIR/peers
	printf '0 198.18.0.1:20000\n1 198.18.0.1:20001\n' >"$PEERS"
}

a2a() {
	run timeout 30 "$RDMACTL" alltoall "$@"
}

@test "a world of one is a usage error" {
	a2a -r 0 -w 1 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "alltoall needs at least 2 ranks (the world size is 1)"
}

@test "a rank not below the world is a usage error, from a flag or a launcher" {
	a2a -r 2 -w 2 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "rank 2 is not below the world size 2"
	OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=2 a2a -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "rank 3 is not below the world size 2"
	SLURM_PROCID=one SLURM_NTASKS=2 a2a -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "SLURM_PROCID='one' is not a rank number"
	env -u RANK -u SLURM_PROCID -u OMPI_COMM_WORLD_RANK -u PMIX_RANK \
		timeout 30 "$RDMACTL" alltoall -R "file:$PEERS" || rc=$?
	[ "$rc" = 2 ]
}

@test "a peers file that lists a rank twice, or misses one, is a usage error" {
	printf '0 198.18.0.1:20000\n0 198.18.0.1:20001\n1 198.18.0.1:20002\n' >"$PEERS"
	a2a -r 0 -w 2 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial ":2: rank 0 is listed twice (also on line 1)"
	printf '0 198.18.0.1:20000\n' >"$PEERS"
	a2a -r 0 -w 2 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "lists no address for rank 1"
	# a file that is not there: a failure (exit 1) naming it, before any device
	a2a -r 0 -w 2 -R "file:$BATS_TEST_TMPDIR/none"
	assert_failure 1
	assert_output --partial "--rendezvous '$BATS_TEST_TMPDIR/none': No such file or directory"
	a2a -r 0 -w 2 -R "tcp://x"
	assert_failure 2
	a2a -r 0 -w 2
	assert_failure 2
	assert_output --partial "needs --rendezvous"
}

@test "a matrix of the wrong shape or with negative counts is a usage error; an unreadable one a failure" {
	local m=$BATS_TEST_TMPDIR/m.csv
	printf '1,2,3\n4,5,6\n' >"$m"
	a2a -r 0 -w 2 -R "file:$PEERS" --skew "matrix:$m"
	assert_failure 2
	assert_output --partial "more than 2 columns"
	printf '1,2\n' >"$m"
	a2a -r 0 -w 2 -R "file:$PEERS" --skew "matrix:$m"
	assert_failure 2
	assert_output --partial "1 rows, the world size is 2"
	printf '1,2\n3,-4\n' >"$m"
	a2a -r 0 -w 2 -R "file:$PEERS" --skew "matrix:$m"
	assert_failure 2
	assert_output --partial "column 2: negative count -4"
	# as every input file that cannot be read (rdmactl(8), EXIT STATUS)
	a2a -r 0 -w 2 -R "file:$PEERS" --skew "matrix:$BATS_TEST_TMPDIR/none.csv"
	assert_failure 1
	assert_output "rdmactl: --skew matrix '$BATS_TEST_TMPDIR/none.csv': No such file or directory"
}

@test "a matrix whose counts overflow the buffer sizes is a usage error naming the row" {
	local m=$BATS_TEST_TMPDIR/m.csv
	# 2^53 tokens of 14336 bytes wrap a 64-bit size
	printf '9007199254740992,1\n1,1\n' >"$m"
	a2a -r 0 -w 2 -R "file:$PEERS" --skew "matrix:$m"
	assert_failure 2
	assert_output --partial "row 1 (the tokens rank 0 sends): 9007199254740993 tokens of 14336 bytes"
	# the column: what rank 1 receives
	printf '1,0\n1,9007199254740992\n' >"$m"
	a2a -r 0 -w 2 -R "file:$PEERS" --skew "matrix:$m"
	assert_failure 2
	assert_output --partial "row 2 (the tokens rank 1 sends)"
	printf '1,18446744073709551615\n1,1\n' >"$m"
	a2a -r 0 -w 2 -R "file:$PEERS" --skew "matrix:$m"
	assert_failure 2
	assert_output --partial "column 2: the count is out of range"
	# sums near 2^64
	printf '9223372036854775807,9223372036854775807\n1,1\n' >"$m"
	a2a -r 0 -w 2 -R "file:$PEERS" --skew "matrix:$m"
	assert_failure 2
	assert_output --partial "row 1 (the tokens rank 0 sends): 18446744073709551614 tokens"
	printf '0,9223372036854775807\n0,9223372036854775807\n' >"$m"
	a2a -r 0 -w 2 -R "file:$PEERS" --skew "matrix:$m"
	assert_failure 2
	assert_output --partial "row 1 (the tokens rank 0 sends): 9223372036854775807 tokens"
	# only columns too large: 1 TiB received by rank 1 from two senders
	printf '0,40000000\n0,40000000\n' >"$m"
	a2a -r 0 -w 2 -R "file:$PEERS" --skew "matrix:$m"
	assert_failure 2
	assert_output --partial "column 2 (the tokens rank 1 receives): 80000000 tokens of 14336 bytes"
}

@test "bad routing parameters are usage errors" {
	a2a -r 0 -w 2 -R "file:$PEERS" --skew zipf:abc
	assert_failure 2
	a2a -r 0 -w 2 -R "file:$PEERS" --experts 7
	assert_failure 2
	assert_output --partial "7 experts do not spread evenly over 2 ranks"
	a2a -r 0 -w 2 -R "file:$PEERS" --experts 4 --topk 5
	assert_failure 2
	a2a -r 0 -w 2 -R "file:$PEERS" --algo star
	assert_failure 2
	a2a -r 0 -w 2 -R "file:$PEERS" --dtype fp32
	assert_failure 2
}

@test "an unreachable etcd is a runtime failure, named, in JSON too" {
	a2a -r 0 -w 2 -R etcd://127.0.0.1:1/job --listen 198.18.0.1
	assert_failure 1
	assert_output --partial "cannot reach etcd at 127.0.0.1:1"
	run timeout 30 "$RDMACTL" -j alltoall -r 0 -w 2 -R etcd://127.0.0.1:1/job --listen 198.18.0.1
	assert_failure 1
	jq -e '.error.message | contains("cannot reach etcd")' <<<"$output"
}

@test "a world of up to 4096 ranks is accepted, one more is a usage error naming the range" {
	a2a --rank 0 --world 4097 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "world size 4097 is outside 1..4096"
	# 100 ranks pass the checks and reach the rendezvous, whose file lists 2:
	# the missing ones named as a run
	run timeout 30 "$RDMACTL" -t 2000 alltoall --rank 99 --world 100 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "lists no address for rank 2-99 (world size 100)"
	# thousands missing here and there: the first named, the rest counted
	local i
	for ((i = 0; i < 4000; i += 2)); do echo "$i 198.18.0.1:$((20000 + i))"; done >"$PEERS"
	run timeout 30 "$RDMACTL" -t 2000 alltoall --rank 0 --world 4000 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "lists no address for rank 1, 3, 5, "
	assert_output --regexp ", and 19[0-9][0-9] more \(world size 4000\)"
}

@test "--background: a bad MODE names the choices; its size and depth without it, out of range, or on several rails are usage errors" {
	a2a -r 0 -w 2 -R "file:$PEERS" --background fabric
	assert_failure 2
	assert_output --partial "invalid --background 'fabric': expected one of none, pairs"
	a2a -r 0 -w 2 -R "file:$PEERS" --background-depth 8
	assert_failure 2
	assert_output --partial "--background-size and --background-depth go with --background pairs"
	a2a -r 0 -w 2 -R "file:$PEERS" --background none --background-size 1M
	assert_failure 2
	assert_output --partial "go with --background pairs"
	a2a -r 0 -w 2 -R "file:$PEERS" --background pairs --background-size 2G
	assert_failure 2
	assert_output --partial "--background-size 2147483648: from 1 byte to 1G"
	a2a -r 0 -w 2 -R "file:$PEERS" --background pairs --background-depth 0
	assert_failure 2
	assert_output --partial "invalid --background-depth '0': expected an integer from 1 to 1024"
	run timeout 30 "$RDMACTL" -d rxe0,rxe1 alltoall -r 0 -w 2 -R etcd://127.0.0.1:1/j \
		--listen 198.18.0.1,198.18.0.2 --background pairs
	assert_failure 2
	assert_output --partial "--background runs beside one rail, not 2"
	run "$RDMACTL" __complete alltoall --background ''
	assert_success
	assert_output "$(printf 'none\npairs')"
}
