#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl migrate without a device: usage errors and malformed block lists
# are refused (exit 2) before any connection is tried.

load helpers

setup() {
	require_binary
	S=198.18.1.1:7471/kv
	D=198.18.1.2:7471/kv
}

@test "migrate needs a source and a destination; --blocks, --whole and the live options exclude each other" {
	run "$RDMACTL" migrate "$S"
	assert_failure 2
	assert_output --partial "give the source and the destination"
	run "$RDMACTL" migrate "$S" "$D" --whole --blocks -
	assert_failure 2
	assert_output --partial "give --blocks FILE (or -) or --whole, not both"
	for o in "--max-rounds 3" "--dirty 1M" --no-verify --keep-source; do
		run "$RDMACTL" migrate "$S" "$D" --whole $o
		assert_failure 2
		assert_output --partial "is for a live move"
	done
	run "$RDMACTL" migrate "$S" "$D" --max-rounds 1
	assert_failure 2
	assert_output --partial "--max-rounds"
	run "$RDMACTL" migrate "$S" "$D" --dirty lots
	assert_failure 2
	assert_output --partial "--dirty"
	# Without --blocks or --whole it is a live move: here it gets as far as
	# connecting (no RDMA device on this machine).
	run "$RDMACTL" -t 500 migrate "$S" "$D" --max-rounds 4 --dirty 64K
	assert_failure 1
	assert_output --partial "the source 198.18.1.1:7471"
	run "$RDMACTL" migrate "$S" "$D" --whole --format json
	assert_failure 2
	assert_output --partial "--format goes with --blocks"
	run "$RDMACTL" migrate "$S" "$D" --blocks - --format yaml </dev/null
	assert_failure 2
	assert_output --partial "--format"
}

@test "the test hook RDMACTL_TEST_LOSE_DIRTY: a malformed offset is a usage error; a good one gets as far as connecting" {
	run env RDMACTL_TEST_LOSE_DIRTY=lots "$RDMACTL" migrate "$S" "$D"
	assert_failure 2
	assert_output --partial "RDMACTL_TEST_LOSE_DIRTY='lots' is not a byte offset"
	run env RDMACTL_TEST_LOSE_DIRTY=196608 "$RDMACTL" -t 500 migrate "$S" "$D"
	assert_failure 1
	assert_output --partial "the source 198.18.1.1:7471"
}

@test "migrate refuses a bad target, a renamed region and the same server twice" {
	run "$RDMACTL" migrate "nohost:port:x" "$D" --whole
	assert_failure 2
	assert_output --partial "invalid source 'nohost:port:x'"
	run "$RDMACTL" migrate "$S" 198.18.1.2:7471/other --whole
	assert_failure 2
	assert_output --partial "the region keeps its name: 'kv' cannot become 'other'"
	run "$RDMACTL" migrate "$S" 198.18.1.1:7471/kv --whole
	assert_failure 2
	assert_output --partial "the same server"
	run "$RDMACTL" migrate "$S" "$D" --whole --token 'has space'
	assert_failure 2
	assert_output --partial "invalid --token"
}

@test "a malformed block list is refused with where and why, as text and as JSON" {
	run "$RDMACTL" migrate "$S" "$D" --blocks - <<<$'0 4K\n\n8K x'
	assert_failure 2
	assert_output --partial "stdin: line 3: 'x' is not a size"
	run "$RDMACTL" migrate "$S" "$D" --blocks - <<<'0 4K 8K 12K'
	assert_failure 2
	assert_output --partial "line 1: expected OFFSET LENGTH [DST_OFFSET]"
	run "$RDMACTL" migrate "$S" "$D" --blocks - <<<'4K 0'
	assert_failure 2
	assert_output --partial "line 1: a block of length 0"
	run "$RDMACTL" migrate "$S" "$D" --blocks - <<<'# nothing'
	assert_failure 2
	assert_output --partial "names no block"
	run "$RDMACTL" -j migrate "$S" "$D" --blocks - <<<'[{"offset": 0, "length": 4096}, {"offset": 1}]'
	assert_failure 2
	jq -e '.error.code == "EINVAL" and (.error.message | test("stdin: block 2: expected"))' <<<"$output"
	run "$RDMACTL" migrate "$S" "$D" --blocks - <<<'{"blocks": 3}'
	assert_failure 2
	assert_output --partial "expected an array of blocks"
	run "$RDMACTL" migrate "$S" "$D" --format json --blocks - <<<'0 4K'
	assert_failure 2
	assert_output --partial "not JSON"
	run "$RDMACTL" migrate "$S" "$D" --blocks "$BATS_TEST_TMPDIR/absent"
	assert_failure 1
	assert_output --partial "--blocks '$BATS_TEST_TMPDIR/absent': No such file or directory"
	run "$RDMACTL" migrate "$S" "$D" --blocks "$BATS_TEST_TMPDIR"
	assert_failure 1
	assert_output --partial "--blocks '$BATS_TEST_TMPDIR' is a directory: name a file"
}

