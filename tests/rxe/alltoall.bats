#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl alltoall on real SoftRoCE: ranks on one rxe device (and on the
# two devices of the veth pair), every token checked; failures named.

bats_require_minimum_version 1.5.0
load helpers

# a2a_peers N [ADDR...]: a peers file for N ranks (helpers.bash).
a2a_peers() {
	group_peers 20000 "$@"
}

# a2a_start N ARGS...: start ranks 0..N-1 in the background (-j, their
# stdout in $BATS_TEST_TMPDIR/rank.I.out, stderr in .err); PIDS holds them.
a2a_start() {
	local n=$1 i
	shift
	PIDS=()
	for ((i = 0; i < n; i++)); do
		rdmactl -j -t "${A2A_TIMEOUT:-20000}" alltoall --rank "$i" --world "$n" "$@" \
			>"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
}

# a2a_wait: wait for every rank; RCS holds their exit codes.
a2a_wait() {
	local p
	RCS=()
	for p in "${PIDS[@]}"; do
		if wait "$p"; then RCS+=(0); else RCS+=($?); fi
	done
	PIDS=()
}

a2a_dump() {
	local f
	for f in "$BATS_TEST_TMPDIR"/rank.*; do
		echo "== ${f##*/}"
		cat "$f"
	done
}

# a2a_ok N ARGS...: run N ranks, all succeed, rank 0's document has wrong 0
# and checked tokens; the others print nothing.
a2a_ok() {
	local n=$1 i
	a2a_start "$@"
	a2a_wait
	for ((i = 0; i < n; i++)); do
		[ "${RCS[i]}" = 0 ] || { a2a_dump; fail "rank $i exited ${RCS[i]}"; }
	done
	DOC=$(cat "$BATS_TEST_TMPDIR/rank.0.out")
	jq -e --argjson n "$n" '.schema_version == 2 and .ranks == $n and .wrong == 0
		and .checked == true and .checked_tokens > 0 and .algbw_gbyte_per_s > 0
		and (.busbw_gbyte_per_s - .algbw_gbyte_per_s * ($n - 1) / $n | fabs) < 1e-6
		and .lat_us.p50 > 0 and .lat_us.p99 >= .lat_us.p50 and .imbalance >= 1' <<<"$DOC" ||
		{ a2a_dump; fail "rank 0's document is not right"; }
	for ((i = 1; i < n; i++)); do
		[ ! -s "$BATS_TEST_TMPDIR/rank.$i.out" ] || fail "rank $i printed on stdout"
	done
}

# The ranks still running (a failed test), etcd, the sanitizer reports.
teardown() {
	started "${PIDS[@]}"
	if [[ -n ${SLOWED:-} ]]; then tc qdisc del dev "$SLOWED" root 2>/dev/null || true; fi
	common_teardown
}

SMALL=(--hidden 512 --tokens 48 --topk 2 --iters 5 --warmup 1)

# bats test_tags=plain-only
@test "flat: 2 ranks, uniform, every token checked" {
	need_guest
	a2a_peers 2
	a2a_ok 2 --algo flat --rendezvous "file:$PEERS" "${SMALL[@]}"
	[ "$(jq -r .algo <<<"$DOC")" = flat ]
	[ "$(jq -r .rank_source <<<"$DOC")" = flags ]
}

# bats test_tags=plain-only
@test "flat: 4 ranks, zipf skew, fp8" {
	need_guest
	a2a_peers 4
	a2a_ok 4 --algo flat --rendezvous "file:$PEERS" "${SMALL[@]}" --skew zipf:1.5 --dtype fp8
	jq -e '.imbalance > 1.3' <<<"$DOC"
}

@test "flat: 8 ranks, uniform and zipf" {
	need_guest
	heavy_sibling "flat with 2 and 4 ranks, uniform, zipf and a skew matrix"
	a2a_peers 8
	a2a_ok 8 --rendezvous "file:$PEERS" --hidden 256 --tokens 32 --iters 3 --warmup 1
	a2a_peers 8
	a2a_ok 8 --rendezvous "file:$PEERS" --hidden 256 --tokens 32 --iters 3 --warmup 1 \
		--skew zipf:1.2
}

# bats test_tags=plain-only
@test "flat: a skew matrix, with empty blocks, and --all-ranks" {
	need_guest
	a2a_peers 3
	printf '0,5,0\n7,1,0\n0,0,9\n' >"$BATS_TEST_TMPDIR/m.csv"
	a2a_ok 3 --rendezvous "file:$PEERS" --hidden 256 --skew "matrix:$BATS_TEST_TMPDIR/m.csv" \
		--iters 3
	# 2 * (5 + 8 + 9) tokens of 512 bytes over 3 ranks
	[ "$(jq -r .size_bytes <<<"$DOC")" = $((2 * 22 * 512 / 3)) ]
	a2a_peers 2
	a2a_start 2 --rendezvous "file:$PEERS" --hidden 256 --iters 2 --all-ranks
	a2a_wait
	jq -e '.rank == 1 and .wrong == 0' "$BATS_TEST_TMPDIR/rank.1.out"
}

@test "--svg: rank 0 draws the bytes per peer, one cell a block, and it renders" {
	heavy_sibling "multicast's '--svg: the root draws one bar a receiver' (the same SVG writer) and 'flat: 2 ranks'"
	need_guest
	a2a_peers 3
	printf '0,5,0\n7,1,0\n0,0,9\n' >"$BATS_TEST_TMPDIR/m.csv"
	a2a_ok 3 --rendezvous "file:$PEERS" --hidden 256 --skew "matrix:$BATS_TEST_TMPDIR/m.csv" \
		--iters 2 --svg "$BATS_TEST_TMPDIR/a2a.svg"
	[ "$(jq -r .svg <<<"$DOC")" = "$BATS_TEST_TMPDIR/a2a.svg" ]
	# the background and 3 x 3 cells; the hottest block (9 tokens, 2->2) in red
	[ "$(grep -c '<rect' "$BATS_TEST_TMPDIR/a2a.svg")" = 10 ]
	grep -q 'fill="#d73027"' "$BATS_TEST_TMPDIR/a2a.svg"
	command -v rsvg-convert >/dev/null || skip "rsvg-convert (librsvg2-bin) is not installed"
	rsvg-convert -o "$BATS_TEST_TMPDIR/a2a.png" "$BATS_TEST_TMPDIR/a2a.svg"
	[ -s "$BATS_TEST_TMPDIR/a2a.png" ]
}

