#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# alltoall --plan and multicast --plan: a job of up to 4096 ranks sized with
# no device, rendezvous or rank; text and -j, the figures each algorithm's
# connections give, and bad input refused with exit 2 naming the cause.
# (tests/rxe/alltoall.bats and multicast.bats compare a plan with a run.)

load helpers

setup() {
	require_binary
}

plan() {
	run timeout 60 "$RDMACTL" "$@"
}

# The JSON keys of $1 that name no unit or an ambiguous one (units.bats).
bad_keys() {
	jq -r '[.. | objects | keys[]] | unique[]
		| select(test("(gbps|_bw|_rate|_kb|mib_per_s)$"))' <<<"$1"
}

@test "alltoall --plan, text: per rank and for the job, no rendezvous or rank needed" {
	plan alltoall --plan -w 8
	assert_success
	assert_output --partial "# alltoall plan: algo flat, 8 ranks; 128 tokens a rank of 14336 bytes, top-2 of 64 experts"
	# every other rank: 7 QPs on one CQ and its shared receive queue of
	# 32 + 2 x 7 receives of 1 KiB, a send slot each
	assert_line --regexp '^  QPs +7 +7 +7 +0$'
	assert_line --regexp '^  CQs +1 +1 +1 +0$'
	assert_line --regexp '^  receive buffers +46 +46 +46 +0$'
	assert_line --regexp '^  message ring bytes +54272 +54272 +54272 +0$'
	assert_line --regexp '^  connect rounds +0 +1 +1 +0$'
	assert_output --partial "# job: 56 QPs (28 connections), 8 CQs, 368 receive buffers, 434176 bytes of message rings"
	assert_output --partial "# set-up: 16 connects at a time, rounds of them on the busiest rank: 1; barrier and allgather: a tree of depth 1"
	refute_output --partial "# per node"
	refute_output --partial "# rank"
}

@test "alltoall --plan -j at 4096 ranks: flat, ring and hierarchical connect what they say" {
	plan -j alltoall --plan -w 4096
	assert_success
	assert_equal "$(bad_keys "$output")" ""
	# flat: every pair; rank 0 connects to 4095 ranks, 16 at a time
	jq -e '.schema_version == 2 and .plan == true and .algo == "flat" and .ranks == 4096
		and .ranks_per_node == null and .per_rank.qps == {"min": 4095, "median": 4095, "max": 4095, "max_rank": 0}
		and .per_rank.cqs == {"min": 1, "median": 1, "max": 1, "max_rank": 0} and .per_rank.recv_buffers.max == 32 + 2 * 4095
		and .per_rank.ring_bytes.max == (32 + 3 * 4095) * 1024
		and .per_rank.connect_rounds == {"min": 0, "median": 128, "max": 256, "max_rank": 0}
		and .per_rank.registered_bytes.min > .per_rank.buffer_bytes.min
		and .job.qps == 4096 * 4095 and .job.connections == 4096 * 4095 / 2
		and .job.ring_bytes == 4096 * (32 + 3 * 4095) * 1024 and .job.registered_bytes > .job.ring_bytes
		and .job.connects_at_once == 16 and .job.connect_rounds == 256 and .job.tree_depth == 4' <<<"$output"
	# ring: two neighbours each; the barrier's tree follows the ring
	plan -j alltoall --plan -w 4096 -a ring
	assert_success
	jq -e '.per_rank.qps == {"min": 2, "median": 2, "max": 2, "max_rank": 0}
		and .job.connections == 4096 and .job.tree_depth == 2048' <<<"$output"
	# hierarchical: the 7 others of its node and one rail peer on each of the 511 other nodes
	plan -j alltoall --plan -w 4096 -a hierarchical --ranks-per-node 8
	assert_success
	jq -e '.ranks_per_node == 8 and .per_rank.qps.min == 518 and .per_rank.qps.max == 518
		and .job.qps == 4096 * 518 and .per_node.nodes == 512 and .per_node.ranks_per_node == 8
		and .per_node.qps.max == 8 * 518 and .per_node.registered_bytes.max >= 8 * .per_rank.registered_bytes.min
		and (.job.tree_depth | . >= 2 and . <= 6)' <<<"$output"
}

@test "alltoall --plan: the token buffers follow the routing; --rank gives that rank's own" {
	local m=$BATS_TEST_TMPDIR/m.csv
	printf '0,5,0\n7,1,0\n0,0,9\n' >"$m"
	plan -j alltoall --plan -w 3 --hidden 256 --skew "matrix:$m" --rank 1
	assert_success
	# tokens of 512 bytes: send, receive and two of each more for the parities
	# and the combine, 3 x (sent + received) x 512 + 64; rank 1 sends 8, gets 6
	jq -e '.per_rank.buffer_bytes == {"min": 18496, "median": 21568, "max": 27712, "max_rank": 2}
		and .rank == {"rank": 1, "qps": 2, "cqs": 1, "recv_buffers": 36, "ring_bytes": 38912,
			"buffer_bytes": 21568, "registered_bytes": 60480, "connects": 1,
			"connect_rounds": 1, "accepts": 1}' <<<"$output"
	plan alltoall --plan -w 3 --hidden 256 --skew "matrix:$m" --rank 1
	assert_success
	assert_output --partial "# rank 1: 2 QPs, 1 CQ, 36 receive buffers (38912 bytes of message rings), 21568 bytes of token buffer, 60480 bytes registered; connects to 1 (rounds: 1), accepts 1"
	# a launch line with --plan added: the rendezvous is not read
	plan alltoall --plan -w 3 -r 2 -R "file:$BATS_TEST_TMPDIR/none" --listen 198.18.0.1
	assert_success
	assert_output --partial "# rank 2: 2 QPs"
}

