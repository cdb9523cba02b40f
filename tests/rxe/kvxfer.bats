#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# kvxfer over real rdma_rxe in the SoftRoCE guest: decode ranks (serve) and
# prefill ranks (send) as separate processes, every transfer checked byte
# for byte by the decode side (--verify), sizes tiny (KiB per request).

load helpers

# 4 layers, 8 KV heads x 16 dims, bf16, 4 tokens per page: 4 KiB a token.
G=(--layers 4 --kv-heads 8 --head-dim 16 --page-tokens 4)

setup() {
	need_guest
	declare -gA KV_PID=() KV_RC=()
	KV_OUT=$BATS_TEST_TMPDIR
}

teardown() {
	for n in "${!KV_PID[@]}"; do
		kill -KILL "${KV_PID[$n]}" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}

# serve NAME ARGS...: a decode rank on a fresh port, in the background; waits
# (bounded) for its "listening" line. Sets PORT_<NAME>.
serve() {
	local name=$1 port i
	shift
	PORT_SEQ=$(( ${PORT_SEQ:-0} + 1 ))
	port=$(( 18000 + BATS_TEST_NUMBER * 20 + PORT_SEQ ))
	printf -v "PORT_$name" '%s' "$port"
	"$RDMACTL" -j kvxfer serve --listen "$ADDR:$port" "$@" >"$KV_OUT/$name.out" 2>"$KV_OUT/$name.err" &
	KV_PID[$name]=$!
	for ((i = 0; i < 300; i++)); do
		grep -q '"event":"listening"' "$KV_OUT/$name.out" 2>/dev/null && return 0
		if ! kill -0 "${KV_PID[$name]}" 2>/dev/null; then
			echo "$name exited early:" >&2
			cat "$KV_OUT/$name.out" "$KV_OUT/$name.err" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "$name did not listen within 30 s" >&2
	return 1
}

# send NAME ARGS...: a prefill rank in the background.
send() {
	local name=$1
	shift
	"$RDMACTL" -j kvxfer send "$@" >"$KV_OUT/$name.out" 2>"$KV_OUT/$name.err" &
	KV_PID[$name]=$!
}

# reap NAME...: wait (bounded, 60 s each) for processes; KV_RC[NAME] is the status.
reap() {
	local n
	for n in "$@"; do
		timeout 60 tail --pid="${KV_PID[$n]}" -f /dev/null || true
		kill -KILL "${KV_PID[$n]}" 2>/dev/null || true
		KV_RC[$n]=0
		wait "${KV_PID[$n]}" || KV_RC[$n]=$?
		unset "KV_PID[$n]"
		if ((KV_RC[$n] != 0)); then
			echo "--- $n exited ${KV_RC[$n]}:" >&2
			cat "$KV_OUT/$n.out" "$KV_OUT/$n.err" >&2
		fi
	done
}

# events NAME KIND: that process's events of one kind, one a line.
events() { jq -c --arg k "$2" 'select(.event == $k)' "$KV_OUT/$1.out"; }
count() { events "$1" "$2" | wc -l; }
# all_verified NAME N: exactly N requests done, every one verified, every
# layer landed.
all_verified() {
	[ "$(count "$1" done)" -eq "$2" ] || { cat "$KV_OUT/$1.out" >&2; return 1; }
	[ "$(events "$1" done | jq -s 'all(.verified and .checked and (.landed_us | all(. != null)))')" = true ]
	[ "$(count "$1" failed)" -eq 0 ]
}