# bats test_tags=plain-only
@test "flat and ring: a block larger than the port's largest message goes in pieces, every token checked" {
	need_guest
	local max
	# rxe says it takes messages of 8 MiB at most (its max_msg_sz): a block of
	# 10 MiB goes as two writes, the immediate data on the last, and must land
	# whole (rxe itself accepts the single write; what a 32-bit length would
	# cut, a block of 4 GiB, is tests/unit/test_split.c's)
	max=$(ibv_devinfo -v -d "$RDMACTL_VM_DEV" | awk '/max_msg_sz/ { print $2; exit }')
	[ -n "$max" ] || fail "ibv_devinfo names no max_msg_sz"
	printf '0,1300\n1300,0\n' >"$BATS_TEST_TMPDIR/m.csv"
	[ $((1300 * 8192)) -gt $((max)) ] || skip "the port takes $max-byte messages: no block here is larger"
	a2a_peers 2
	a2a_ok 2 --algo flat --rendezvous "file:$PEERS" --hidden 4096 \
		--skew "matrix:$BATS_TEST_TMPDIR/m.csv" --iters 2 --warmup 0
	[ "$(jq -r .bytes_per_peer.max <<<"$DOC")" = $((1300 * 8192)) ]
	a2a_peers 2
	a2a_ok 2 --algo ring --rendezvous "file:$PEERS" --hidden 4096 \
		--skew "matrix:$BATS_TEST_TMPDIR/m.csv" --iters 2 --warmup 0
}

# bats test_tags=plain-only
@test "ring: 2 and 4 ranks, uniform and zipf" {
	need_guest
	a2a_peers 2
	a2a_ok 2 --algo ring --rendezvous "file:$PEERS" "${SMALL[@]}"
	[ "$(jq -r .algo <<<"$DOC")" = ring ]
	a2a_peers 4
	a2a_ok 4 --algo ring --rendezvous "file:$PEERS" "${SMALL[@]}"
	a2a_peers 4
	a2a_ok 4 --algo ring --rendezvous "file:$PEERS" "${SMALL[@]}" --skew zipf:1.5 --dtype fp8
}

@test "ring: 8 ranks, zipf, and a matrix with empty blocks" {
	need_guest
	a2a_peers 8
	a2a_ok 8 --algo ring --rendezvous "file:$PEERS" --hidden 256 --tokens 32 --iters 3 \
		--warmup 1 --skew zipf:1.2
	a2a_peers 5
	printf '0,5,0,0,3\n7,1,0,0,0\n0,0,9,2,0\n0,0,0,0,0\n1,1,1,1,1\n' >"$BATS_TEST_TMPDIR/m.csv"
	a2a_ok 5 --algo ring --rendezvous "file:$PEERS" --hidden 256 \
		--skew "matrix:$BATS_TEST_TMPDIR/m.csv" --iters 3
}

# bats test_tags=plain-only
@test "hierarchical: 4 ranks as 2 nodes of 2, uniform and zipf" {
	need_guest
	a2a_peers 4
	a2a_ok 4 --algo hierarchical --ranks-per-node 2 --rendezvous "file:$PEERS" "${SMALL[@]}"
	[ "$(jq -r .algo <<<"$DOC")" = hierarchical ]
	a2a_peers 4
	a2a_ok 4 --algo hierarchical --ranks-per-node 2 --rendezvous "file:$PEERS" "${SMALL[@]}" \
		--skew zipf:1.5 --dtype fp8
	# one node: everything through shared memory
	a2a_peers 2
	a2a_ok 2 --algo hierarchical --ranks-per-node 2 --rendezvous "file:$PEERS" "${SMALL[@]}"
}

@test "--plan gives every rank the QPs, CQs, ring bytes and tree depth a hierarchical run of 4 reports" {
	need_guest
	heavy_sibling "hierarchical with 4 ranks as 2 nodes of 2 runs the group; the plan runs sanitized in tests/cli/plan.bats"
	local i plan got
	a2a_peers 4
	a2a_start 4 --algo hierarchical --ranks-per-node 2 --rendezvous "file:$PEERS" "${SMALL[@]}" \
		--all-ranks
	a2a_wait
	for ((i = 0; i < 4; i++)); do
		[ "${RCS[i]}" = 0 ] || { a2a_dump; fail "rank $i exited ${RCS[i]}"; }
		got=$(jq -c '{qps: .group.qps, cqs: .group.cqs, ring_bytes: .group.ring_bytes,
			tree_depth: .group.tree_depth, wrong}' "$BATS_TEST_TMPDIR/rank.$i.out")
		# the run's own command line, with --plan added: no device, no rendezvous
		plan=$(rdmactl -j alltoall --plan --rank "$i" --world 4 --algo hierarchical \
			--ranks-per-node 2 --rendezvous "file:$PEERS" "${SMALL[@]}" 2>&1) ||
			fail "the plan of rank $i failed: $plan"
		plan=$(jq -c '{qps: .rank.qps, cqs: .rank.cqs, ring_bytes: .rank.ring_bytes,
			tree_depth: .job.tree_depth, wrong: 0}' <<<"$plan")
		assert_equal "$plan" "$got"
		# and a plan of another algorithm is seen to differ (flat: 3 QPs)
		plan=$(rdmactl -j alltoall --plan --rank "$i" --world 4 "${SMALL[@]}" |
			jq -c '{qps: .rank.qps, cqs: .rank.cqs, ring_bytes: .rank.ring_bytes,
				tree_depth: .job.tree_depth, wrong: 0}')
		[ "$plan" != "$got" ] || fail "a flat plan matched a hierarchical run: $plan"
	done
	# node-local plus rail: 2 connections, a shared receive queue of 32
	# receives and two a connection, a send slot a connection
	jq -e '.group.qps == 2 and .group.ring_bytes == (32 + 3 * 2) * 1024' "$BATS_TEST_TMPDIR/rank.3.out"
}

@test "a device whose largest CQ cannot hold every connection's queues: a few shared CQs, not one each; every token right" {
	need_guest
	local i
	a2a_peers 5
	# 4 connections of 128 sends and 32 receives each; a largest CQ of 330
	# entries holds two of them: 2 CQs (a CQ per connection would be 4)
	export RDMACTL_TEST_MAX_CQE=330
	a2a_start 5 --algo flat --rendezvous "file:$PEERS" "${SMALL[@]}" --all-ranks
	a2a_wait
	unset RDMACTL_TEST_MAX_CQE
	for ((i = 0; i < 5; i++)); do
		[ "${RCS[i]}" = 0 ] || { a2a_dump; fail "rank $i exited ${RCS[i]}"; }
		assert_equal "$(jq -r '"qps \(.group.qps) cqs \(.group.cqs) wrong \(.wrong)"' "$BATS_TEST_TMPDIR/rank.$i.out")" \
			'qps 4 cqs 2 wrong 0'
	done
}

