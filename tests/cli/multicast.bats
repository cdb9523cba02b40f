#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# multicast's bad input, refused before any device is touched: exit 2 for
# usage, 1 for a runtime failure (README, exit codes).

load helpers

setup() {
	require_binary
	PEERS=$BATS_TEST_TMPDIR/peers
	printf '0 198.18.0.1:20000\n1 198.18.0.1:20001\n2 198.18.0.1:20002\n' >"$PEERS"
}

mc() {
	run timeout 30 "$RDMACTL" multicast "$@"
}

@test "a root outside the group is a usage error, on the root and on a receiver" {
	mc -r 0 -w 3 -R "file:$PEERS" --root 3 --pattern seq --size 1M
	assert_failure 2
	assert_output --partial "--root 3 is not a rank of the group (ranks 0 to 2)"
	mc -r 1 -w 3 -R "file:$PEERS" --root 7
	assert_failure 2
	assert_output --partial "--root 7 is not a rank of the group"
	run timeout 30 "$RDMACTL" -j multicast -r 1 -w 3 -R "file:$PEERS" --root 3
	assert_failure 2
	jq -e '.error.message | contains("--root 3 is not a rank")' <<<"$output"
}

@test "--fanout 0, a fanout without a tree, a chunk of 0 are usage errors" {
	mc -r 0 -w 3 -R "file:$PEERS" --fanout 0 --pattern seq --size 1M
	assert_failure 2
	assert_output --partial "invalid --fanout '0'"
	mc -r 0 -w 3 -R "file:$PEERS" --algo chain --fanout 3 --pattern seq --size 1M
	assert_failure 2
	assert_output --partial "--fanout applies to --algo tree only"
	mc -r 0 -w 3 -R "file:$PEERS" --chunk 0 --pattern seq --size 1M
	assert_failure 2
	assert_output --partial "--chunk '0': expected auto or a size from 1 byte to 1G"
	mc -r 0 -w 3 -R "file:$PEERS" --chunk 2G --pattern seq --size 1M
	assert_failure 2
	assert_output --partial "--chunk '2G': expected auto or a size from 1 byte to 1G"
	mc -r 0 -w 3 -R "file:$PEERS" --chunk lots --pattern seq --size 1M
	assert_failure 2
	assert_output --partial "--chunk 'lots': expected auto or a size"
	mc -r 0 -w 3 -R "file:$PEERS" --algo star --pattern seq --size 1M
	assert_failure 2
}

@test "--digest takes xxh64 or sha256 (completed from the binary), nothing else" {
	mc -r 0 -w 3 -R "file:$PEERS" --digest md5 --pattern seq --size 1M
	assert_failure 2
	assert_output --partial "invalid --digest 'md5': expected one of xxh64, sha256"
	run "$RDMACTL" __complete multicast --digest ''
	assert_success
	assert_output "$(printf 'xxh64\nsha256')"
}

@test "an unreadable or missing file is a runtime failure that names it" {
	mc -r 0 -w 3 -R "file:$PEERS" --file "$BATS_TEST_TMPDIR/none"
	assert_failure 1
	assert_output --partial "cannot read $BATS_TEST_TMPDIR/none: No such file or directory"
	mc -r 0 -w 3 -R "file:$PEERS" --file "$BATS_TEST_TMPDIR"
	assert_failure 1
	assert_output --partial "$BATS_TEST_TMPDIR is not a regular file"
	run timeout 30 "$RDMACTL" -j multicast -r 0 -w 3 -R "file:$PEERS" --file "$BATS_TEST_TMPDIR/none"
	assert_failure 1
	jq -e '.error.code == "ENOENT" and (.error.message | contains("cannot read"))' <<<"$output"
	# a receiver whose --out cannot be written fails at once too
	mc -r 1 -w 3 -R "file:$PEERS" --out "$BATS_TEST_TMPDIR/no/such/dir/w.%r"
	assert_failure 1
	assert_output --partial "cannot write $BATS_TEST_TMPDIR/no/such/dir/w.1"
}

@test "the root needs one source; the other inputs are checked" {
	mc -r 0 -w 3 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "the root sends --file FILE or --pattern P --size SIZE"
	mc -r 0 -w 3 -R "file:$PEERS" --pattern seq
	assert_failure 2
	assert_output --partial "--pattern needs --size"
	mc -r 0 -w 3 -R "file:$PEERS" --pattern nope --size 1M
	assert_failure 2
	mc -r 0 -w 3 -R "file:$PEERS" --file /etc/hostname --size 1M
	assert_failure 2
	mc -r 1 -w 3 -R "file:$PEERS" --block-sizes 1M,0
	assert_failure 2
	assert_output --partial "--block-sizes: '0' is not a size above 0"
	mc -r 1 -w 3 -R "file:$PEERS" --mem file
	assert_failure 2
	mc -r 0 -w 1 -R "file:$PEERS" --pattern seq --size 1M
	assert_failure 2
	assert_output --partial "multicast needs a root and at least one receiver"
	mc -r 1 -w 3
	assert_failure 2
	assert_output --partial "needs --rendezvous"
}

@test "--mem cuda in a build without CUDA fails plainly, before the group" {
	local bin
	if [[ -n "${RDMACTL_NOCUDA:-}" ]]; then
		bin=$RDMACTL_NOCUDA
	elif jq -e '.features.gpu_memory == false' <<<"$("$RDMACTL" -j help)" >/dev/null; then
		bin=$RDMACTL
	else
		skip "this rdmactl has GPU memory; set RDMACTL_NOCUDA to a -DRDMACTL_CUDA=OFF build"
	fi
	run timeout 30 "$bin" multicast -r 1 -w 3 -R "file:$PEERS" --mem cuda:0
	assert_failure 1
	assert_output --partial "built without CUDA"
	refute_output --partial "RDMA CM"
}