@test "1:1: three requests stream layer by layer and land verified" {
	serve d0 "${G[@]}" --pool-pages 64 --verify --requests 3
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 3 --layer-compute-us 3000
	reap s0 d0
	[ "${KV_RC[s0]}" -eq 0 ]
	[ "${KV_RC[d0]}" -eq 0 ]
	all_verified d0 3
	all_verified s0 3
	# 10 tokens x 8 heads x 16 dims x 2 bytes x K+V x 4 layers
	[ "$(events d0 done | jq -s 'map(.bytes) | unique')" = "$(jq -n '[10*8*16*2*2*4]')" ]
	[ "$(events d0 done | jq -sc "map(.sources) | unique")" = "[[0]]" ]
	# Layers were ready 3 ms apart and each landed after it was ready.
	events s0 done | jq -e '.ready_us as $r | .landed_us | to_entries | all(.value >= $r[.key])'
	events s0 done | jq -e '.exposed_us >= 0'
	[ "$(events s0 summary | jq -r .done)" -eq 3 ]
	[ "$(events d0 summary | jq -r .verified)" -eq 3 ]
}

@test "TP 4 -> 2: four prefill ranks feed two decode ranks, each into its head slice" {
	for d in 0 1; do
		serve "d$d" "${G[@]}" --src-tp 4 --dst-tp 2 --rank "$d" --pool-pages 32 --verify --requests 2
	done
	for s in 0 1 2 3; do
		p=PORT_d$((s / 2))
		send "s$s" "${G[@]}" --src-tp 4 --dst-tp 2 --rank "$s" --connect "$ADDR:${!p}" \
			--tokens 9 --requests 2 --inflight 2
	done
	reap s0 s1 s2 s3 d0 d1
	for n in s0 s1 s2 s3 d0 d1; do [ "${KV_RC[$n]}" -eq 0 ]; done
	all_verified d0 2
	all_verified d1 2
	[ "$(events d0 done | jq -c .sources | sort -u)" = "[0,1]" ]
	[ "$(events d1 done | jq -c .sources | sort -u)" = "[2,3]" ]
	for s in 0 1 2 3; do all_verified "s$s" 2; done
}

@test "TP 2 -> 4: each prefill rank splits its heads over two decode ranks" {
	for d in 0 1 2 3; do
		serve "d$d" "${G[@]}" --src-tp 2 --dst-tp 4 --rank "$d" --pool-pages 32 --verify --requests 2
	done
	send s0 "${G[@]}" --src-tp 2 --dst-tp 4 --rank 0 --connect "$ADDR:$PORT_d0" \
		--connect "$ADDR:$PORT_d1" --tokens 11 --requests 2
	send s1 "${G[@]}" --src-tp 2 --dst-tp 4 --rank 1 --connect "$ADDR:$PORT_d3" \
		--connect "$ADDR:$PORT_d2" --tokens 11 --requests 2
	reap s0 s1 d0 d1 d2 d3
	for n in s0 s1 d0 d1 d2 d3; do [ "${KV_RC[$n]}" -eq 0 ]; done
	for d in 0 1 2 3; do all_verified "d$d" 2; done
	[ "$(events d3 done | jq -c .sources | sort -u)" = "[1]" ]
	all_verified s0 2
	all_verified s1 2
}

@test "scattered destination pages and unequal page sizes (nhd and hnd) land verified" {
	for layout in nhd hnd; do
		serve "d$layout" --layers 3 --kv-heads 4 --head-dim 8 --src-page-tokens 4 \
			--dst-page-tokens 6 --page-layout "$layout" --pool-pages 40 --scatter 42 --verify --requests 4
		p=PORT_d$layout
		send "s$layout" --layers 3 --kv-heads 4 --head-dim 8 --src-page-tokens 4 \
			--dst-page-tokens 6 --page-layout "$layout" --connect "$ADDR:${!p}" --tokens 23 \
			--requests 4 --inflight 3
		reap "s$layout" "d$layout"
		[ "${KV_RC[s$layout]}" -eq 0 ]
		[ "${KV_RC[d$layout]}" -eq 0 ]
		all_verified "d$layout" 4
	done
}