@test "hierarchical: two nodes of 4, one on each rxe of the veth pair, same data as flat" {
	need_two_nics
	heavy_sibling "hierarchical with 4 ranks as 2 nodes of 2, and the GPU memory test's hierarchical run"
	local common=(--hidden 256 --tokens 32 --iters 3 --warmup 1 --skew zipf:1.2 --all-ranks)
	# the host name column makes the nodes: ranks 0-3 on a, 4-7 on b
	PEERS=$BATS_TEST_TMPDIR/peers.hosts
	for i in 0 1 2 3 4 5 6 7; do
		if ((i < 4)); then
			echo "$i $RDMACTL_VM_ADDR_A:$((21000 + i)) node-a"
		else
			echo "$i $RDMACTL_VM_ADDR_B:$((21000 + i)) node-b"
		fi
	done >"$PEERS"
	a2a_start 8 --algo hierarchical --rendezvous "file:$PEERS" "${common[@]}"
	a2a_wait
	for i in 0 1 2 3 4 5 6 7; do
		[ "${RCS[i]}" = 0 ] || { a2a_dump; fail "rank $i exited ${RCS[i]}"; }
		jq -e '.wrong == 0 and .checked_tokens > 0' "$BATS_TEST_TMPDIR/rank.$i.out" >/dev/null ||
			{ a2a_dump; fail "rank $i"; }
	done
	[ "$(jq -r .device "$BATS_TEST_TMPDIR/rank.0.out")" = "$RDMACTL_VM_DEV_A" ]
	[ "$(jq -r .device "$BATS_TEST_TMPDIR/rank.5.out")" = "$RDMACTL_VM_DEV_B" ]
	hier=$(jq -c '{size_bytes, imbalance, bytes_per_peer}' "$BATS_TEST_TMPDIR/rank.0.out")
	a2a_peers 8 "$RDMACTL_VM_ADDR_A" "$RDMACTL_VM_ADDR_B"
	a2a_start 8 --algo flat --rendezvous "file:$PEERS" "${common[@]}"
	a2a_wait
	for i in 0 1 2 3 4 5 6 7; do
		[ "${RCS[i]}" = 0 ] || { a2a_dump; fail "flat rank $i exited ${RCS[i]}"; }
	done
	[ "$(jq -c '{size_bytes, imbalance, bytes_per_peer}' "$BATS_TEST_TMPDIR/rank.0.out")" = "$hier" ]
}


@test "hierarchical: 72 ranks as 9 nodes of 8, past the old limit of 64 ranks, every token checked" {
	heavy_sibling "hierarchical with 4 ranks as 2 nodes of 2; groups to 4096 ranks in test_group_tree and test_group_plan; routing past 64 ranks in test_a2a"
	need_guest
	a2a_peers 72
	A2A_TIMEOUT=90000 RDMACTL_TEST_TIMEOUT=150 a2a_ok 72 --algo hierarchical --ranks-per-node 8 --rendezvous "file:$PEERS" \
		--hidden 64 --tokens 8 --topk 2 --iters 2 --warmup 1
	# rank 0 holds its node's 7 and its rail's 8 peers, a shared receive
	# queue of 32 + 2 x 15 slots of 1 KiB and a send slot each, and the barrier's tree is a few levels deep, not 71 messages into rank 0
	jq -e '.ranks == 72 and .algo == "hierarchical" and .group.qps == 15 and .group.cqs == 1
		and .group.ring_bytes == (32 + 3 * 15) * 1024 and .group.tree_depth >= 2 and .group.tree_depth <= 4
		and .group.connect_s > 0 and .group.rendezvous_s >= 0 and .group.first_barrier_s > 0
		and .group.max_rss_bytes > 1048576' <<<"$DOC"
}
@test "hierarchical: nodes that are not equal blocks are refused" {
	need_guest
	a2a_peers 4
	run rdmactl alltoall -r 0 -w 4 --algo hierarchical --ranks-per-node 3 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "--ranks-per-node 3 does not divide the world size 4"
}

# a2a_one_wrong PHASE RANK N ARGS...: run N ranks with one token of RANK's
# send buffer made wrong in PHASE (the RDMACTL_TEST_A2A_CORRUPT hook); every
# rank exits 1 saying "1 tokens arrived wrong", rank 0's document has wrong 1.
a2a_one_wrong() {
	local phase=$1 rank=$2 n=$3 i
	shift 2
	RDMACTL_TEST_A2A_CORRUPT=$phase:$rank:0 a2a_start "$@"
	a2a_wait
	for ((i = 0; i < n; i++)); do
		[ "${RCS[i]}" = 1 ] || { a2a_dump; fail "rank $i exited ${RCS[i]}, not 1"; }
		grep -q "1 tokens arrived wrong" "$BATS_TEST_TMPDIR/rank.$i.out" \
			"$BATS_TEST_TMPDIR/rank.$i.err" || { a2a_dump; fail "rank $i does not say 1 token arrived wrong"; }
	done
	jq -e '.wrong == 1 and .checked_tokens > 0 and .error.code == "EIO"
		and .error.message == "1 tokens arrived wrong"' "$BATS_TEST_TMPDIR/rank.0.out" ||
		{ a2a_dump; fail "rank 0's document does not count 1 wrong token"; }
}

@test "one token wrong in dispatch: wrong 1, every rank exits 1 (flat, ring, hierarchical)" {
	need_guest
	a2a_peers 2
	a2a_one_wrong dispatch 1 2 --algo flat --rendezvous "file:$PEERS" "${SMALL[@]}"
	a2a_peers 3
	a2a_one_wrong dispatch 2 3 --algo ring --rendezvous "file:$PEERS" "${SMALL[@]}"
	# rank 3's first tokens go to rank 0, on the other node
	a2a_peers 4
	a2a_one_wrong dispatch 3 4 --algo hierarchical --ranks-per-node 2 --rendezvous "file:$PEERS" \
		"${SMALL[@]}"
}

# bats test_tags=plain-only
@test "one token wrong in combine: wrong 1, every rank exits 1 (flat, ring, hierarchical)" {
	need_guest
	a2a_peers 2
	a2a_one_wrong combine 1 2 --algo flat --rendezvous "file:$PEERS" "${SMALL[@]}"
	a2a_peers 3
	a2a_one_wrong combine 2 3 --algo ring --rendezvous "file:$PEERS" "${SMALL[@]}"
	a2a_peers 4
	a2a_one_wrong combine 3 4 --algo hierarchical --ranks-per-node 2 --rendezvous "file:$PEERS" \
		"${SMALL[@]}"
}

# a2a_differ N WHO COMMON... -- OTHERS... -- MINE...: ranks 0..N-1 with
# COMMON, those of WHO ("1", or a list "1 3") with MINE after it, the others
# with OTHERS; every rank must stop with a usage error (2) saying $DIFFER,
# before any token moves.
a2a_differ() {
	local n=$1 who=" $2 " i common=() others=() mine=()
	shift 2
	while [[ $1 != -- ]]; do common+=("$1"); shift; done
	shift
	while [[ $1 != -- ]]; do others+=("$1"); shift; done
	shift
	mine=("$@")
	PIDS=()
	for ((i = 0; i < n; i++)); do
		local extra=("${others[@]}")
		[[ $who != *" $i "* ]] || extra=("${mine[@]}")
		rdmactl -j -t 20000 alltoall --rank "$i" --world "$n" "${common[@]}" "${extra[@]}" \
			>"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
	a2a_wait
	for ((i = 0; i < n; i++)); do
		[ "${RCS[i]}" = 2 ] || { a2a_dump; fail "rank $i exited ${RCS[i]}, not 2"; }
		jq -e --arg m "$DIFFER" '.error.message == $m and .error.code == "EINVAL"' \
			"$BATS_TEST_TMPDIR/rank.$i.out" >/dev/null ||
			{ a2a_dump; fail "rank $i does not say: $DIFFER"; }
	done
	run cat "$BATS_TEST_TMPDIR"/rank.*
	refute_output --partial "arrived wrong"
}