@test "a well-formed list gets as far as connecting: text, JSON, size strings" {
	# No RDMA device here: the failure is the connection's, exit 1, after
	# the list was accepted.
	for list in $'0 64K\n1M,4K,2M # moved' '[[0, 65536], {"offset": "1M", "length": "4K", "dst_offset": "2M"}]'; do
		run "$RDMACTL" -t 500 migrate "$S" "$D" --blocks - <<<"$list"
		assert_failure 1
		assert_output --partial "the source 198.18.1.1:7471"
	done
}

@test "the admin token: a missing file or one open to others is a failure (1); one that is empty or holds more than a token, and a bad RDMACTL_ADMIN_TOKEN, are usage errors" {
	local t=$BATS_TEST_TMPDIR
	umask 077 # a token file is private (one others may read is refused)
	run "$RDMACTL" migrate "$S" "$D" --whole --admin-token-file "$t/none"
	assert_failure 1
	assert_output --partial "--admin-token-file $t/none: cannot read it: No such file or directory"
	: >"$t/empty"
	printf 'two words\n' >"$t/spaces"
	head -c 57 /dev/zero | tr '\0' a >"$t/long"
	run "$RDMACTL" migrate "$S" "$D" --whole --admin-token-file "$t/empty"
	assert_failure 2
	assert_output --partial "--admin-token-file $t/empty: its first line is empty"
	run "$RDMACTL" migrate "$S" "$D" --whole --admin-token-file "$t/spaces"
	assert_failure 2
	assert_output --partial "the file holds no token"
	run "$RDMACTL" migrate "$S" "$D" --whole --admin-token-file "$t/long"
	assert_failure 2
	assert_output --partial "--admin-token-file $t/long: its first line is longer than 56 characters"
	# and a file others may read is no secret
	printf 's3cret\n' >"$t/open"
	chmod 644 "$t/open"
	# (a file that cannot be used as it is: 1, as every input file)
	run "$RDMACTL" migrate "$S" "$D" --whole --admin-token-file "$t/open"
	assert_failure 1
	assert_output --partial "group or others may read or write it (mode 0644)"
	RDMACTL_ADMIN_TOKEN='a b' run "$RDMACTL" migrate "$S" "$D" --whole
	assert_failure 2
	assert_output --partial 'invalid $RDMACTL_ADMIN_TOKEN'
	# One line with its newline (and a CR) is a token: it gets as far as connecting.
	printf 's3cret\r\n' >"$t/ok"
	run "$RDMACTL" -t 300 migrate "$S" "$D" --whole --admin-token-file "$t/ok"
	refute_output --partial "holds no token"
}

@test "register: the admin token must differ from the token; --allow-unauthenticated-migration is for a server without one" {
	local t=$BATS_TEST_TMPDIR
	umask 077
	echo same >"$t/adm"
	run "$RDMACTL" register --listen 127.0.0.1 --name kv --size 4K --token same --admin-token-file "$t/adm"
	assert_failure 2
	assert_output --partial "the admin token must differ from --token"
	run "$RDMACTL" register --listen 127.0.0.1 --name kv --size 4K --admin-token-file "$t/adm" \
		--allow-unauthenticated-migration
	assert_failure 2
	assert_output --partial "for a server without an admin token"
	run "$RDMACTL" register --listen 127.0.0.1 --name kv --size 4K --admin-token-file "$t/missing"
	assert_failure 1
	assert_output --partial "--admin-token-file $t/missing"
}
