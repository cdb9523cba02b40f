#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl sweep on real SoftRoCE: ranks on the two rxe devices of the veth
# pair (two addresses on each end, so that one link or one rank's links can
# be slowed with tc), every pair measured; a slowed link and a slowed node
# named, with exit 1; the heatmap rendered to PNG by rsvg-convert.
#
# The guest's rxe loses packets under load and stalls on the retransmit
# timer, so its bandwidth varies tenfold from pair to pair, and a stall can
# take a direction to a thousandth of the median: the tests leave the
# fleet's bandwidth unjudged (--slow-ratio 0; the unit tests judge it on
# crafted matrices), judge latency with --lat-ratio 20, and slow a link with
# a netem delay of 20 ms, which puts its latency a hundred times above the
# others'.

bats_require_minimum_version 1.5.0
load helpers
load '../lib/metrics'

# Ranks 0 and 1 on rxe_a (198.18.1.1 and .3), 2 and 3 on rxe_b (.2 and .4):
# each pair across the veth crosses it; 0-1 and 2-3 stay on their device.
JUDGE=(--slow-ratio 0 --lat-ratio 20)
SMALL=(--duration 0.3 --msg-size 16K --depth 4 --lat-iters 40)

setup() {
	need_two_nics
	extra_addrs
	# ranks 4 and 5 (the healthy test) share the first addresses, on other ports
	ADDRS=("$RDMACTL_VM_ADDR_A" "$EXTRA_A" "$RDMACTL_VM_ADDR_B" "$EXTRA_B" "$RDMACTL_VM_ADDR_A"
		"$RDMACTL_VM_ADDR_B")
}

# sweep_start N ARGS...: ranks 0..N-1 on ADDRS in the background (-j,
# stdout in rank.I.out, stderr in .err); PIDS holds them.
sweep_start() {
	local n=$1 i
	shift
	PEERS=$BATS_TEST_TMPDIR/peers
	PORT_BASE=$((26000 + BATS_TEST_NUMBER * 100 + ${PORT_SEQ:-0} * 10))
	PORT_SEQ=$((${PORT_SEQ:-0} + 1))
	: >"$PEERS"
	for ((i = 0; i < n; i++)); do
		echo "$i ${ADDRS[i]}:$((PORT_BASE + i)) node$i" >>"$PEERS"
	done
	PIDS=()
	for ((i = 0; i < n; i++)); do
		[ "$i" != "${SWEEP_SKIP:-}" ] || continue
		local json=-j
		[[ $i != 0 || -z ${SWEEP_TEXT:-} ]] || json=
		rdmactl $json -t "${SWEEP_TIMEOUT:-20000}" sweep --rank "$i" --world "$n" --rendezvous "file:$PEERS" \
			"${SMALL[@]}" "${JUDGE[@]}" "$@" \
			>"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
}

# Slow with netem the traffic that leaves va from SRC (to DST, or to all).
slow_from() {
	local src=$1 dst=${2:-}
	tc qdisc add dev va root handle 1: prio
	tc qdisc add dev va parent 1:3 handle 30: netem delay 20ms limit 5000
	if [ -n "$dst" ]; then
		tc filter add dev va parent 1: protocol ip u32 match ip src "$src/32" \
			match ip dst "$dst/32" flowid 1:3
	else
		tc filter add dev va parent 1: protocol ip u32 match ip src "$src/32" flowid 1:3
	fi
	SLOWED=1
}

# Drop everything that leaves va from SRC to DST: their connect request is
# never answered (the first call puts the qdisc in place).
drop_pair() {
	if [ -z "${DROPPING:-}" ]; then
		tc qdisc add dev va root handle 1: prio
		tc qdisc add dev va parent 1:3 handle 30: netem loss 100%
		DROPPING=1
		SLOWED=1
	fi
	tc filter add dev va parent 1: protocol ip u32 match ip src "$1/32" match ip dst "$2/32" flowid 1:3
}

teardown() {
	started "${PIDS[@]}"
	[ -z "${SLOWED:-}" ] || tc qdisc del dev va root 2>/dev/null || true
	extra_addrs_del
	common_teardown
}