@test "ranks given other options: every rank stops at the start with a usage error naming the rank, the option and both values" {
	need_guest
	local i m few=(--hidden 512 --tokens 48 --topk 2 --warmup 1)
	cd "$BATS_TEST_TMPDIR"
	# the README's old example: rank 0 given --hidden and --tokens, the
	# others not (each then counted every token of the others wrong)
	a2a_peers 4
	DIFFER="rank 1's --hidden (7168) differs from rank 0's (4096); 2 more ranks differ from rank 0: every rank needs the same"
	a2a_differ 4 0 --rendezvous "file:$PEERS" --skew zipf:1.2 --iters 2 --warmup 0 \
		-- -- --hidden 4096 --tokens 256
	# ring: rank 0 talks to its neighbours only; rank 2's word goes round the tree
	a2a_peers 4
	DIFFER="rank 2's --skew (zipf:1.5) differs from rank 0's (uniform): every rank needs the same"
	a2a_differ 4 2 --algo ring --rendezvous "file:$PEERS" "${SMALL[@]}" -- -- --skew zipf:1.5
	a2a_peers 3
	DIFFER="rank 2's --iters (6) differs from rank 0's (5): every rank needs the same"
	a2a_differ 3 2 --rendezvous "file:$PEERS" "${few[@]}" -- --iters 5 -- --iters 6
	# one matrix under two names is one routing: they agree
	printf '0,5,1\n2,0,3\n4,1,0\n' >m.csv
	cp m.csv same.csv
	a2a_peers 3
	PIDS=()
	for i in 0 1 2; do
		m=m.csv
		[[ $i != 2 ]] || m=same.csv
		rdmactl -j -t 20000 alltoall --rank "$i" --world 3 --rendezvous "file:$PEERS" \
			"${SMALL[@]}" --skew "matrix:$m" >"rank.$i.out" 2>"rank.$i.err" &
		PIDS+=($!)
	done
	a2a_wait
	[ "${RCS[*]}" = "0 0 0" ] || { a2a_dump; fail "one matrix under two names: ${RCS[*]}"; }
	# ... and another matrix does not
	printf '0,5,1\n2,0,3\n4,2,0\n' >other.csv
	a2a_peers 3
	DIFFER="rank 1's --skew (matrix:other.csv) differs from rank 0's (matrix:m.csv): every rank needs the same"
	a2a_differ 3 1 --rendezvous "file:$PEERS" "${SMALL[@]}" -- --skew matrix:m.csv \
		-- --skew matrix:other.csv
}

# bats test_tags=plain-only
@test "--no-check: a wrong token goes unseen, and the document says it was not checked" {
	need_guest
	a2a_peers 2
	RDMACTL_TEST_A2A_CORRUPT=combine:1:0 a2a_start 2 --rendezvous "file:$PEERS" "${SMALL[@]}" --no-check
	a2a_wait
	[ "${RCS[*]}" = "0 0" ] || { a2a_dump; fail "the ranks exited ${RCS[*]}"; }
	jq -e '.checked == false and .checked_tokens == 0 and .wrong == 0' "$BATS_TEST_TMPDIR/rank.0.out" ||
		{ a2a_dump; fail "rank 0's document claims a check"; }
}

@test "the wrong-token hook: a token the rank does not send, or a malformed value, is refused" {
	need_guest
	a2a_peers 2
	RDMACTL_TEST_A2A_CORRUPT=combine:1:100000 a2a_start 2 --rendezvous "file:$PEERS" "${SMALL[@]}"
	a2a_wait
	[ "${RCS[1]}" = 1 ] || { a2a_dump; fail "rank 1 exited ${RCS[1]}"; }
	grep -q "test hook: rank 1 sends [0-9]* tokens in combine, not token 100000" \
		"$BATS_TEST_TMPDIR/rank.1.out" || { a2a_dump; fail "rank 1 does not name the token"; }
	RDMACTL_TEST_A2A_CORRUPT=both:1:0 run rdmactl alltoall -r 0 -w 2 -R "file:$PEERS"
	assert_failure 2
	assert_output --partial "RDMACTL_TEST_A2A_CORRUPT=both:1:0: not dispatch|combine:RANK:TOKEN"
}

@test "a rank that never joins: the others fail within the timeout, naming it" {
	need_guest
	a2a_peers 3
	PIDS=()
	for i in 0 1; do
		rdmactl -t 4000 alltoall -r "$i" -w 3 -R "file:$PEERS" --hidden 256 \
			>"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
	SECONDS=0
	a2a_wait
	(( SECONDS < 20 )) || fail "took $SECONDS s with a 4 s timeout"
	for i in 0 1; do
		[ "${RCS[i]}" = 1 ] || { a2a_dump; fail "rank $i exited ${RCS[i]}"; }
		grep -q "rank 2 (.*) never answered within 4000 ms" "$BATS_TEST_TMPDIR/rank.$i.err" ||
			{ a2a_dump; fail "rank $i does not name rank 2"; }
	done
}

# a2a_kill_one ARGS...: 4 ranks of ARGS; rank 2 killed mid-run; every other
# rank fails within the 5 s timeout, naming it.
a2a_kill_one() {
	local i p
	a2a_peers 4
	PIDS=()
	for i in 0 1 2 3; do
		# the victim runs unwrapped, so that the kill reaches rdmactl itself
		if [ "$i" = 2 ]; then
			"$RDMACTL" -t 5000 alltoall -r "$i" -w 4 -R "file:$PEERS" --hidden 256 \
				--tokens 16 --iters 100000 "$@" >"$BATS_TEST_TMPDIR/rank.$i.out" \
				2>"$BATS_TEST_TMPDIR/rank.$i.err" &
			VICTIM=$!
		else
			rdmactl -t 5000 alltoall -r "$i" -w 4 -R "file:$PEERS" --hidden 256 \
				--tokens 16 --iters 100000 "$@" >"$BATS_TEST_TMPDIR/rank.$i.out" \
				2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		fi
		PIDS+=($!)
	done
	# mid-run: every rank joined and the exchange under way, then a moment
	wait_sent "${RDMACTL_VM_DEV:-rxe0}" 3000 30
	sleep 0.5
	for p in "${PIDS[@]}"; do
		kill -0 "$p" || { a2a_dump; fail "$*: a rank ended before the kill"; }
	done
	kill -KILL "$VICTIM"
	SECONDS=0
	a2a_wait
	(( SECONDS < 25 )) || fail "$*: took $SECONDS s with a 5 s timeout"
	for i in 0 1 3; do
		[ "${RCS[i]}" = 1 ] || { a2a_dump; fail "$*: rank $i exited ${RCS[i]}"; }
		grep -q "rank 2\b" "$BATS_TEST_TMPDIR/rank.$i.err" ||
			{ a2a_dump; fail "$*: rank $i does not name rank 2"; }
	done
}