@test "a layer's writes spread over four QPs; the decode rank counts every notification" {
	serve d0 "${G[@]}" --pool-pages 64 --verify --requests 2
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 40 --requests 2 --qps 4 \
		--layer-compute-us 1000
	reap s0 d0
	[ "${KV_RC[s0]}" -eq 0 ]
	[ "${KV_RC[d0]}" -eq 0 ]
	[ "$(events d0 connected | jq -r .qps)" -eq 4 ]
	all_verified d0 2
	all_verified s0 2
}

@test "cancel from the prefill side: cancelled on both sides, pages reused, next request verified" {
	# The pool holds exactly one request (10 tokens = 3 pages of 4): the
	# third request can only run in the pages the cancelled one gave back.
	serve d0 "${G[@]}" --pool-pages 3 --verify --requests 3
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 3 \
		--layer-compute-us 20000 --cancel-request 1 --cancel-after-layers 2
	reap s0 d0
	[ "${KV_RC[s0]}" -eq 0 ]
	[ "${KV_RC[d0]}" -eq 0 ]
	[ "$(events d0 done | jq -s -c 'map(.request)')" = "[0,2]" ]
	all_verified d0 2
	[ "$(events d0 cancelled | jq -r .request)" -eq 1 ]
	events d0 cancelled | jq -e '.verified == false and (.reason | test("source rank 0 after 2 layers"))'
	[ "$(events s0 cancelled | jq -r .request)" -eq 1 ]
	[ "$(events s0 cancelled | jq -r .layers_landed)" -le 2 ]
	[ "$(events s0 summary | jq -c '[.done, .cancelled, .failed]')" = "[2,1,0]" ]
}

@test "cancel from the decode side: the prefill rank stops and reports it cancelled" {
	serve d0 "${G[@]}" --pool-pages 3 --verify --requests 2 --cancel-request 0 --cancel-after-layers 1
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 2 --layer-compute-us 50000
	reap s0 d0
	[ "${KV_RC[s0]}" -eq 0 ]
	[ "${KV_RC[d0]}" -eq 0 ]
	events s0 cancelled | jq -e '.request == 0 and (.reason | test("cancelled by decode rank 0"))'
	events s0 cancelled | jq -e '.layers_landed < 4'
	[ "$(events d0 cancelled | jq -r .request)" -eq 0 ]
	all_verified d0 1
	[ "$(events d0 done | jq -r .request)" -eq 1 ]
}

@test "a prefill rank killed mid-request: the decode rank fails it, never verified, then serves again" {
	serve d0 "${G[@]}" --pool-pages 3 --verify --requests 2 --heartbeat-timeout 2000
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 1 --layer-compute-us 400000
	for ((i = 0; i < 300; i++)); do
		grep -q '"event":"ready"' "$KV_OUT/s0.out" && break
		sleep 0.1
	done
	sleep 0.9 # a layer or two posted, not all four
	kill -KILL "${KV_PID[s0]}"
	start=$SECONDS
	for ((i = 0; i < 150; i++)); do
		grep -q '"event":"failed"' "$KV_OUT/d0.out" && break
		sleep 0.1
	done
	((SECONDS - start < 10))
	f=$(events d0 failed)
	jq -e '.request == 0 and .verified == false and .layers_landed < 4' <<<"$f"
	jq -e '.reason | test("source rank 0 .* is gone")' <<<"$f"
	[ "$(count d0 done)" -eq 0 ]
	# The pages came back: a new prefill rank 0 moves request 0 again.
	send s1 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 1
	reap s1 d0
	[ "${KV_RC[s1]}" -eq 0 ]
	[ "${KV_RC[d0]}" -eq 1 ] # one request failed
	all_verified s1 1
	[ "$(count d0 done)" -eq 1 ]
	[ "$(events d0 summary | jq -c '[.done, .failed]')" = "[1,1]" ]
}