# bats test_tags=plain-only
@test "healthy: 6 ranks over the veth pair, every pair measured both ways, exit 0, the heatmap renders" {
	sweep_start 6 --svg "$BATS_TEST_TMPDIR/sweep.svg" --metrics "$BATS_TEST_TMPDIR/sweep.prom"
	ranks_wait
	all_exit 0
	jq -e '.healthy == true and .ranks == 6 and .rounds == 5 and .directions_measured == 30
		and (.outliers | length) == 0 and (.bad_nodes | length) == 0
		and .failed_pairs == []' <<<"$DOC" ||
		{ ranks_dump; fail "rank 0's verdict is not healthy"; }
	# matrices complete: 6 x 6, null on the diagonal only, figures elsewhere
	jq -e '.matrices | [.write_gbit_per_s, .write_lat_p50_us, .read_lat_p50_us, .read_lat_p99_us]
		| all(length == 6 and all(length == 6)
		  and ([to_entries[] | .key as $i | .value | to_entries[]
			| (.key == $i) == (.value == null)] | all))' <<<"$DOC" ||
		{ ranks_dump; fail "a matrix is not complete"; }
	jq -e '[.matrices.write_gbit_per_s[][] | select(. != null)] | all(. > 0)' <<<"$DOC"
	# bandwidth judged where a direction crosses the veth (3 x 3 pairs, both
	# ways), on its rate while data flows; not between two ranks of one
	# device, which loop back inside it (on one device alone, no direction
	# is judged: issue 48's false alarms)
	jq -e '.fleet.write_judged_directions == 18
		and ([.matrices.write_flow_gbit_per_s[][] | select(. != null)] | length == 30 and all(. > 0))' <<<"$DOC" ||
		{ ranks_dump; fail "not the 18 directions across the veth judged"; }
	# the counters that moved: an object a cell, the diagonal's empty
	jq -e '.matrices.counters | length == 6 and all(length == 6 and all(type == "object"))
		and ([range(6) as $i | .[$i][$i]] | all(. == {}))' <<<"$DOC"
	jq -e '[.nodes[].device] == [env.RDMACTL_VM_DEV_A, env.RDMACTL_VM_DEV_A,
		env.RDMACTL_VM_DEV_B, env.RDMACTL_VM_DEV_B, env.RDMACTL_VM_DEV_A, env.RDMACTL_VM_DEV_B]
		and .nodes[1].host == "198.18.1.3"' <<<"$DOC"
	# the other ranks print nothing
	[ ! -s "$BATS_TEST_TMPDIR/rank.1.out" ] || fail "rank 1 printed on stdout"
	# --metrics: rank 0's verdict and each direction's bandwidth
	metrics_check "$BATS_TEST_TMPDIR/sweep.prom"
	grep -qE '^rdmactl_sweep_healthy\{.*\} 1$' "$BATS_TEST_TMPDIR/sweep.prom"
	[ "$(grep -c '^rdmactl_sweep_write_bytes_per_second{' "$BATS_TEST_TMPDIR/sweep.prom")" = 30 ]
	# one cell per direction, none marked; rendered to a PNG
	[ "$(grep -c '<rect[^>]*><title>[0-9] -&gt; [0-9]' "$BATS_TEST_TMPDIR/sweep.svg")" = 30 ]
	[ "$(grep -c 'stroke-width="4.0"' "$BATS_TEST_TMPDIR/sweep.svg")" = 0 ]
	command -v rsvg-convert >/dev/null || skip "rsvg-convert (librsvg2-bin) is not installed"
	rsvg-convert -o "$BATS_TEST_TMPDIR/sweep.png" "$BATS_TEST_TMPDIR/sweep.svg"
	[ "$(head -c 8 "$BATS_TEST_TMPDIR/sweep.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
}