# hierarchical: rank 3, rank 2's node, waits in shared memory for its
# blocks, and hears of rank 2 there
@test "a rank killed mid-run: every other rank fails within the timeout, naming it (flat, hierarchical)" {
	need_guest
	a2a_kill_one --algo flat
	a2a_kill_one --algo hierarchical --ranks-per-node 2
}

@test "etcd rendezvous, ranks from torchrun's environment" {
	heavy_sibling "the mpirun test meets in etcd through the same rendezvous; test_group in the unit tiers reads torchrun's variables"
	need_guest
	load '../lib/etcd'
	need_etcd
	start_etcd
	PIDS=()
	for i in 0 1 2 3; do
		RANK=$i WORLD_SIZE=4 LOCAL_RANK=$i rdmactl -j -t 20000 alltoall \
			-R "etcd://$ETCD_EP/a2a$BATS_TEST_NUMBER" --listen "$ADDR" --hidden 256 \
			--tokens 32 --iters 3 >"$BATS_TEST_TMPDIR/rank.$i.out" \
			2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
	a2a_wait
	stop_etcd
	for i in 0 1 2 3; do
		[ "${RCS[i]}" = 0 ] || { a2a_dump; fail "rank $i exited ${RCS[i]}"; }
	done
	jq -e '.wrong == 0 and .ranks == 4 and .rank_source == "torchrun" and .rendezvous == "etcd"' \
		"$BATS_TEST_TMPDIR/rank.0.out"
}

# bats test_tags=plain-only
@test "etcd rendezvous: a second process claiming a running rank is refused" {
	need_guest
	load '../lib/etcd'
	need_etcd
	start_etcd
	local t0 base wait_ms i
	# How long a claimant takes here and now to start, claim and give up
	# on a 1 s wait (BASE): the first claimant's wait is reckoned from it,
	# so that it still waits when the second one claims, however busy the
	# machine (a fixed 4 s once ran out first under a load of 5 to 8).
	t0=$(date +%s%N)
	run rdmactl -t 1000 alltoall -r 0 -w 2 -R "etcd://$ETCD_EP/dupbase" --listen "$ADDR"
	base=$((($(date +%s%N) - t0) / 1000000))
	assert_failure 1
	assert_output --partial "rank 1 never joined job dupbase"
	wait_ms=$((3000 + 3 * base))
	echo "# a claimant's baseline: $base ms; the first waits $wait_ms ms" >&3
	PIDS=()
	# the first claimant waits for a rank 1 that never comes: the second
	# one is refused while it waits
	rdmactl -t "$wait_ms" alltoall -r 0 -w 2 -R "etcd://$ETCD_EP/dup" --listen "$ADDR" \
		>"$BATS_TEST_TMPDIR/rank.0.out" 2>"$BATS_TEST_TMPDIR/rank.0.err" &
	PIDS+=($!)
	# the second starts once the first is seen holding the rank
	for ((i = 0; i < 600; i++)); do
		[ -n "$(etcd_keys dup)" ] && break
		kill -0 "${PIDS[0]}" 2>/dev/null || break
		sleep 0.1
	done
	[ "$(etcd_keys dup)" = rdmactl/dup/rank/00000 ] || { a2a_dump; fail "the first claimant never held rank 0"; }
	run rdmactl -t 30000 alltoall -r 0 -w 2 -R "etcd://$ETCD_EP/dup" --listen "$ADDR"
	assert_failure 1
	assert_output --partial "rank 0 of job dup is claimed already by $ADDR:"
	a2a_wait
	[ "${RCS[0]}" = 1 ] || { a2a_dump; fail "the first claimant exited ${RCS[0]} (a wait of $wait_ms ms)"; }
	grep -q "rank 1 never joined job dup" "$BATS_TEST_TMPDIR/rank.0.err"
	stop_etcd
}

@test "mpirun starts the ranks; they take their ranks from its environment and meet in etcd" {
	need_guest
	command -v mpirun >/dev/null || skip "needs Open MPI's mpirun (openmpi-bin)"
	load '../lib/etcd'
	need_etcd
	start_etcd
	run --separate-stderr timeout --kill-after=5 200 mpirun --allow-run-as-root --oversubscribe \
		--bind-to none -n 4 "$RDMACTL" -j -t 30000 alltoall -R "etcd://$ETCD_EP/mpi" \
		--listen "$ADDR" --hidden 256 --tokens 32 --iters 3 --skew zipf:1.2
	stop_etcd
	[ "$status" = 0 ] || { echo "$output"; echo "$stderr"; fail "mpirun exited $status"; }
	# one document: rank 0's; the others kept quiet
	[ "$(jq -s length <<<"$output")" = 1 ]
	jq -e '.ranks == 4 and .rank == 0 and .rank_source == "openmpi" and .wrong == 0
		and .rendezvous == "etcd"' <<<"$output"
}

# The fake CUDA driver (tests/unit/fake_cuda.c): "GPU memory" that is host
# memory, so that the GPU memory path (host copies in and out, registered
# addresses given to peers) runs here without a GPU. It proves the plumbing,
# not GPUDirect (tests/gpu/run.sh). With RDMACTL_FAKE_CUDA_PROTECT=1 the
# device memory is inaccessible to the CPU: peer memory cannot register it,
# the bounce buffer path runs, and a direct CPU access would crash.
FAKE_CUDA=$BUILD_DIR/tests/unit/libfakecuda.so

need_fake_cuda() {
	jq -e '.features.gpu_memory' <<<"$(rdmactl -j help)" >/dev/null ||
		skip "this rdmactl was built without CUDA"
	[ -f "$FAKE_CUDA" ] || fail "no fake CUDA driver at $FAKE_CUDA"
}

# bats test_tags=plain-only
@test "--mem cuda with no GPU driver: every rank fails at once, naming the cause, before the group" {
	need_guest
	jq -e '.features.gpu_memory' <<<"$(rdmactl -j help)" >/dev/null ||
		skip "this rdmactl was built without CUDA (tests/cli/gpu-mem.bats covers that build)"
	a2a_peers 2
	SECONDS=0
	a2a_start 2 --rendezvous "file:$PEERS" "${SMALL[@]}" --mem cuda:0
	a2a_wait
	(( SECONDS < 15 )) || fail "took $SECONDS s"
	for i in 0 1; do
		[ "${RCS[i]}" = 1 ] || { a2a_dump; fail "rank $i exited ${RCS[i]}"; }
		jq -e '.error.code == "ENODEV" and (.error.message | startswith("--mem cuda:0: GPU memory needs the NVIDIA driver"))' \
			"$BATS_TEST_TMPDIR/rank.$i.out" || { a2a_dump; fail "rank $i"; }
	done
	# a driver with no such GPU says that
	RDMACTL_CUDA_LIB=$FAKE_CUDA RDMACTL_FAKE_CUDA_GPUS=0 run rdmactl alltoall -r 0 -w 2 -R "file:$PEERS" --mem cuda
	assert_failure 1
	assert_output --partial "--mem cuda: no GPU 0: CUDA sees 0 GPUs"
}

