#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl sweep --load and --incast on real SoftRoCE: three or four ranks on
# the two rxe devices of the veth pair (two addresses on each end, as
# sweep.bats places them), a real bottleneck made by a tbf qdisc on the
# traffic into one rank's address; the loaded latency rises above the idle
# one there,
# the leakage is printed and that rank's port is named, not the ports that
# only send into it; without the qdisc no port is named. An incast into a
# rate-limited receiver flattens at its second step. Figures (leakage,
# goodput against N) belong in bench/sweep-load-bench.sh, not here.

bats_require_minimum_version 1.5.0
load helpers

SMALL=(--msg-size 16K --depth 4 --lat-iters 20 --slow-ratio 0 --lat-ratio 20)

setup() {
	need_two_nics
	extra_addrs
}

# ranks N ADDR... -- ARGS: N ranks on the addresses given, in the background.
ranks() {
	local n=$1 i
	shift
	local addrs=()
	while [[ $1 != -- ]]; do
		addrs+=("$1")
		shift
	done
	shift
	PEERS=$BATS_TEST_TMPDIR/peers
	PORT_BASE=$((28000 + BATS_TEST_NUMBER * 100 + ${PORT_SEQ:-0} * 10))
	PORT_SEQ=$((${PORT_SEQ:-0} + 1))
	: >"$PEERS"
	for ((i = 0; i < n; i++)); do
		echo "$i ${addrs[i]}:$((PORT_BASE + i)) node$i" >>"$PEERS"
	done
	PIDS=()
	for ((i = 0; i < n; i++)); do
		rdmactl -j -t 20000 sweep --rank "$i" --world "$n" --rendezvous "file:$PEERS" "${SMALL[@]}" "$@" \
			>"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
}

# A tbf bottleneck of RATE on what leaves DEV for DST (the link into DST).
bottleneck() {
	local dev=$1 dst=$2 rate=$3
	tc qdisc add dev "$dev" root handle 1: prio
	tc qdisc add dev "$dev" parent 1:3 handle 30: tbf rate "$rate" burst 32kb limit 4mb
	tc filter add dev "$dev" parent 1: protocol ip u32 match ip dst "$dst/32" flowid 1:3
	SLOWED+=("$dev")
}

teardown() {
	started "${PIDS[@]}"
	local d
	for d in "${SLOWED[@]}"; do tc qdisc del dev "$d" root 2>/dev/null || true; done
	extra_addrs_del
	common_teardown
}

FOUR=("$RDMACTL_VM_ADDR_A" "$EXTRA_A" "$RDMACTL_VM_ADDR_B" "$EXTRA_B")

@test "--load same-port with a tbf into rank 3: its loaded latency leaks, the leakage printed, rank 3's port named and no other" {
	SLOWED=()
	# ranks 0, 1 and 2 on rxe_a (2 on .1's other port), 3 alone on rxe_b
	# (.4), behind the qdisc on the link into it: while one of 0, 1, 2
	# times its latency into 3, the other two write into 3 through the
	# qdisc (two loaders: one that stalls on rxe's retransmit timer leaves
	# the queue standing)
	bottleneck va "$EXTRA_B" 10mbit
	ranks 4 "$RDMACTL_VM_ADDR_A" "$EXTRA_A" "$RDMACTL_VM_ADDR_A" "$EXTRA_B" -- --load same-port \
		--leak-ratio 20 --duration 0.2 --svg "$BATS_TEST_TMPDIR/sweep.svg"
	ranks_wait
	# from, to, WRITE p50 idle and loaded, p99 idle and loaded, the two leakages
	echo "$DOC" | jq -c '.load | {write_leak_median, blamed_ports, d: [.directions_loaded[] | [.from, .to,
		(.write | .idle.p50_us, .loaded.p50_us, .idle.p99_us, .loaded.p99_us, .leakage_p50, .leakage_p99)
		| . * 10 | round / 10]]}'
	all_exit 1
	jq -e '.healthy == false and .load.mode == "same-port" and (.load.directions_loaded | length) == 12' <<<"$DOC" ||
		{ ranks_dump; fail "not a loaded sweep of 12 directions"; }
	# the directions through the qdisc, at least two of the three: loaded
	# p99 above idle, every sample behind the queue (the p50's leakage, as
	# judged, tenfold and more)
	jq -e '[.load.directions_loaded[] | select(.to == 3)
		| .write.loaded.p99_us > .write.idle.p99_us and .write.leakage_p50 > 10 and .leaks]
		| map(select(.)) | length >= 2' <<<"$DOC"
	# the port behind it: rank 3's, as the receiver; not the senders' (0, 1, 2)
	run jq -c '[.load.blamed_ports[] | [.rank, .device, .sides]]' <<<"$DOC"
	assert_output "[[3,\"$RDMACTL_VM_DEV_B\",[\"receive\"]]]"
	run jq -c '[.outliers[] | select(.reasons | index("leakage")) | .to] | unique' <<<"$DOC"
	assert_output "[3]"
	# --svg: each direction's WRITE and READ latency CDFs beside the
	# heatmap, idle and loaded, the leaking ones red: four step curves a
	# direction, each through every sample (up to 128) or 100 to 128 of its
	# quantiles; what rsvg-convert renders (an XML error fails it)
	jq -e '.load_svg | endswith("/sweep-load.svg")' <<<"$DOC"
	[ "$(grep -c '<polyline' "$BATS_TEST_TMPDIR/sweep-load.svg")" = 48 ]
	[ "$(grep -c '<polyline[^>]*stroke="#d73027"' "$BATS_TEST_TMPDIR/sweep-load.svg")" = "$(jq '[.load.directions_loaded[] | select(.leaks)] | length * 2' <<<"$DOC")" ]
	run bash -c "sed -n 's/.*points=\"\\([^\"]*\\)\".* us (\\([0-9]*\\)).*/\\2 \\1/p' '$BATS_TEST_TMPDIR/sweep-load.svg' |
		awk '{ k = (NF - 1) / 2; bad += !(\$1 <= 128 ? k == \$1 : k >= 100 && k <= 128) } END { print NR, bad }'"
	assert_output "48 0"
	command -v rsvg-convert >/dev/null || skip "rsvg-convert (librsvg2-bin) is not installed"
	rsvg-convert -o "$BATS_TEST_TMPDIR/sweep-load.png" "$BATS_TEST_TMPDIR/sweep-load.svg"
	[ "$(head -c 8 "$BATS_TEST_TMPDIR/sweep-load.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
	# the counters: each rank's kinds, rxe's present ones moved or still,
	# mlx5's CNP counters absent (not 0)
	jq -e '.congestion_counters | length == 4 and all(
		(.absent | index("cnp_sent") != null) and (.still + (.moved | keys) | index("retransmissions") != null))' <<<"$DOC"
}