@test "one slowed link: exactly that pair is named, no node, exit 1 on every rank" {
	# rank 1 (.3) to rank 3 (.4): the data one way, the acknowledgements the other
	slow_from "$EXTRA_A" "$EXTRA_B"
	sweep_start 4 --svg "$BATS_TEST_TMPDIR/sweep.svg"
	ranks_wait
	echo "$DOC" # bats --show-output-of-passing-tests shows the verdict
	all_exit 1
	jq -e '.healthy == false and (.bad_nodes | length) == 0' <<<"$DOC" ||
		{ ranks_dump; fail "not the verdict of one slow link"; }
	run jq -c '[.outliers[] | [.from, .to] | sort] | unique' <<<"$DOC"
	assert_output "[[1,3]]"
	jq -e '[.outliers[].reasons[]] | index("latency") != null' <<<"$DOC"
	jq -e '.matrices.write_lat_p50_us[1][3] > 10000' <<<"$DOC"
	# both of its directions stood out and were timed a second time: slow both times
	jq -e '.fleet.latency_retimed_directions >= 2' <<<"$DOC"
	# the outlier cells are framed in the heatmap, and it still renders
	[ "$(grep -c 'stroke-width="4.0"' "$BATS_TEST_TMPDIR/sweep.svg")" = "$(jq '.outliers | length' <<<"$DOC")" ]
	command -v rsvg-convert >/dev/null || skip "rsvg-convert (librsvg2-bin) is not installed"
	rsvg-convert -o "$BATS_TEST_TMPDIR/sweep.png" "$BATS_TEST_TMPDIR/sweep.svg"
}

@test "one slowed node: its links across the veth slowed, the node is named, exit 1" {
	heavy_sibling "'one slowed link' (the same measurement and verdict path; test_sweep judges a slow node)"
	# everything rank 1 (.3) sends over the veth: its pairs with ranks 2 and
	# 3; its pair with rank 0 stays on rxe_a
	slow_from "$EXTRA_A"
	sweep_start 4
	ranks_wait
	all_exit 1
	run jq -c '[.bad_nodes[].rank]' <<<"$DOC"
	assert_output "[1]"
	jq -e '.bad_nodes[0].outlier_pairs == 2 and .bad_nodes[0].pairs == 3' <<<"$DOC"
	# every outlier is one of its pairs
	jq -e '[.outliers[] | select(.from != 1 and .to != 1)] | length == 0' <<<"$DOC"
	# the text names it with its address and device, the verdict last
	SWEEP_TEXT=1 sweep_start 4
	ranks_wait
	echo "$DOC" # bats --show-output-of-passing-tests shows the text
	all_exit 1
	grep -q "^node: rank 1 (198.18.1.3 $RDMACTL_VM_DEV_A:1 on " <<<"$DOC" || { ranks_dump; fail "the text does not name rank 1"; }
	grep -q "^verdict: NOT healthy: " <<<"$DOC"
	grep -q "the named node: its NIC and cable" <<<"$DOC"
}

@test "a rank that never joins is named, with the reason, and the others exit 1" {
	heavy_sibling "alltoall's 'a rank that never joins' (the same group join)"
	SWEEP_SKIP=3 SWEEP_TIMEOUT=4000 sweep_start 4
	ranks_wait
	all_exit 1
	jq -e '.error.message | test("rank 3 .*never answered")' <<<"$DOC" ||
		{ ranks_dump; fail "rank 0 does not name rank 3"; }
	jq -e '.error.message | test("rank 3")' "$BATS_TEST_TMPDIR/rank.2.out"
}

@test "a hostile rank gathers rank 0 a row, then a node record, of unterminated strings with escapes: rank 0 refuses it by name and prints no escape" {
	# sanitizer tier: always (strings a peer sent, read by rank 0)
	local what
	for what in row node; do
		SWEEP_SKIP=1 sweep_start 2
		SWEEP_HOSTILE_ONLY=$what "$BUILD_DIR/tests/rxe/sweep_hostile" 1 2 "$PEERS" \
			>"$BATS_TEST_TMPDIR/hostile.out" 2>&1 &
		PIDS+=($!)
		ranks_wait
		echo "$what: ranks exited ${RCS[*]}: $DOC $(cat "$BATS_TEST_TMPDIR/rank.0.err" "$BATS_TEST_TMPDIR/hostile.out")"
		assert_equal "${RCS[0]}" 1
		jq -e --arg w "$what" '.error.message | test("rank 1 sent a " + $w + " .*refused")' <<<"$DOC"
		run grep -l $'\033' "$BATS_TEST_TMPDIR/rank.0.out" "$BATS_TEST_TMPDIR/rank.0.err"
		assert_failure
	done
}

