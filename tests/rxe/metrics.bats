#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# --metrics FILE over real SoftRoCE: what a write benchmark, an alltoall of
# 2 ranks and a serving register write, read by promtool (tests/lib/metrics
# .bash; tests/cli/metrics.bats shows the check refusing broken files), and
# the figures against what was moved.

bats_require_minimum_version 1.5.0
load helpers
load '../lib/metrics'

setup() {
	need_guest
	require_promtool
	PORT=$(next_port)
	M=$BATS_TEST_TMPDIR
}

# two_ranks COMMAND PORT ARGS...: ranks 0 and 1 of COMMAND (alltoall or
# multicast) through a peers file, -j, their output in $M/rank.I.out and
# .err; fails naming a rank that exits non-zero.
two_ranks() {
	local cmd=$1 port=$2 i p=()
	shift 2
	group_peers "$port" 2
	for i in 0 1; do
		rdmactl -j -t 20000 "$cmd" --rank "$i" --world 2 --rendezvous "file:$PEERS" "$@" \
			>"$M/rank.$i.out" 2>"$M/rank.$i.err" &
		p+=($!)
		started "$!"
	done
	for i in 0 1; do
		wait "${p[i]}" || fail "rank $i exited $?: $(cat "$M/rank.$i.err")"
	done
}

@test "write --bench and --lat: promtool accepts the file, bytes are what was written" {
	start_server 1 --listen "$ADDR:$PORT" --name m --size 4M
	run rdmactl -j write --bench --msg-size 1M --iters 8 --metrics "$M/bw.prom" "$ADDR:$PORT/m"
	assert_success
	metrics_check "$M/bw.prom"
	assert_equal "$(jq -r .bytes <<<"$output")" 8388608
	assert_equal "$(metrics_value "$M/bw.prom" rdmactl_bench_bytes_total)" 8388608
	assert_equal "$(metrics_value "$M/bw.prom" rdmactl_bench_operations_total)" 8
	assert_equal "$(metrics_value "$M/bw.prom" rdmactl_bench_message_size_bytes)" 1048576
	assert_equal "$(metrics_value "$M/bw.prom" rdmactl_success \
		"peer=\"$ADDR:$PORT\",region=\"m\"")" 1
	grep -q '^rdmactl_bench_bytes_total{command="write",operation="write",mode="bandwidth",device="rxe' "$M/bw.prom" ||
		fail "labels: $(cat "$M/bw.prom")"
	[[ $(stat -c %a "$M/bw.prom") == 644 ]] || fail "mode $(stat -c %a "$M/bw.prom")"
	# --lat: the latency summary, its count the work requests less the
	# samples left out (their readings on two CPUs), a few at most
	run rdmactl write --lat --msg-size 4K --iters 50 --metrics "$M/lat.prom" "$ADDR:$PORT/m"
	assert_success
	metrics_check "$M/lat.prom"
	local kept out
	kept=$(metrics_value "$M/lat.prom" rdmactl_bench_latency_seconds_count)
	out=$(metrics_value "$M/lat.prom" rdmactl_bench_latency_left_out)
	assert_equal "$((kept + out))" 50
	((out <= 5)) || fail "$out of 50 samples left out"
	local lo hi
	lo=$(metrics_value "$M/lat.prom" rdmactl_bench_latency_seconds 'quantile="0"')
	hi=$(metrics_value "$M/lat.prom" rdmactl_bench_latency_seconds 'quantile="1"')
	awk -v a="$lo" -v b="$hi" 'BEGIN { exit !(a > 0 && b >= a && b < 10) }' ||
		fail "latency min $lo, max $hi"
	# the file renders the report: with -j, its median is the document's
	run rdmactl -j write --lat --msg-size 4K --iters 50 --metrics "$M/lat.j.prom" "$ADDR:$PORT/m"
	assert_success
	local p50 doc_p50
	p50=$(metrics_value "$M/lat.j.prom" rdmactl_bench_latency_seconds 'quantile="0.5"')
	doc_p50=$(jq -r .latency_us.p50 <<<"$output")
	awk -v a="$p50" -v b="$doc_p50" 'BEGIN { exit !(a != "" && a == b / 1e6) }' ||
		fail "the file's median $p50 s is not the document's $doc_p50 us"
	assert_equal "$(metrics_value "$M/lat.j.prom" rdmactl_bench_latency_seconds_count)" \
		"$(jq -r .latency_us.count <<<"$output")"
}

@test "alltoall of 2 ranks: a file per rank (%r), the size the report says, no token wrong" {
	heavy_sibling "'write --bench and --lat' (the same metrics writer) and alltoall's 'flat: 2 ranks'"
	local i
	two_ranks alltoall 20000 --hidden 256 --tokens 16 --iters 3 --warmup 1 --metrics "$M/a2a.%r.prom"
	for i in 0 1; do
		metrics_check "$M/a2a.$i.prom"
		assert_equal "$(metrics_value "$M/a2a.$i.prom" rdmactl_alltoall_wrong_tokens_total "rank=\"$i\"")" 0
		assert_equal "$(metrics_value "$M/a2a.$i.prom" rdmactl_alltoall_iterations_total)" 3
		assert_equal "$(metrics_value "$M/a2a.$i.prom" rdmactl_alltoall_ranks)" 2
		assert_equal "$(metrics_value "$M/a2a.$i.prom" rdmactl_success)" 1
	done
	assert_equal "$(metrics_value "$M/a2a.0.prom" rdmactl_alltoall_size_bytes)" \
		"$(jq -r .size_bytes "$M/rank.0.out")"
	[[ $(metrics_value "$M/a2a.0.prom" rdmactl_alltoall_checked_tokens_total) -gt 0 ]] ||
		fail "no token checked: $(cat "$M/a2a.0.prom")"
}