@test "multicast --plan -j at 4096 ranks: the root reaches everyone, a relay its parent and children" {
	plan -j multicast --plan -w 4096 --ring 4 --chunk 1M --rank 0
	assert_success
	assert_equal "$(bad_keys "$output")" ""
	# binary tree: a leaf holds its parent and the root (2); the root all 4095;
	# a shared receive queue of 4 + 8 receives and two a connection, and a
	# send slot a connection
	jq -e '.schema_version == 2 and .plan == true and .algo == "tree" and .fanout == 2 and .root == 0
		and .ring_chunks == 4 and .chunk_bytes == 1048576 and .depth == 12 and .width == 2
		and .per_rank.qps == {"min": 2, "median": 2, "max": 4095, "max_rank": 0}
		and .per_rank.recv_buffers.max == 12 + 2 * 4095 and .per_rank.ring_bytes.min == (12 + 3 * 2) * 1024
		and .per_rank.buffer_bytes == {"min": 4194304, "median": 4194304, "max": 4194304, "max_rank": 0}
		and .rank.qps == 4095 and .rank.connects == 4095 and .rank.connect_rounds == 256
		and .rank.registered_bytes == (12 + 3 * 4095) * 1024 + 4194304
		and .job.connections == 4095 + 4095 - 2' <<<"$output"
	# a chain rooted at 3: the root and its two neighbours in the chain
	plan -j multicast --plan -w 64 --algo chain --root 3 --ranks-per-node 8
	assert_success
	jq -e '.root == 3 and .depth == 63 and .width == 1 and .per_rank.qps.max == 63
		and .per_rank.qps.max_rank == 3 and .per_rank.qps.min == 2 and .per_node.nodes == 8' <<<"$output"
	plan multicast --plan -w 8 --algo flat --chunk 256K
	assert_success
	assert_output --partial "# multicast plan: algo flat, root 0, 8 ranks; rings of 16 chunks of 262144 bytes, depth 1, width 7"
	assert_line --regexp '^  QPs +1 +1 +7 +0$'
	assert_line --regexp '^  receive ring bytes +4194304 +4194304 +4194304 +0$'
	# --chunk auto (the default): the root's pick for --size, else the most it picks
	plan multicast --plan -w 8 --algo flat --size 16M
	assert_success
	assert_output --partial "rings of 16 chunks of 1048576 bytes (--chunk auto), depth 1"
	assert_line --regexp '^  receive ring bytes +16777216 +16777216 +16777216 +0$'
	plan multicast --plan -w 8 --algo chain --size 16M
	assert_success
	assert_output --partial "rings of 16 chunks of 262144 bytes (--chunk auto), depth 7"
	plan multicast --plan -w 8 --algo flat
	assert_success
	assert_output --partial "rings of 16 chunks of 2097152 bytes (--chunk auto: at most), depth 1"
	assert_line --regexp '^  receive ring bytes +33554432 +33554432 +33554432 +0$'
}

@test "--plan: bad worlds and nodes are usage errors naming the cause" {
	for cmd in alltoall multicast; do
		plan "$cmd" --plan -w 0
		assert_failure 2
		assert_output --partial "$cmd needs at least 2 ranks (the world size is 0)"
		plan "$cmd" --plan -w 4097
		assert_failure 2
		assert_output --partial "--world 4097: a group holds at most 4096 ranks"
		plan "$cmd" --plan
		assert_failure 2
		assert_output --partial "$cmd --plan needs --world N"
		plan "$cmd" --plan -w 12 --ranks-per-node 5
		assert_failure 2
		assert_output --partial "--ranks-per-node 5 does not divide the world size 12"
		plan "$cmd" --plan -w 12 -r 12
		assert_failure 2
		assert_output --partial "rank 12 is not below the world size 12"
		plan -j "$cmd" --plan -w 4097
		assert_failure 2
		jq -e '.schema_version == 2 and (.error.message | contains("at most 4096 ranks"))' <<<"$output"
	done
	plan alltoall --plan -w 16 -a hierarchical
	assert_failure 2
	assert_output --partial "--plan --algo hierarchical needs --ranks-per-node N"
	plan multicast --plan -w 16 --algo chain --fanout 3
	assert_failure 2
	assert_output --partial "--fanout applies to --algo tree only"
	plan multicast --plan -w 16 --root 16
	assert_failure 2
	assert_output --partial "--root 16 is not a rank of the group"
	plan multicast -r 0 -w 2 -R "file:$BATS_TEST_TMPDIR/peers" --pattern seq --size 1M --ranks-per-node 2
	assert_failure 2
	assert_output --partial "--ranks-per-node applies to --plan only"
}

@test "--help says which connections each algorithm makes, and what --plan gives" {
	plan alltoall --help
	assert_success
	assert_output --partial "--plan"
	[[ $(tr -s ' \n' ' ' <<<"$output") == *"flat (every rank connects to every other), ring (to its two neighbours) or hierarchical (to the ranks of its node, and over the rail to the rank of the same local index on every other node)"* ]]
	plan multicast --help
	assert_success
	assert_output --partial "--plan"
	[[ $(tr -s ' \n' ' ' <<<"$output") == *"each rank connects to its parent and its children, and the root to every rank"* ]]
}