@test "--pairs: only the pairs asked for are measured, the rest null" {
	heavy_sibling "'healthy: 6 ranks over the veth pair' (the same rounds; test_sweep parses --pairs files)"
	printf '0 2\n3 1 # either order\n' >"$BATS_TEST_TMPDIR/pairs"
	sweep_start 4 --pairs "$BATS_TEST_TMPDIR/pairs"
	ranks_wait
	all_exit 0
	jq -e '.healthy and .pairs == 2 and .directions_measured == 4
		and .matrices.write_gbit_per_s[0][1] == null and .matrices.write_gbit_per_s[2][3] == null
		and .matrices.write_gbit_per_s[0][2] > 0 and .matrices.write_gbit_per_s[2][0] > 0
		and .matrices.write_gbit_per_s[1][3] > 0 and .matrices.write_gbit_per_s[3][1] > 0' <<<"$DOC" ||
		{ ranks_dump; fail "not the pairs asked for"; }
}

# bats test_tags=plain-only
@test "a pair that cannot connect: that pair is named with its reason, the others are measured, every rank exits 1" {
	# everything from rank 1 (.3) to rank 3 (.4) is dropped: their connect
	# request is never answered; the group leaves the pair out
	drop_pair "$EXTRA_A" "$EXTRA_B"
	SWEEP_TIMEOUT=4000 sweep_start 4
	ranks_wait
	all_exit 1
	jq -e '.healthy == false and (.failed_pairs | length) == 1' <<<"$DOC" ||
		{ ranks_dump; fail "not one failed pair"; }
	run jq -c '.failed_pairs[0] | [.ranks[].rank, .reason]' <<<"$DOC"
	assert_output '[1,3,"timeout"]'
	jq -e '.failed_pairs[0].ranks[0].host == "198.18.1.3" and .failed_pairs[0].ranks[1].host == "198.18.1.4"
		and .failed_pairs[0].ranks[0].device == env.RDMACTL_VM_DEV_A
		and .failed_pairs[0].ranks[1].device == env.RDMACTL_VM_DEV_B
		and (.failed_pairs[0].error | test("198.18.1.4"))' <<<"$DOC"
	# the other five pairs are measured both ways; the failed one is null
	jq -e '.directions_measured == 10 and .matrices.write_gbit_per_s[1][3] == null
		and .matrices.write_gbit_per_s[3][1] == null
		and ([.matrices.write_gbit_per_s | to_entries[] | .key as $i | .value | to_entries[]
		      | select(.key != $i and ([$i, .key] | sort) != [1, 3]) | .value > 0] | all)' <<<"$DOC" ||
		{ ranks_dump; fail "the other pairs are not measured"; }
	# only that pair is an outlier
	run jq -c '[.outliers[] | [.from, .to] | sort] | unique' <<<"$DOC"
	assert_output "[[1,3]]"
	# the text says which pair failed and why
	SWEEP_TEXT=1 SWEEP_TIMEOUT=4000 sweep_start 4
	ranks_wait
	all_exit 1
	grep -q "^pair failed: rank 1 (198.18.1.3 $RDMACTL_VM_DEV_A:1 on .*) - rank 3 (198.18.1.4 $RDMACTL_VM_DEV_B:1 on .*): timeout: " <<<"$DOC" ||
		{ ranks_dump; fail "the text does not name the pair"; }
	grep -q "^verdict: NOT healthy: 1 of 6 pairs could not connect" <<<"$DOC"
}

@test "two pairs that cannot connect, one of rank 0's: both named, the rest measured and relayed to rank 0" {
	# rank 0 (.1) to rank 2 (.2), rank 1 (.3) to rank 3 (.4): what is left
	# is the ring 0-1-2-3-0, so rank 2's results reach rank 0 through rank 1
	drop_pair "$RDMACTL_VM_ADDR_A" "$RDMACTL_VM_ADDR_B"
	drop_pair "$EXTRA_A" "$EXTRA_B"
	SWEEP_TIMEOUT=4000 sweep_start 4
	ranks_wait
	all_exit 1
	run jq -c '[.failed_pairs[] | [.ranks[].rank, .reason]]' <<<"$DOC"
	assert_output '[[0,2,"timeout"],[1,3,"timeout"]]'
	jq -e '.healthy == false and .directions_measured == 8
		and .matrices.write_gbit_per_s[0][2] == null and .matrices.write_gbit_per_s[2][0] == null
		and .matrices.write_gbit_per_s[2][1] > 0 and .matrices.write_gbit_per_s[2][3] > 0
		and .nodes[2].device == env.RDMACTL_VM_DEV_B' <<<"$DOC" ||
		{ ranks_dump; fail "rank 2's results did not reach rank 0"; }
}