@test "--mem cuda (fake driver): flat, ring and hierarchical move every token through GPU memory, checked" {
	need_guest
	need_fake_cuda
	export RDMACTL_CUDA_LIB=$FAKE_CUDA
	# flat, 2 ranks: peer memory registers the device pointer (the fake
	# refuses the dma-buf export, and says so)
	a2a_peers 2
	a2a_ok 2 --algo flat --rendezvous "file:$PEERS" "${SMALL[@]}" --mem cuda:0
	jq -e '.mem == "cuda" and .gpu == 0 and .registration == "peermem" and .node_staged == false
		and (.registration_notes | contains("dma-buf: the export was refused"))' <<<"$DOC"
	# ring, 3 ranks, zipf, device memory closed to the CPU: the bounce buffer
	a2a_peers 3
	RDMACTL_FAKE_CUDA_PROTECT=1 a2a_ok 3 --algo ring --rendezvous "file:$PEERS" "${SMALL[@]}" \
		--skew zipf:1.5 --mem cuda
	jq -e '.mem == "cuda" and .registration == "bounce"
		and (.registration_notes | contains("peer memory: ibv_reg_mr"))' <<<"$DOC"
	# hierarchical, 2 nodes of 2: rails from GPU memory, staged through the
	# node's host shared memory
	a2a_peers 4
	a2a_ok 4 --algo hierarchical --ranks-per-node 2 --rendezvous "file:$PEERS" "${SMALL[@]}" --mem cuda:0
	jq -e '.mem == "cuda" and .node_staged == true and .registration == "peermem"' <<<"$DOC"
	a2a_peers 4
	RDMACTL_FAKE_CUDA_PROTECT=1 a2a_ok 4 --algo hierarchical --ranks-per-node 2 \
		--rendezvous "file:$PEERS" "${SMALL[@]}" --dtype fp8 --mem cuda
	jq -e '.node_staged == true and .registration == "bounce"' <<<"$DOC"
	# host memory says so too
	a2a_peers 2
	a2a_ok 2 --rendezvous "file:$PEERS" "${SMALL[@]}"
	jq -e '.mem == "host" and .gpu == null and .registration == "host" and .registration_notes == null
		and .node_staged == false' <<<"$DOC"
}

GROUP_IMPOSTOR=${GROUP_IMPOSTOR:-$BUILD_DIR/tests/rxe/group_impostor}

# group_listening PORT: a rank with a token listens on PORT (the impostor's
# request, refused for its missing token, says so), within 15 s.
group_listening() {
	local end=$((SECONDS + 15))
	while ((SECONDS < end)); do
		if "$GROUP_IMPOSTOR" "$ADDR" "$1" 0 2 1 | grep -q "not authorised"; then return 0; fi
		sleep 0.1
	done
	echo "nothing with a group token listens on port $1 within 15 s" >&2
	return 1
}

@test "group token: an impostor claiming rank 0 without the token is refused, and the real rank 0 joins" {
	# sanitizer tier: always (a peer without the token against the group's join)
	need_guest
	a2a_peers 2
	local port1 tok=$BATS_TEST_TMPDIR/tok
	port1=$(awk '$1 == 1 { sub(/.*:/, "", $2); print $2 }' "$PEERS")
	printf 's3cret\n' >"$tok"
	chmod 600 "$tok"
	PIDS=()
	RDMACTL_TOKEN=s3cret rdmactl -j -t 30000 alltoall -r 1 -w 2 -R "file:$PEERS" "${SMALL[@]}" \
		>"$BATS_TEST_TMPDIR/rank.1.out" 2>"$BATS_TEST_TMPDIR/rank.1.err" &
	PIDS+=($!)
	# Rank 1 accepts rank 0: claim rank 0 without the token until rank 1
	# listens (before that, the connect itself fails).
	local end=$((SECONDS + 15))
	while ((SECONDS < end)); do
		run "$GROUP_IMPOSTOR" "$ADDR" "$port1" 0 2 1
		if [[ $output == *"not authorised"* || $output == accepted ]]; then break; fi
		sleep 0.1
	done
	assert_failure 1
	assert_output --partial "refused: "
	assert_output --partial "not authorised (this group needs a token)"
	# The 12-byte request of protocol 2 (an older rdmactl): refused by name.
	GROUP_IMPOSTOR_SHORT=1 run "$GROUP_IMPOSTOR" "$ADDR" "$port1" 0 2 1
	assert_failure 1
	assert_output --partial "an older rdmactl (group connect protocol 2)"
	export GROUP_IMPOSTOR_PEERS=$PEERS
	# Tokens that extend the right one or are a prefix of it: rank 1's
	# answer proves nothing under them ...
	run "$GROUP_IMPOSTOR" "$ADDR" "$port1" 0 2 1 s3cretX
	assert_failure 1
	assert_output "refused: rank 1 ($ADDR:$port1) did not prove the group token (a wrong token?)"
	run "$GROUP_IMPOSTOR" "$ADDR" "$port1" 0 2 1 s3cre
	assert_failure 1
	assert_output "refused: rank 1 ($ADDR:$port1) did not prove the group token (a wrong token?)"
	# ... and their proofs, sent all the same, are dropped by rank 1.
	GROUP_IMPOSTOR_NOCHECK=1 run "$GROUP_IMPOSTOR" "$ADDR" "$port1" 0 2 1 s3cretX
	assert_failure 1
	assert_output dropped
	GROUP_IMPOSTOR_NOCHECK=1 run "$GROUP_IMPOSTOR" "$ADDR" "$port1" 0 2 1 s3cre
	assert_failure 1
	assert_output dropped
	# The right token, the exchange reckoned for another rank, or another
	# job: no proof either way.
	run "$GROUP_IMPOSTOR" "$ADDR" "$port1" 0 2 0 s3cret
	assert_failure 1
	assert_output --partial "did not prove the group token"
	GROUP_IMPOSTOR_NOCHECK=1 run "$GROUP_IMPOSTOR" "$ADDR" "$port1" 0 2 0 s3cret
	assert_failure 1
	assert_output dropped
	GROUP_IMPOSTOR_JOB=etcd/another-job GROUP_IMPOSTOR_NOCHECK=1 run "$GROUP_IMPOSTOR" "$ADDR" \
		"$port1" 0 2 1 s3cret
	assert_failure 1
	assert_output dropped
	# What refuses this one is its world size, at the request.
	run "$GROUP_IMPOSTOR" "$ADDR" "$port1" 0 3 1 s3cret
	assert_failure 1
	assert_output --partial "another world size"
	# The real rank 0, its token from a file: the group completes.
	rdmactl -j -t 20000 alltoall -r 0 -w 2 -R "file:$PEERS" "${SMALL[@]}" --token-file "$tok" \
		>"$BATS_TEST_TMPDIR/rank.0.out" 2>"$BATS_TEST_TMPDIR/rank.0.err" &
	PIDS+=($!)
	a2a_wait
	[ "${RCS[0]}" = 0 ] || { a2a_dump; fail "rank 1 exited ${RCS[0]}"; }
	[ "${RCS[1]}" = 0 ] || { a2a_dump; fail "rank 0 exited ${RCS[1]}"; }
	run jq -e '.ranks == 2 and .wrong == 0 and .checked == true' "$BATS_TEST_TMPDIR/rank.0.out"
	assert_success
}