@test "register --metrics: rewritten while serving (connections, refusals, regions), once more at exit" {
	printf 's3cret\n' >"$M/tok"
	chmod 600 "$M/tok"
	start_server 1 --listen "$ADDR:$PORT" --name m --size 2M --token-file "$M/tok" \
		--metrics "$M/srv.prom" --metrics-interval 1
	metrics_check "$M/srv.prom"
	assert_equal "$(metrics_value "$M/srv.prom" rdmactl_server_up)" 1
	assert_equal "$(metrics_value "$M/srv.prom" rdmactl_server_connections_total)" 0
	assert_equal "$(metrics_value "$M/srv.prom" rdmactl_server_region_size_bytes 'region="m"')" 2097152
	run rdmactl write --pattern seq --size 1M --token-file "$M/tok" "$ADDR:$PORT/m"
	assert_success
	run rdmactl write --pattern seq --size 1M --token wrong "$ADDR:$PORT/m"
	assert_failure 3
	# the next rewrite, within a few intervals
	local i
	for ((i = 0; i < 50; i++)); do
		[[ $(metrics_value "$M/srv.prom" rdmactl_server_rejected_connections_total) == 1 ]] && break
		sleep 0.2
	done
	metrics_check "$M/srv.prom"
	assert_equal "$(metrics_value "$M/srv.prom" rdmactl_server_rejected_connections_total)" 1
	assert_equal "$(metrics_value "$M/srv.prom" rdmactl_server_connections_total)" 1
	[[ $(metrics_value "$M/srv.prom" rdmactl_server_requests_total) -ge 1 ]] ||
		fail "no request counted: $(cat "$M/srv.prom")"
	assert_equal "$(metrics_value "$M/srv.prom" rdmactl_server_errors_total 'kind="connection"')" 0
	stop_server TERM
	assert_equal "$SERVER_RC" 0
	metrics_check "$M/srv.prom"
	assert_equal "$(metrics_value "$M/srv.prom" rdmactl_server_up)" 0
	assert_equal "$(metrics_value "$M/srv.prom" rdmactl_success)" 1
	assert_equal "$(metrics_value "$M/srv.prom" rdmactl_server_connections)" 0
	[[ ! -e $M/srv.prom.tmp ]] || fail "the temporary file was left behind"
}

@test "multicast of 2 ranks: the root's file says what each receiver got, the receiver's its own" {
	heavy_sibling "'write --bench and --lat' (the same metrics writer) and the multicast tree tests"
	two_ranks multicast 23000 --pattern seq --size 2M --out "$M/out.%r" --metrics "$M/mc.%r.prom"
	metrics_check "$M/mc.0.prom"
	metrics_check "$M/mc.1.prom"
	assert_equal "$(metrics_value "$M/mc.0.prom" rdmactl_multicast_size_bytes)" 2097152
	assert_equal "$(metrics_value "$M/mc.0.prom" rdmactl_multicast_receivers_ok)" 1
	assert_equal "$(metrics_value "$M/mc.0.prom" rdmactl_multicast_received_bytes_total 'receiver="1"')" 2097152
	assert_equal "$(metrics_value "$M/mc.1.prom" rdmactl_multicast_received_bytes_total 'rank="1"')" 2097152
	assert_equal "$(metrics_value "$M/mc.1.prom" rdmactl_multicast_ok)" 1
	assert_equal "$(metrics_value "$M/mc.1.prom" rdmactl_success)" 1
}

@test "kvxfer serve and send: each side's file, bytes equal to its summary, the request verified" {
	local g=(--layers 4 --kv-heads 8 --head-dim 16 --page-tokens 4) i
	rdmactl -j kvxfer serve --listen "$ADDR:$PORT" "${g[@]}" --pool-pages 16 --requests 1 \
		--verify --metrics "$M/serve.prom" >"$M/serve.out" 2>"$M/serve.err" &
	local serve=$!
	started "$serve"
	for ((i = 0; i < 300; i++)); do
		grep -q '"event":"listening"' "$M/serve.out" && break
		kill -0 "$serve" 2>/dev/null || fail "serve exited: $(cat "$M/serve.err")"
		sleep 0.1
	done
	run rdmactl -j kvxfer send --connect "$ADDR:$PORT" "${g[@]}" --tokens 16 --requests 1 \
		--metrics "$M/send.prom"
	assert_success
	wait "$serve" || fail "serve exited $?: $(cat "$M/serve.err")"
	metrics_check "$M/send.prom"
	metrics_check "$M/serve.prom"
	assert_equal "$(metrics_value "$M/send.prom" rdmactl_kvxfer_requests_total 'outcome="done"')" 1
	assert_equal "$(metrics_value "$M/send.prom" rdmactl_kvxfer_bytes_total 'command="kvxfer send"')" \
		"$(jq -r 'select(.event == "summary") | .bytes' <<<"$output")"
	assert_equal "$(metrics_value "$M/serve.prom" rdmactl_kvxfer_verified_requests_total)" 1
	assert_equal "$(metrics_value "$M/serve.prom" rdmactl_kvxfer_bytes_total)" \
		"$(jq -r 'select(.event == "summary") | .bytes' "$M/serve.out")"
	[[ $(metrics_value "$M/serve.prom" rdmactl_kvxfer_bytes_total) -gt 0 ]] || fail "no bytes"
}