@test "a decode rank killed mid-request: the prefill rank fails its requests with a clear error" {
	serve d0 "${G[@]}" --pool-pages 64
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 2 --layer-compute-us 1000000
	sleep 2
	kill -KILL "${KV_PID[d0]}"
	reap s0
	[ "${KV_RC[s0]}" -eq 1 ]
	events s0 failed | jq -e '.reason | test("decode rank 0 .* is gone")'
	[ "$(count s0 done)" -eq 0 ]
	grep -q "failed" "$KV_OUT/s0.out"
}

@test "a silent decode rank (stopped) is declared dead after --heartbeat-timeout" {
	serve d0 "${G[@]}" --pool-pages 64
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 2 --layer-compute-us 500000 \
		--heartbeat-ms 100 --heartbeat-timeout 1000
	sleep 1.5
	kill -STOP "${KV_PID[d0]}"
	start=$SECONDS
	reap s0
	kill -CONT "${KV_PID[d0]}"
	[ "${KV_RC[s0]}" -eq 1 ]
	((SECONDS - start < 15))
	events s0 disconnected | jq -e '.reason | test("no heartbeat for 1000 ms")'
	events s0 failed | jq -e '.verified == false'
}

@test "8 KV heads at TP 16: decode ranks hold replicas, verified" {
	for d in $(seq 0 15); do
		serve "d$d" --layers 2 --kv-heads 8 --head-dim 8 --page-tokens 4 --src-tp 2 --dst-tp 16 \
			--rank "$d" --pool-pages 8 --verify --requests 1
	done
	for s in 0 1; do
		c=()
		for d in $(seq $((s * 8)) $((s * 8 + 7))); do
			p=PORT_d$d
			c+=(--connect "$ADDR:${!p}")
		done
		send "s$s" --layers 2 --kv-heads 8 --head-dim 8 --page-tokens 4 --src-tp 2 --dst-tp 16 \
			--rank "$s" "${c[@]}" --tokens 6
	done
	reap s0 s1
	for d in $(seq 0 15); do reap "d$d"; done
	for n in s0 s1; do [ "${KV_RC[$n]}" -eq 0 ]; all_verified "$n" 1; done
	for d in $(seq 0 15); do [ "${KV_RC[d$d]}" -eq 0 ]; all_verified "d$d" 1; done
	# Ranks 2 and 3 hold replicas of head 1: the same bytes, from source rank 0.
	[ "$(events d3 done | jq -c .sources)" = "[0]" ]
	[ "$(events d3 done | jq -r .bytes)" -eq $((6 * 8 * 2 * 2 * 2)) ]
}

@test "MLA: one prefill rank replicates the latent to two decode ranks, verified" {
	M=(--layout mla --layers 3 --latent-dim 72 --page-tokens 8 --src-tp 1 --dst-tp 2)
	serve d0 "${M[@]}" --rank 0 --pool-pages 8 --verify --requests 2
	serve d1 "${M[@]}" --rank 1 --pool-pages 8 --verify --requests 2 --scatter 3
	send s0 "${M[@]}" --connect "$ADDR:$PORT_d0" --connect "$ADDR:$PORT_d1" --tokens 17 --requests 2
	reap s0 d0 d1
	for n in s0 d0 d1; do [ "${KV_RC[$n]}" -eq 0 ]; all_verified "$n" 2; done
	[ "$(events d1 done | jq -r .bytes | sort -u)" -eq $((17 * 72 * 2 * 3)) ]
}

@test "a geometry mismatch is refused at the handshake with a clear error" {
	serve d0 "${G[@]}" --dst-page-tokens 8 --pool-pages 16
	run rdmactl kvxfer send "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10
	assert_failure 1
	assert_output --partial "refused this source rank: geometry mismatch: decode rank has dst page tokens 8, the source rank 4"
	run rdmactl kvxfer send "${G[@]}" --dst-page-tokens 8 --src-tp 2 --rank 0 --connect "$ADDR:$PORT_d0" --tokens 10
	assert_failure 1
	assert_output --partial "geometry mismatch"
}