@test "group token: the bytes of a connection's request and proof, sent again on another connection of the same job, are refused" {
	# sanitizer tier: always (a candidate dropped beside one that proves)
	need_guest
	a2a_peers 2
	local port1
	port1=$(awk '$1 == 1 { sub(/.*:/, "", $2); print $2 }' "$PEERS")
	PIDS=()
	RDMACTL_TOKEN=s3cret rdmactl -j -t 10000 alltoall -r 1 -w 2 -R "file:$PEERS" "${SMALL[@]}" \
		>"$BATS_TEST_TMPDIR/rank.1.out" 2>"$BATS_TEST_TMPDIR/rank.1.err" &
	PIDS+=($!)
	group_listening "$port1"
	# The second connection carries the first one's request and proof,
	# byte for byte: dropped. The first one's own proof holds (the right
	# answer): that connection is rank 0 then.
	GROUP_IMPOSTOR_REPLAY=1 GROUP_IMPOSTOR_PEERS=$PEERS GROUP_IMPOSTOR_HOLD=2 \
		run "$GROUP_IMPOSTOR" "$ADDR" "$port1" 0 2 1 s3cret
	assert_success
	assert_line --index 0 "replay: dropped"
	assert_line --index 1 accepted
	# rank 0 (the impostor) left: rank 1 fails, naming it
	a2a_wait
	[ "${RCS[0]}" != 0 ] || { a2a_dump; fail "rank 1 exited 0 without its rank 0"; }
}

@test "group connect: connections claiming rank 0 that never prove (one never came up, three came up silent) hold no place: the real rank 0 joins" {
	# sanitizer tier: always (candidates closed beside the one that proves)
	need_guest
	a2a_peers 2
	local port1 imp tok=$BATS_TEST_TMPDIR/tok i
	local silent=()
	port1=$(awk '$1 == 1 { sub(/.*:/, "", $2); print $2 }' "$PEERS")
	printf 's3cret\n' >"$tok"
	chmod 600 "$tok"
	PIDS=()
	RDMACTL_TOKEN=s3cret rdmactl -j -t 20000 alltoall -r 1 -w 2 -R "file:$PEERS" "${SMALL[@]}" \
		>"$BATS_TEST_TMPDIR/rank.1.out" 2>"$BATS_TEST_TMPDIR/rank.1.err" &
	PIDS+=($!)
	group_listening "$port1"
	# Rank 0's request with no queue pair behind it and no answer to rank
	# 1's accept, as a connector that timed out leaves it.
	GROUP_IMPOSTOR_HALF=1 GROUP_IMPOSTOR_HOLD=30 "$GROUP_IMPOSTOR" "$ADDR" \
		"$port1" 0 2 1 s3cret >"$BATS_TEST_TMPDIR/imp.out" 2>&1 &
	imp=$!
	started "$imp"
	for ((i = 0; i < 100; i++)); do
		grep -q . "$BATS_TEST_TMPDIR/imp.out" && break
		sleep 0.1
	done
	run cat "$BATS_TEST_TMPDIR/imp.out"
	assert_output "half open"
	# Three that came up and never send their proof, held 30 s: rank 0's
	# four places are taken, and a fifth claim, while they are young (5 s
	# from the first), is told to try again (not for good). Each is waited
	# for until it is up, not for a fixed time: on a busy machine the four
	# must still be younger than 5 s when the fifth comes.
	for i in 0 1 2; do
		GROUP_IMPOSTOR_NOPROOF=1 GROUP_IMPOSTOR_HOLD=30 GROUP_IMPOSTOR_PEERS=$PEERS "$GROUP_IMPOSTOR" \
			"$ADDR" "$port1" 0 2 1 s3cret >"$BATS_TEST_TMPDIR/silent.$i.out" 2>&1 &
		silent+=($!)
		started "${silent[i]}"
		local j
		for ((j = 0; j < 100; j++)); do
			grep -q . "$BATS_TEST_TMPDIR/silent.$i.out" && break
			sleep 0.05
		done
		run cat "$BATS_TEST_TMPDIR/silent.$i.out"
		assert_output up
	done
	GROUP_IMPOSTOR_NOPROOF=1 GROUP_IMPOSTOR_HOLD=1 GROUP_IMPOSTOR_PEERS=$PEERS run "$GROUP_IMPOSTOR" \
		"$ADDR" "$port1" 0 2 1 s3cret
	assert_failure 1
	assert_output --partial "that rank has tries unproven; try again"
	# Past their 5 s the oldest makes room: the real rank 0 is accepted, it
	# takes the rank, the group completes, and the silent ones are dropped.
	sleep 5
	rdmactl -j -t 15000 alltoall -r 0 -w 2 -R "file:$PEERS" "${SMALL[@]}" --token-file "$tok" \
		>"$BATS_TEST_TMPDIR/rank.0.out" 2>"$BATS_TEST_TMPDIR/rank.0.err" &
	PIDS+=($!)
	a2a_wait
	[ "${RCS[0]}" = 0 ] || { a2a_dump; fail "rank 1 exited ${RCS[0]}"; }
	[ "${RCS[1]}" = 0 ] || { a2a_dump; fail "rank 0 exited ${RCS[1]}"; }
	run jq -e '.ranks == 2 and .wrong == 0 and .checked == true and .group.connect_s < 5' \
		"$BATS_TEST_TMPDIR/rank.0.out"
	assert_success
	for i in 0 1 2; do
		wait "${silent[i]}" || true
		run cat "$BATS_TEST_TMPDIR/silent.$i.out"
		assert_output $'up\ndropped'
	done
}

# bats test_tags=plain-only
@test "group token: a rank without the token is refused by one that has it, says why, and exits 3" {
	need_guest
	a2a_peers 2
	PIDS=()
	local port1
	port1=$(awk '$1 == 1 { sub(/.*:/, "", $2); print $2 }' "$PEERS")
	# rank 1 gives up on rank 0 after 4 s; rank 0, refused, must not wait
	# out its own 10 s
	RDMACTL_TOKEN=s3cret rdmactl -t 4000 alltoall -r 1 -w 2 -R "file:$PEERS" "${SMALL[@]}" \
		>"$BATS_TEST_TMPDIR/rank.1.out" 2>"$BATS_TEST_TMPDIR/rank.1.err" &
	PIDS+=($!)
	group_listening "$port1"
	run rdmactl -t 10000 alltoall -r 0 -w 2 -R "file:$PEERS" "${SMALL[@]}"
	assert_failure 3
	assert_output --partial "not authorised (this group needs a token)"
	# at the refusal, not at its deadline: another try cannot mend it
	refute_output --partial "never answered"
	a2a_wait
	[ "${RCS[0]}" = 1 ] || { a2a_dump; fail "rank 1 exited ${RCS[0]}"; }
	run cat "$BATS_TEST_TMPDIR/rank.1.err"
	assert_output --partial "rank 0 never connected to rank 1"
}