# The wrong answer to the tbf test above: no port named, exit 0. rxe's bulk
# shares the guest's two CPUs with the samples, so the loaded median moves
# with the machine: 1.06 to 1.65 in one guest (the bulk through its own
# window or through the engine's burst alike), 2.04 and 2.05 in two
# clean-clone CI runs; a tbf's leakage blames at 20.
# bats test_tags=plain-only
@test "--load same-port without a qdisc: leakage near 1, no port named, exit 0" {
	SLOWED=()
	ranks 4 "${FOUR[@]}" -- --load same-port --leak-ratio 20 --duration 0.2
	ranks_wait
	echo "$DOC" | jq -c '.load | {write_leak_median, read_leak_median, blamed_ports,
		p50: [.directions_loaded[].write.leakage_p50 | . * 100 | round / 100]}'
	all_exit 0
	jq -e '.healthy and (.load.directions_loaded | length) == 12 and .load.blamed_ports == []
		and .load.write_leak_median < 3 and .load.write_leak_median > 0.5' <<<"$DOC" ||
		{ ranks_dump; fail "not a healthy loaded sweep"; }
}

@test "--incast into a receiver behind a tbf: goodput flattens at 2 senders, Jain's index per step" {
	SLOWED=()
	# rank 0 on rxe_a, the senders on rxe_b: everything into rank 0 crosses vb
	bottleneck vb "$RDMACTL_VM_ADDR_A" 40mbit
	ranks 4 "$RDMACTL_VM_ADDR_A" "$RDMACTL_VM_ADDR_B" "$EXTRA_B" "$RDMACTL_VM_ADDR_B" -- --incast 0 --duration 0.4 \
		--svg "$BATS_TEST_TMPDIR/incast.svg"
	ranks_wait
	echo "$DOC" | jq -c '[.steps[] | [.senders, .goodput_gbit_per_s, .jain, .latency.p99_us]], .knee'
	all_exit 0
	jq -e '.incast and .receiver == 0 and ([.steps[].senders] == [1, 2, 3])
		and ([.steps[] | .shares | length] == [1, 2, 3])' <<<"$DOC" ||
		{ ranks_dump; fail "not an incast of 1, 2, 3 senders"; }
	# one sender already fills the 40 Mbit/s qdisc: the second adds nothing
	jq -e '.steps[0].goodput_gbit_per_s < 0.06 and .steps[0].goodput_gbit_per_s > 0.01' <<<"$DOC"
	jq -e '.knee.senders == 2 and .knee.flat' <<<"$DOC"
	jq -e '[.steps[].jain] | all(. > 0 and . <= 1)' <<<"$DOC"
	# --svg: a bar a step, the knee's red; each step's slowest sender's
	# latency CDF beside them (its tail as the report gives it); it renders
	[ "$(grep -c '<rect[^>]*><title>N=' "$BATS_TEST_TMPDIR/incast.svg")" = 3 ]
	grep -q '<title>N=2: .*(the knee)' "$BATS_TEST_TMPDIR/incast.svg"
	[ "$(grep -c '<polyline[^>]*><title>N=[123], slowest sender' "$BATS_TEST_TMPDIR/incast.svg")" = 3 ]
	t99=$(sed -n 's/.*<title>N=1, slowest sender rank [0-9]*: p50 [0-9.]* p99 \([0-9.]*\) .*/\1/p' "$BATS_TEST_TMPDIR/incast.svg")
	jq -e --argjson t "${t99:-null}" '.steps[0].latency.p99_us - $t | . < 0.06 and . > -0.06' <<<"$DOC"
	command -v rsvg-convert >/dev/null || skip "rsvg-convert (librsvg2-bin) is not installed"
	rsvg-convert -o "$BATS_TEST_TMPDIR/incast.png" "$BATS_TEST_TMPDIR/incast.svg"
}