# bats test_tags=plain-only
@test "group token: a rank without the token, or with another, is refused as the accepting side and as the connecting side, each naming the other" {
	need_guest
	local t0 t1 want
	# rank 1 (accepting) has none: rank 0 is told so at its request
	a2a_peers 2
	PIDS=()
	rdmactl -t 4000 alltoall -r 1 -w 2 -R "file:$PEERS" "${SMALL[@]}" \
		>"$BATS_TEST_TMPDIR/rank.1.out" 2>"$BATS_TEST_TMPDIR/rank.1.err" &
	PIDS+=($!)
	run env RDMACTL_TOKEN=s3cret "$RDMACTL" -t 10000 alltoall -r 0 -w 2 -R "file:$PEERS" "${SMALL[@]}"
	[ "$status" != 0 ] || fail "rank 0 joined a rank without the token"
	assert_output --partial "this rank has no group token, the connecting one has"
	a2a_wait
	# another token on either side: the connecting rank refuses the
	# accepting rank's proof (it never sends its own), and the accepting
	# rank names the connection that never proved
	for want in accepting connecting; do
		t0=s3cret t1=s3cretX
		[[ $want == accepting ]] || { t0=s3cretX t1=s3cret; }
		a2a_peers 2
		PIDS=()
		RDMACTL_TOKEN=$t1 rdmactl -t 4000 alltoall -r 1 -w 2 -R "file:$PEERS" "${SMALL[@]}" \
			>"$BATS_TEST_TMPDIR/rank.1.out" 2>"$BATS_TEST_TMPDIR/rank.1.err" &
		PIDS+=($!)
		run env RDMACTL_TOKEN=$t0 "$RDMACTL" -t 10000 alltoall -r 0 -w 2 -R "file:$PEERS" "${SMALL[@]}"
		[ "$status" != 0 ] || fail "$want: rank 0 joined a rank with another token"
		assert_output --regexp "rank 1 \\($ADDR:[0-9]+\\) did not prove the group token"
		refute_output --partial "never answered"
		a2a_wait
		[ "${RCS[0]}" != 0 ] || { a2a_dump; fail "$want: rank 1 exited 0"; }
		run cat "$BATS_TEST_TMPDIR/rank.1.err"
		assert_output --partial "rank 0 never connected to rank 1"
		assert_output --partial "claiming rank 0"
	done
}

# retrans_of DEV: the sum of the files alltoall counts as its port's
# retransmissions (rxe has the first)
retrans_of() {
	local f n=0 v
	for f in completer_retry_err local_ack_timeout_err roce_adp_retrans; do
		v=$(cat "/sys/class/infiniband/$1/ports/1/hw_counters/$f" 2>/dev/null) || continue
		n=$((n + v))
	done
	echo "$n"
}

# a2a_bg ARGS...: 4 ranks, 0 and 1 on rxe_a, 2 and 3 on rxe_b, under
# --background pairs (0 and 2, 1 and 3 write bulk into each other across
# the veth pair, over the peers file PEERS.bg's ports); rank 0's document
# in DOC, its two phases' figures shown.
a2a_bg() {
	a2a_peers 4 "$RDMACTL_VM_ADDR_A" "$RDMACTL_VM_ADDR_B"
	awk '{ split($2, e, ":"); print $1, e[1] ":" e[2] + 50 }' "$PEERS" >"$PEERS.bg"
	a2a_ok 4 --rendezvous "file:$PEERS" --hidden 128 --tokens 16 --iters 10 --warmup 1 \
		--background pairs --background-size 32K --background-depth 4 "$@"
	jq -c '.background | {peer, bytes} + ([.dispatch, .combine] | map([.idle.p50_us, .loaded.p50_us,
		.idle.p99_us, .loaded.p99_us, .leakage_p50, .leakage_p99] | map(. * 100 | round / 100))
		| {dispatch: .[0], combine: .[1]})' <<<"$DOC"
	jq -e '.background.mode == "pairs" and .background.peer == 2 and .background.bytes > 0
		and .background.dispatch.loaded.samples == 10 and .background.combine.idle.samples == 10' <<<"$DOC" ||
		{ a2a_dump; fail "not a run under --background pairs"; }
}

@test "--background pairs behind a tbf on the link: dispatch and combine leak, loaded p99 above idle" {
	need_two_nics
	# everything from rxe_b to rxe_a waits in one 10 Mbit/s queue: the bulk
	# of 2 -> 0 and 3 -> 1 (256 KiB, 200 ms of it) stands in it in front of
	# the blocks rank 0 waits for in each phase, which take a few ms idle
	# (on va, rank 0's own writes wait there, and its untimed flush before
	# each iteration may take the wait)
	SLOWED=vb
	tc qdisc add dev vb root tbf rate 10mbit burst 32kb limit 2mb
	local r0
	r0=$(retrans_of "$RDMACTL_VM_DEV_A")
	a2a_bg
	# Every phase's tail leaks (p99 of 10 samples: the slowest, one behind the
	# bulk; seen x6.5 to x59). How many iterations wait behind the bulk
	# varies, so a median leaks less: in the guest the larger of the two
	# phases' was x18.6 to x72 over 21 runs, but in CI under ASan x4.1 (both
	# phases x4.1) and, on va, x4.2 (beside x0.64). The mutant that loads
	# the idle pass too: x0.94 and x0.95.
	jq -e '[.background.dispatch, .background.combine] | all(.loaded.p99_us > .idle.p99_us
		and .leakage_p99 > 2) and (map(.leakage_p50) | max > 2)' <<<"$DOC"
	# rank 0's port and its counters: every kind in one of moved, still and
	# absent; rxe's retransmissions there (moved or still), its missing CNP
	# counter absent, not 0; what moved over the two passes no more than the
	# port's own files moved over the whole run (moves, not totals)
	jq -c '.background.congestion_counters' <<<"$DOC"
	jq -e --arg dev "$RDMACTL_VM_DEV_A" --argjson d "$(($(retrans_of "$RDMACTL_VM_DEV_A") - r0))" '
		.background.congestion_counters | .device == $dev and .port == 1
		and ((.still + (.moved | keys) + .absent) | sort) == ([
			"retransmissions", "out_of_sequence", "duplicate_requests", "rnr_naks", "cnp_sent",
			"cnp_handled", "ecn_marked", "discards", "xmit_wait"] | sort)
		and (.absent | index("cnp_sent") != null) and (.absent | index("retransmissions") == null)
		and (.moved.retransmissions // 0) + (.moved_idle.retransmissions // 0) <= $d' <<<"$DOC"
}

# The wrong answer: the same load on a free link. rxe under emulation
# shares the two CPUs between the bulk and the exchange, so a phase's p50
# may move a few times either way (seen 0.45 to 3.8); the two phases' mean
# stays far below the bottleneck's leakage (seen 21 to 78 each).
# bats test_tags=plain-only
@test "--background pairs without a qdisc: the leakage stays near 1" {
	need_two_nics
	a2a_bg
	jq -e '[.background.dispatch, .background.combine] | all(.leakage_p50 > 0)
		and (map(.leakage_p50) | add / 2 < 5)' <<<"$DOC"
}
