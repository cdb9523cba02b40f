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

# What still runs gets SIGTERM (a clean stop, so that a sanitizer build
# reports leaks), SIGKILL after 10 s.
teardown() {
	local i
	for n in "${!KV_PID[@]}"; do
		kill -CONT "${KV_PID[$n]}" 2>/dev/null || true
		kill -TERM "${KV_PID[$n]}" 2>/dev/null || true
	done
	for n in "${!KV_PID[@]}"; do
		for ((i = 0; i < 100; i++)); do
			kill -0 "${KV_PID[$n]}" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "${KV_PID[$n]}" 2>/dev/null || true
	done
	# Only our processes: a bare `wait` would also wait for the watchdog
	# that bats starts for BATS_TEST_TIMEOUT.
	for n in "${!KV_PID[@]}"; do
		wait "${KV_PID[$n]}" 2>/dev/null || true
	done
	common_teardown
}

# serve NAME ARGS...: a decode rank on a fresh port, in the background, then
# wait_listening. Sets PORT_<NAME>. $KV_T, when set, is rdmactl's -t (ms);
# $KV_RAIL2, when set, a second address to listen on (a second rail).
serve() {
	serve_bg "$@" && wait_listening "$1"
}

serve_bg() {
	local name=$1 port
	shift
	PORT_SEQ=$(( ${PORT_SEQ:-0} + 1 ))
	port=$(( 18000 + BATS_TEST_NUMBER * 20 + PORT_SEQ ))
	printf -v "PORT_$name" '%s' "$port"
	"$RDMACTL" -j ${KV_T:+-t "$KV_T"} kvxfer serve --listen "$ADDR:$port${KV_RAIL2:+,$KV_RAIL2:$port}" "$@" >"$KV_OUT/$name.out" 2>"$KV_OUT/$name.err" &
	KV_PID[$name]=$!
}

# wait_listening NAME...: each printed its "listening" line (30 s in all).
wait_listening() {
	local n i
	for ((i = 0; i < 300; i++)); do
		for n in "$@"; do
			grep -q '"event":"listening"' "$KV_OUT/$n.out" 2>/dev/null || break
			shift
		done
		(($# == 0)) && return 0
		if ! kill -0 "${KV_PID[$1]}" 2>/dev/null; then
			echo "$1 exited early:" >&2
			cat "$KV_OUT/$1.out" "$KV_OUT/$1.err" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "$* did not listen within 30 s" >&2
	return 1
}

# wait_events NAME EVENT N: NAME printed N events of that kind (30 s at most).
wait_events() {
	local i
	for ((i = 0; i < 300; i++)); do
		(( $(grep -c "\"event\":\"$2\"" "$KV_OUT/$1.out" 2>/dev/null) >= $3 )) && return 0
		sleep 0.1
	done
	echo "$1 printed fewer than $3 $2 events within 30 s" >&2
	return 1
}

# wait_event NAME EVENT: NAME printed an event of that kind (30 s at most).
wait_event() {
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q "\"event\":\"$2\"" "$KV_OUT/$1.out" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "$1 printed no $2 event within 30 s" >&2
	return 1
}

# send NAME ARGS...: a prefill rank in the background (-t $KV_T when set).
send() {
	local name=$1
	shift
	"$RDMACTL" -j ${KV_T:+-t "$KV_T"} kvxfer send "$@" >"$KV_OUT/$name.out" 2>"$KV_OUT/$name.err" &
	KV_PID[$name]=$!
}

# reap NAME...: wait (bounded, $KV_REAP_S or 60 s each) for processes; KV_RC[NAME] is the status.
reap() {
	local n
	for n in "$@"; do
		timeout "${KV_REAP_S:-60}" tail --pid="${KV_PID[$n]}" -f /dev/null || true
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

# check EXPR NAME...: one jq run over the events of the processes, as an
# object {NAME: [event...]}; EXPR must be true. jq costs most of a second
# under TCG: each test asks it as few times as it can.
JQ_DEFS='
def ev($k): map(select(.event == $k));
def verified($n): (ev("done") | length == $n and
	all(.verified and .checked and (.landed_us | all(. != null)))) and (ev("failed") | length == 0);
'
check() {
	local expr=$1 files=() n
	shift
	for n in "$@"; do files+=("$KV_OUT/$n.out"); done
	if ! jq -n -e "$JQ_DEFS reduce inputs as \$e ({}; .[input_filename | sub(\".*/\"; \"\") | rtrimstr(\".out\")] += [\$e]) | $expr" \
		"${files[@]}" >/dev/null; then
		echo "check failed: $expr" >&2
		for n in "$@"; do
			echo "--- $n" >&2
			cut -c1-600 "$KV_OUT/$n.out" >&2
		done
		return 1
	fi
}

# status N NAME...: each exited with N.
status() {
	local want=$1 n
	shift
	for n in "$@"; do
		[ "${KV_RC[$n]}" -eq "$want" ] || { echo "$n exited ${KV_RC[$n]}, not $want" >&2; return 1; }
	done
}

# bats test_tags=plain-only
@test "1:1: three requests stream layer by layer and land verified" {
	serve d0 "${G[@]}" --pool-pages 64 --verify --requests 3
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 3 --layer-compute-us 3000
	reap s0 d0
	status 0 s0 d0
	# 10 tokens x 8 heads x 16 dims x 2 bytes x K+V x 4 layers; layers were
	# ready 3 ms apart and each landed after it was ready.
	check '(.d0 | verified(3)) and (.s0 | verified(3))
		and (.d0 | ev("done") | map(.bytes) | unique == [10*8*16*2*2*4])
		and (.d0 | ev("done") | map(.sources) | unique == [[0]])
		and (.s0 | ev("done") | all(.ready_us as $r | .exposed_us >= 0 and
			(.landed_us | to_entries | all(.value >= $r[.key]))))
		and (.s0 | ev("summary")[0].done == 3) and (.d0 | ev("summary")[0].verified == 3)' s0 d0
}

@test "--mem hugepage: the pool and the source pages in hugepages, verified; none reserved, both refuse clearly" {
	# The pool: 4 layers x K+V x 64 pages x 4 KiB = 2 MiB, one hugepage;
	# the source pages of 10 tokens fit another.
	echo 0 >/proc/sys/vm/nr_hugepages
	run timeout 20 "$RDMACTL" kvxfer serve "${G[@]}" --listen "$ADDR:18999" --pool-pages 64 --mem hugepage --requests 1
	assert_failure
	assert_output --partial "hugepages"
	run timeout 20 "$RDMACTL" kvxfer send "${G[@]}" --connect "$ADDR:18999" --tokens 10 --mem hugepage
	assert_failure
	assert_output --partial "hugepages"
	echo 4 >/proc/sys/vm/nr_hugepages
	[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 2 ] || skip "the guest could not reserve hugepages"
	serve d0 "${G[@]}" --pool-pages 64 --verify --requests 2 --mem hugepage
	# the pool holds a hugepage while the decode rank serves
	local total free
	total=$(awk '/^HugePages_Total:/ { print $2 }' /proc/meminfo)
	free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
	((free < total)) || fail "serve --mem hugepage holds no hugepage ($free of $total free)"
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 2 --mem hugepage
	reap s0 d0
	echo 0 >/proc/sys/vm/nr_hugepages
	status 0 s0 d0
	check 'all(.[]; verified(2))' s0 d0
}

@test "--no-stream, the negative twin: no layer lands before the last is ready, more time exposed" {
	heavy_sibling "a timing twin of the 1:1 streamed test, whose code path it shares"
	# 1024 tokens: 512 KiB a layer, tens of ms on the wire, so that the
	# transfer outweighs scheduling noise; layers ready 200 ms apart. One
	# sender at a time, so that they do not share the CPU. Five requests.
	serve_bg d0 "${G[@]}" --pool-pages 256 --verify --requests 5
	serve_bg d1 "${G[@]}" --pool-pages 256 --verify --requests 5
	wait_listening d0 d1
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 1024 --requests 5 --layer-compute-us 200000
	reap s0
	send s1 "${G[@]}" --connect "$ADDR:$PORT_d1" --tokens 1024 --requests 5 --layer-compute-us 200000 \
		--no-stream
	reap s1 d0 d1
	status 0 s0 s1 d0 d1
	# Not streamed (s1): every layer landed after the last was ready, and its
	# exposed time (last ready -> last landed) spans every landing. Streamed
	# (s0): layer 0 typically landed before layer 3 was ready, so its exposed
	# time covers only the tail of the landings. The first landing of the
	# twin comes later. Medians where a stalled request on a loaded machine
	# could decide; the no-stream side holds for every request.
	check 'def median(f): map(f) | sort | .[length / 2 | floor];
		all(.[]; verified(5))
		and (.s1 | ev("done") | all(.ready_us[3] as $r | .landed_us | all(. >= $r)))
		and (.s1 | ev("done") | all(.exposed_us >= .landed_us[3] - .landed_us[0]))
		and (.s0 | ev("done") | median(.landed_us[0] - .ready_us[3]) < 0)
		and (.s0 | ev("done") | median(.exposed_us - (.landed_us[3] - .landed_us[0])) < 0)
		and ((.s1 | ev("done") | median(.landed_us[0])) > (.s0 | ev("done") | median(.landed_us[0])))' s0 s1 d0 d1
}

# bats test_tags=plain-only
@test "TP 4 -> 2: four prefill ranks feed two decode ranks, each into its head slice" {
	for d in 0 1; do
		serve_bg "d$d" "${G[@]}" --src-tp 4 --dst-tp 2 --rank "$d" --pool-pages 32 --verify --requests 2
	done
	wait_listening d0 d1
	for s in 0 1 2 3; do
		p=PORT_d$((s / 2))
		send "s$s" "${G[@]}" --src-tp 4 --dst-tp 2 --rank "$s" --connect "$ADDR:${!p}" \
			--tokens 9 --requests 2 --inflight 2
	done
	reap s0 s1 s2 s3 d0 d1
	status 0 s0 s1 s2 s3 d0 d1
	check 'all(.[]; verified(2))
		and (.d0 | ev("done") | all(.sources == [0,1]))
		and (.d1 | ev("done") | all(.sources == [2,3]))' s0 s1 s2 s3 d0 d1
}

# bats test_tags=plain-only
@test "a prefill rank's ten connections to two decode ranks share one CM event channel: one rdma_cm descriptor, not ten" {
	for d in 0 1; do
		serve_bg "d$d" "${G[@]}" --src-tp 1 --dst-tp 2 --rank "$d" --pool-pages 32 --requests 30
	done
	wait_listening d0 d1
	send s0 "${G[@]}" --src-tp 1 --dst-tp 2 --connect "$ADDR:$PORT_d0" --connect "$ADDR:$PORT_d1" \
		--tokens 8 --requests 30 --qps 4 --layer-compute-us 20000
	wait_events s0 connected 2
	# Each rdma_cm event channel is one open /dev/infiniband/rdma_cm;
	# 2 x (1 control + 4 data) connections each with its own would be 10.
	cm=$(find "/proc/${KV_PID[s0]}/fd" -mindepth 1 -lname '*rdma_cm' 2>/dev/null | wc -l)
	reap s0 d0 d1
	status 0 s0 d0 d1
	echo "# rdma_cm descriptors of the prefill rank with 10 connections: $cm" >&3
	[ "$cm" -eq 1 ]
}

# bats test_tags=plain-only
@test "TP 2 -> 4: each prefill rank splits its heads over two decode ranks" {
	for d in 0 1 2 3; do
		serve_bg "d$d" "${G[@]}" --src-tp 2 --dst-tp 4 --rank "$d" --pool-pages 32 --verify --requests 2
	done
	wait_listening d0 d1 d2 d3
	send s0 "${G[@]}" --src-tp 2 --dst-tp 4 --rank 0 --connect "$ADDR:$PORT_d0" \
		--connect "$ADDR:$PORT_d1" --tokens 11 --requests 2
	send s1 "${G[@]}" --src-tp 2 --dst-tp 4 --rank 1 --connect "$ADDR:$PORT_d3" \
		--connect "$ADDR:$PORT_d2" --tokens 11 --requests 2
	reap s0 s1 d0 d1 d2 d3
	status 0 s0 s1 d0 d1 d2 d3
	check 'all(.[]; verified(2)) and (.d3 | ev("done") | all(.sources == [1]))
		and (.d0 | ev("done") | all(.sources == [0]))' s0 s1 d0 d1 d2 d3
}

@test "nhd TP 4 -> 2 through the landing area: one write per route and layer half across pages, unpacked, verified" {
	# 37 tokens from 4-token source pages into 8-token destination pages
	# (the last one partial), scattered; each source fills half of every
	# destination row. Decode rank 0 is fed with --land auto (64-byte pieces:
	# they land), decode rank 1 with --land never; three requests, two in
	# flight, two data QPs. Decode rank 0's pool holds two requests (5
	# pages each): the third waits for the pages and the landing run the
	# first gives back.
	local L=(--layers 4 --kv-heads 8 --head-dim 16 --src-page-tokens 4 --dst-page-tokens 8
		 --src-tp 4 --dst-tp 2) land
	for d in 0 1; do
		serve_bg "d$d" "${L[@]}" --rank "$d" --pool-pages $((d ? 40 : 10)) --scatter $((d + 3)) --verify --requests 3
	done
	wait_listening d0 d1
	for s in 0 1 2 3; do
		p=PORT_d$((s / 2))
		land=auto
		((s < 2)) || land=never
		send "s$s" "${L[@]}" --rank "$s" --connect "$ADDR:${!p}" --tokens 37 --requests 3 \
			--inflight 2 --qps 2 --land "$land"
	done
	reap s0 s1 s2 s3 d0 d1
	status 0 s0 s1 s2 s3 d0 d1
	for land in auto never; do
		"$RDMACTL" -j kvxfer plan "${L[@]}" --tokens 37 --qps 2 --land "$land" >"$KV_OUT/plan$land.out"
	done
	# Landed: a route's 37 tokens x 64 bytes lie contiguous in its block of
	# the request's landing run and in its 4-token source pages (which follow
	# one another): 2 halves x 4 layers writes a request and source rank,
	# across the 5 destination pages; not landed, 37 x 2 x 4.
	# Exposed time runs to the decode rank's completion: a source of d0
	# adds d0's unpack (DONE), the same figure d0 reports per request; a
	# decode rank completes after its last layer landed, before its report
	# (--verify).
	check 'def writes: ev("summary")[0].qp_writes | add;
		([.s0, .s1, .s2, .s3, .d0, .d1] | all(verified(3)))
		and (.d0 | ev("done") | all(.sources == [0,1]))
		and ([.s0, .s1] | all(ev("summary")[0] | .routes == 1 and .routes_landed == 1))
		and ([.s2, .s3] | all(ev("summary")[0] | .routes == 1 and .routes_landed == 0))
		and (.planauto[0].land | .path == "landing" and .routes_landed == 4)
		and (.plannever[0].land | .path == "direct" and .routes_landed == 0)
		and (.planauto[0].routes | all(.land))
		and ([.s0, .s1 | writes] == [.planauto[0].src_ranks[0, 1].writes * 3])
		and ([.s0, .s1 | writes] == [2*4*3, 2*4*3])
		and ([.s2, .s3 | writes] == [.plannever[0].src_ranks[2, 3].writes * 3])
		and ([.s2, .s3 | writes] == [37*2*4*3, 37*2*4*3])
		and ([.s0, .s1, .s2, .s3] | all(ev("done") | all(.unpack_us >= 0 and .exposed_us >= .unpack_us)))
		and (.d0 | ev("done") | all(.unpack_us > 0))
		and ((.d0 | ev("done") | sort_by(.request) | map(.unpack_us)) as $d
		| [.s0, .s1] | all(ev("done") | sort_by(.request) | map(.unpack_us)
			| [., $d] | transpose | all(.[0] - .[1] | . < 1 and . > -1)))
		and ([.d0, .d1] | all(ev("done") | all(.complete_us >= (.landed_us | max)
			and .complete_us <= .seconds * 1e6)))
		and ([[.d0, .s0, .s1], [.d1, .s2, .s3]] | all(.[]; .[0] as $d | [.[1:][] | ev("done")[]]
			| all(.[]; . as $x | [$d | ev("done")[] | select(.request == $x.request)] | length == 1
				and (.[0] | .started_at > 1.6e9 and .started_at < $x.started_at
					and .started_at + .complete_us / 1e6 > $x.started_at))))' s0 s1 s2 s3 d0 d1 planauto plannever
}

@test "--land-pages: a landing area of one request's pages serves two in flight in turn; a request larger than it is refused before it starts" {
	# nhd TP 4 -> 2, 37 tokens: 5 destination pages of 8 tokens a request.
	# Decode rank 0: a pool of 10 pages, a landing area of 5 units (a unit:
	# 8 tokens x 4 heads x 32 bytes): two requests in flight get pages at
	# once, landing runs in turn. Decode rank 1: 4 units, too few for a
	# request: a source that lands fails before it starts, naming
	# --land-pages; the
	# direct path (--land never) is served.
	local L=(--layers 4 --kv-heads 8 --head-dim 16 --src-page-tokens 4 --dst-page-tokens 8
		 --src-tp 4 --dst-tp 2)
	serve_bg d0 "${L[@]}" --rank 0 --pool-pages 10 --land-pages 5 --scatter 5 --verify --requests 3
	serve_bg d1 "${L[@]}" --rank 1 --pool-pages 10 --land-pages 4 --verify --requests 1
	wait_listening d0 d1
	for s in 0 1; do
		send "s$s" "${L[@]}" --rank "$s" --connect "$ADDR:$PORT_d0" --tokens 37 --requests 3 \
			--inflight 2 --qps 2
	done
	run rdmactl kvxfer send "${L[@]}" --rank 2 --connect "$ADDR:$PORT_d1" --tokens 37
	assert_failure 1
	assert_output --partial "landing area holds 4 pages, a request of 37 tokens needs 5: serve with a larger --land-pages"
	for s in 2 3; do
		send "s$s" "${L[@]}" --rank "$s" --connect "$ADDR:$PORT_d1" --tokens 37 --land never
	done
	reap s0 s1 s2 s3 d0 d1
	status 0 s0 s1 s2 s3 d0 d1
	check '([.s0, .s1, .d0] | all(verified(3))) and ([.s2, .s3, .d1] | all(verified(1)))
		and (.d0 | ev("listening")[0] | .pool_bytes == 4*2*10*1024 and .land_bytes == 4*2*5*1024)
		and (.d1 | ev("listening")[0] | .land_bytes == 4*2*4*1024)
		and ([.s0, .s1] | all(ev("summary")[0].routes_landed == 1))
		and ([.s2, .s3] | all(ev("summary")[0].routes_landed == 0))' s0 s1 s2 s3 d0 d1
}

# bats test_tags=plain-only
@test "scattered destination pages and unequal page sizes (nhd and hnd) land verified" {
	for layout in nhd hnd; do
		serve_bg "d$layout" --layers 3 --kv-heads 4 --head-dim 8 --src-page-tokens 4 \
			--dst-page-tokens 6 --page-layout "$layout" --pool-pages 40 --scatter 42 --verify --requests 4
	done
	wait_listening dnhd dhnd
	for layout in nhd hnd; do
		p=PORT_d$layout
		send "s$layout" --layers 3 --kv-heads 4 --head-dim 8 --src-page-tokens 4 \
			--dst-page-tokens 6 --page-layout "$layout" --connect "$ADDR:${!p}" --tokens 23 \
			--requests 4 --inflight 3
	done
	reap snhd shnd dnhd dhnd
	status 0 snhd shnd dnhd dhnd
	check 'all(.[]; verified(4))' snhd shnd dnhd dhnd
}

# bats test_tags=plain-only
@test "nhd TP 2 -> 1 landing with every destination page full: 32 tokens in four 8-token pages, unpacked, verified" {
	# The other landing tests leave their last destination page partial; an
	# unpack that took a full last page for an empty one passes them.
	local L=(--layers 4 --kv-heads 8 --head-dim 16 --src-page-tokens 4 --dst-page-tokens 8
		 --src-tp 2 --dst-tp 1)
	serve d0 "${L[@]}" --pool-pages 16 --scatter 7 --verify --requests 2
	for s in 0 1; do
		send "s$s" "${L[@]}" --rank "$s" --connect "$ADDR:$PORT_d0" --tokens 32 --requests 2 \
			--land always
	done
	reap s0 s1 d0
	status 0 s0 s1 d0
	check '([.s0, .s1, .d0] | all(verified(2)))
		and ([.s0, .s1] | all(ev("summary")[0].routes_landed == 1))
		and (.d0 | ev("done") | all(.unpack_us > 0 and .sources == [0,1]))' s0 s1 d0
}

@test "--verify, the negative: a request that arrives with one byte wrong fails on both sides, the next is verified" {
	# The hook flips the first byte of request 0's last source page of its
	# last layer half: 10 tokens in 4-token pages, token 8 of layer 3's V.
	# Without --verify (d1) nothing is checked, and nothing says verified.
	serve d0 "${G[@]}" --pool-pages 16 --verify --requests 2
	serve d1 "${G[@]}" --pool-pages 16 --requests 1
	RDMACTL_TEST_KV_CORRUPT=0 send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 2
	RDMACTL_TEST_KV_CORRUPT=0 send s1 "${G[@]}" --connect "$ADDR:$PORT_d1" --tokens 10
	reap s0 d0 s1 d1
	status 1 s0 d0
	status 0 s1 d1
	check '(.d0 | ev("failed") | length == 1 and (.[0] | .request == 0 and .checked and (.verified | not)
			and (.reason | startswith("verification failed: request 0 layer 3 V token 8 head 0 dim 0: found "))))
		and (.d0 | ev("done") | length == 1 and .[0].request == 1 and .[0].verified)
		and (.s0 | ev("failed") | length == 1 and .[0].request == 0 and (.[0].verified | not)
			and .[0].reason == "decode rank 0: verification failed")
		and ([.d0, .s0] | all(ev("summary")[0] | .done == 1 and .verified == 1 and .failed == 1))
		and ([.d0, .s0] | all(.[-1].error.message == "1 request failed"))
		and ([.d1, .s1] | all(ev("done") | length == 1 and all((.checked | not) and (.verified | not))))
		and ([.d1, .s1] | all(ev("summary")[0] | .done == 1 and .verified == 0 and .failed == 0))' s0 d0 s1 d1
}

# bats test_tags=plain-only
@test "a layer's writes spread over four QPs; the decode rank counts every notification" {
	# --scatter: pages adjacent on both sides would merge into fewer writes than QPs.
	serve d0 "${G[@]}" --pool-pages 64 --verify --requests 2 --scatter 7
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 40 --requests 2 --qps 4 \
		--layer-compute-us 1000
	reap s0 d0
	status 0 s0 d0
	# 40 tokens x 8 heads x 16 dims x 2 bytes x K+V x 4 layers x 2 requests
	# = 163840 bytes, and every QP carried its share of it: at least one
	# write per layer and request (the notification) and payload bytes.
	check 'all(.[]; verified(2)) and (.d0 | ev("connected")[0].qps == 4)
		and (.s0 | ev("summary")[0] | (.qp_bytes | length == 4 and add == 163840 and all(. >= 163840 / 8))
			and (.qp_writes | length == 4 and all(. >= 4 * 2)))' s0 d0
}

# bats test_tags=plain-only
@test "cancel from the prefill side: cancelled on both sides, pages reused, next request verified" {
	# The pool holds exactly one request (10 tokens = 3 pages of 4): the
	# third request can only run in the pages the cancelled one gave back.
	serve d0 "${G[@]}" --pool-pages 3 --verify --requests 3
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 3 \
		--layer-compute-us 20000 --cancel-request 1 --cancel-after-layers 2
	reap s0 d0
	status 0 s0 d0
	check '(.d0 | verified(2) and (ev("done") | map(.request)) == [0,2])
		and (.d0 | ev("cancelled") | length == 1 and .[0].request == 1 and .[0].verified == false
			and (.[0].reason | test("source rank 0 after 2 layers")))
		and (.s0 | ev("cancelled") | length == 1 and .[0].request == 1 and .[0].layers_landed <= 2)
		and (.s0 | ev("summary")[0] | [.done, .cancelled, .failed] == [2,1,0])' s0 d0
}

@test "without --verify, a cancelled request's pages go to the request waiting for them" {
	# The pool holds one request (10 tokens = 3 pages of 4) and two are in
	# flight: request 1 waits for the pages of request 0, which its cancel
	# gives back. No later REQ or completion comes to hand them on.
	serve d0 "${G[@]}" --pool-pages 3 --requests 2
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 2 --inflight 2 \
		--layer-compute-us 20000 --cancel-request 0 --cancel-after-layers 2
	KV_REAP_S=30 reap s0 d0
	status 0 s0 d0
	check '(.d0 | (ev("done") | map(.request)) == [1] and (ev("cancelled") | map(.request)) == [0])
		and (.s0 | ev("summary")[0] | [.done, .cancelled, .failed] == [1,1,0])' s0 d0
}

@test "cancel from the decode side: the prefill rank stops and reports it cancelled" {
	serve d0 "${G[@]}" --pool-pages 3 --verify --requests 2 --cancel-request 0 --cancel-after-layers 1
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 2 --layer-compute-us 50000
	reap s0 d0
	status 0 s0 d0
	check '(.s0 | ev("cancelled") | length == 1 and .[0].request == 0 and .[0].layers_landed < 4
			and (.[0].reason | test("cancelled by decode rank 0")))
		and (.d0 | ev("cancelled") | map(.request) == [0])
		and (.d0 | verified(1) and ev("done")[0].request == 1)' s0 d0
}

@test "a prefill rank killed mid-request: the decode rank fails it, never verified, then serves again" {
	serve d0 "${G[@]}" --pool-pages 3 --verify --requests 2 --heartbeat-timeout 2000
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 1 --layer-compute-us 1000000
	wait_event s0 ready
	sleep 1.5 # a layer posted (at 1 s), not all four (at 4 s): room for a loaded machine
	kill -KILL "${KV_PID[s0]}"
	start=$SECONDS
	for ((i = 0; i < 150; i++)); do
		grep -q '"event":"failed"' "$KV_OUT/d0.out" && break
		sleep 0.1
	done
	((SECONDS - start < 10))
	# The pages came back: a new prefill rank 0 moves request 0 again.
	send s1 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 1
	reap s1 d0
	status 0 s1
	status 1 d0 # one request failed
	# The dead rank landed a layer or more in the very pages s1 gets for
	# the same request id: released pages are poisoned, so s1 passes
	# --verify only by writing every layer itself.
	check '(.d0 | ev("failed") | length == 1 and .[0].request == 0 and .[0].verified == false
			and .[0].layers_landed < 4 and .[0].layers_landed >= 1 and (.[0].reason | test("source rank 0 .* is gone")))
		and (.d0 | ev("done") | length == 1 and .[0].verified)
		and (.d0 | ev("summary")[0] | [.done, .failed] == [1,1])
		and (.s1 | verified(1))' s1 d0
}

@test "a decode rank killed mid-request: the prefill rank fails its requests with a clear error" {
	serve d0 "${G[@]}" --pool-pages 64
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 2 --layer-compute-us 1000000 \
		--heartbeat-timeout 1500
	wait_event s0 ready
	sleep 1.5 # layer 0 of request 0 posted, not the last
	kill -KILL "${KV_PID[d0]}"
	reap s0
	status 1 s0
	check '.s0 | (ev("failed") | length >= 1 and all(.reason | test("decode rank 0 .* is gone")))
		and (ev("done") | length == 0)' s0
}

@test "a silent decode rank (stopped) is declared dead after --heartbeat-timeout" {
	serve d0 "${G[@]}" --pool-pages 64
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --requests 2 --layer-compute-us 500000 \
		--heartbeat-ms 100 --heartbeat-timeout 1000
	wait_event s0 ready
	sleep 0.5
	kill -STOP "${KV_PID[d0]}"
	start=$SECONDS
	reap s0
	kill -CONT "${KV_PID[d0]}"
	status 1 s0
	((SECONDS - start < 15))
	check '.s0 | (ev("disconnected")[0].reason | test("no heartbeat for 1000 ms"))
		and (ev("failed") | length >= 1 and all(.verified == false))' s0
}

@test "8 KV heads at TP 16: decode ranks hold replicas, verified" {
	heavy_sibling "MLA replicates to two decode ranks through the same routes"
	T=(--layers 2 --kv-heads 8 --head-dim 8 --page-tokens 4 --src-tp 2 --dst-tp 16)
	names=()
	for d in $(seq 0 15); do
		serve_bg "d$d" "${T[@]}" --rank "$d" --pool-pages 8 --verify --requests 1
		names+=("d$d")
	done
	wait_listening "${names[@]}"
	for s in 0 1; do
		c=()
		for d in $(seq $((s * 8)) $((s * 8 + 7))); do
			p=PORT_d$d
			c+=(--connect "$ADDR:${!p}")
		done
		send "s$s" "${T[@]}" --rank "$s" "${c[@]}" --tokens 6
	done
	reap s0 s1 "${names[@]}"
	status 0 s0 s1 "${names[@]}"
	# Ranks 2 and 3 hold replicas of head 1: the same bytes, from source rank 0.
	check 'all(.[]; verified(1)) and (.d3 | ev("done")[0] | .sources == [0] and .bytes == 6*8*2*2*2)
		and (.d12 | ev("done")[0].sources == [1])' s0 s1 "${names[@]}"
}

@test "MLA: one prefill rank replicates the latent to two decode ranks, verified" {
	M=(--layout mla --layers 3 --latent-dim 72 --page-tokens 8 --src-tp 1 --dst-tp 2)
	serve_bg d0 "${M[@]}" --rank 0 --pool-pages 8 --verify --requests 2
	serve_bg d1 "${M[@]}" --rank 1 --pool-pages 8 --verify --requests 2 --scatter 3
	wait_listening d0 d1
	send s0 "${M[@]}" --connect "$ADDR:$PORT_d0" --connect "$ADDR:$PORT_d1" --tokens 17 --requests 2
	reap s0 d0 d1
	status 0 s0 d0 d1
	check 'all(.[]; verified(2)) and (.d1 | ev("done") | all(.bytes == 17*72*2*3))' s0 d0 d1
}

@test "a geometry mismatch is refused at the handshake; only the decode rank's log names the values" {
	serve d0 "${G[@]}" --dst-page-tokens 8 --pool-pages 16
	run rdmactl kvxfer send "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10
	assert_failure 1
	assert_output --partial "refused this source rank: HELLO refused: it does not match this decode rank"
	refute_output --partial "page tokens"
	run rdmactl kvxfer send "${G[@]}" --dst-page-tokens 8 --src-tp 2 --rank 0 --connect "$ADDR:$PORT_d0" --tokens 10
	assert_failure 1
	assert_output --partial "HELLO refused: it does not match this decode rank"
	refute_output --partial "src TP"
	wait_events d0 refused 2
	check '.d0 | ev("refused") | map(.reason) as $r | length == 2
		and ($r[0] | contains("geometry mismatch: decode rank has dst page tokens 8, the source rank 4"))
		and ($r[1] | contains("geometry mismatch: decode rank has src TP 1, the source rank 2"))
		and all(.peer_rank == 0)' d0
}

# The hostile source (tests/rxe/kv_hostile.c) against a decode rank with a
# token: what it is told, what it holds, and that the real source is served.
KV_HOSTILE=${KV_HOSTILE:-$BUILD_DIR/tests/rxe/kv_hostile}

hostile() {
	run "$KV_HOSTILE" "$@"
	echo "$output" >&2
	assert_success
}

# Nothing of the decode rank's pool or geometry in what a refused peer read.
no_leak() {
	refute_output --partial "welcome"
	refute_output --partial "rkey"
	refute_output --partial "base="
	refute_output --partial "decode rank has"
}

@test "hostile: no token, a wrong one, one that extends the right one and a prefix of it are refused at HELLO, no rkey; a sender with a wrong token refuses the decode rank; the real source gets its rank" {
	serve d0 "${G[@]}" --pool-pages 16 --verify --requests 1 --token s3cret
	local t
	for t in "" s3cre7 s3cretX s3cre; do
		hostile hello "$ADDR" "$PORT_d0" ${t:+-T "$t"}
		# The proof in HELLO fails: the one sentence, then the connection closes.
		assert_output --partial "error code=129 text=HELLO refused: not authorised (a missing or wrong token)"
		assert_output --partial "closed after"
		no_leak
	done
	# A sender with another token finds the decode rank's proof wrong and
	# sends it nothing.
	for t in wrong s3cretX; do
		run rdmactl -j kvxfer send "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --token "$t"
		assert_failure
		assert_output --partial "not authorised (a missing or wrong token on its side)"
		jq -e -s 'map(select(.error)) | length == 1 and .[0].error.code == "EKEYREJECTED"' <<<"$output"
	done
	# The token from the environment, as register takes it.
	RDMACTL_TOKEN=s3cret send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10
	reap s0 d0
	status 0 s0 d0
	check '(.d0 | verified(1)) and (.s0 | verified(1))
		and (.d0 | ev("refused") | map(.reason) as $r | length == 6
			and ($r[0] == "HELLO refused: not authorised: no proof of the token in HELLO")
			and ($r[1:4] | all(. == "HELLO refused: not authorised: a wrong proof of the token in HELLO"))
			and ($r[4:] | all(test("HELLO") | not)))
		and (.d0 | ev("connected") | length == 1)' s0 d0
}

# bats test_tags=plain-only
@test "hostile: 16 connects that never send HELLO: a sender with the token is served while they wait, the oldest dropped for it" {
	serve d0 "${G[@]}" --pool-pages 16 --verify --requests 1 --token s3cret
	local i n
	for ((i = 0; i < 16; i++)); do
		"$KV_HOSTILE" squat "$ADDR" "$PORT_d0" -s 60 >"$KV_OUT/squat.$i.out" 2>&1 &
		KV_PID[squat$i]=$!
	done
	# Every one connected: without a challenge answered, nothing tells them apart yet.
	for ((n = 0; n < 300; n++)); do
		if [ "$(grep -lE "connected|rejected" "$KV_OUT"/squat.*.out | wc -l)" -eq 16 ]; then break; fi
		sleep 0.1
	done
	run cat "$KV_OUT"/squat.*.out
	[ "$(grep -c "^connected" <<<"$output")" -eq 16 ] || fail "not 16 connected: $output"
	printf 's3cret\n' >"$KV_OUT/tok"
	chmod 600 "$KV_OUT/tok"
	# With 16 waiting, a decode rank that did not drop one would refuse
	# this sender at once ("16 connections wait for their HELLO already").
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --token-file "$KV_OUT/tok"
	reap s0 d0
	for ((i = 0; i < 16; i++)); do
		reap "squat$i"
	done
	run cat "$KV_OUT"/squat.*.out
	[ "$(grep -c "closed after" <<<"$output")" -eq 16 ] || fail "not 16 closed: $output"
	status 0 s0 d0
	check '(.d0 | verified(1)) and (.s0 | verified(1)) and (.d0 | ev("connected") | length == 1)
		and (.d0 | ev("refused") | map(.reason) | length == 16
			and any(. == "no HELLO yet: dropped for a newer connection (16 wait at most)"))' s0 d0
}

# bats test_tags=plain-only
@test "hostile: a data QP proven under a secret one bit off is refused for its proof, before and after the right one joined; each index joins once" {
	serve d0 "${G[@]}" --pool-pages 16 --requests 1 --token s3cret
	hostile wrong-proof "$ADDR" "$PORT_d0" -T s3cret
	assert_output --partial "welcome"
	refute_output --partial "accepted with a wrong proof"
	assert_output --partial "data QP 1 accepted with the proof"
	[ "$(grep -c "rejected: data QP 1" <<<"$output")" -eq 3 ] || fail "not 3 rejected: $output"
	kill -TERM "${KV_PID[d0]}"
	reap d0
	# The wrong proof's own reason, whether the slot was free or taken; the
	# right proof a second time: connected already.
	check '.d0 | ev("refused") | map(.reason) as $r | length == 3
		and ($r[0] == "not authorised: data QP 1 of source rank 0 without its session'"'"'s proof")
		and ($r[1] == $r[0])
		and ($r[2] == "data QP 1 of source rank 0: connected already or not one of its 1")' d0
}

# The bytes of one honest exchange (tests/rxe/kv_replay.c), recorded by a
# decode rank that holds the token, as a sniffer on the path would see them.
KV_REPLAY=${KV_REPLAY:-$BUILD_DIR/tests/rxe/kv_replay}

# record_exchange FILE: an honest sender with the token s3cret meets the
# recorder on a fresh port, which keeps its connect request and HELLO.
record_exchange() {
	local port i
	PORT_SEQ=$((${PORT_SEQ:-0} + 1))
	port=$((18000 + BATS_TEST_NUMBER * 20 + PORT_SEQ))
	KV_REPLAY_TOKEN=s3cret "$KV_REPLAY" record "$ADDR" "$port" "$1" >"$KV_OUT/rec.out" 2>&1 &
	KV_PID[rec]=$!
	for ((i = 0; i < 300; i++)); do
		grep -q listening "$KV_OUT/rec.out" && break
		sleep 0.1
	done
	# The recorder hangs up after the HELLO: this sender fails, as it should.
	"$RDMACTL" -t 5000 kvxfer send "${G[@]}" --connect "$ADDR:$port" --tokens 10 --token s3cret \
		>"$KV_OUT/honest0.out" 2>&1 || true
	reap rec
	grep -E "recorded connect=[0-9]+ hello=[0-9]+" "$KV_OUT/rec.out"
}

@test "hostile: an honest sender's connect request and HELLO, replayed to a restarted decode rank with the same token 17 times, get no WELCOME and write nothing; the real source is served" {
	# sanitizer tier: always (a replayed HELLO refused before anything is held)
	local i
	record_exchange "$KV_OUT/rec"
	serve d0 "${G[@]}" --pool-pages 16 --verify --requests 1 --token s3cret
	run "$KV_REPLAY" replay "$ADDR" "$PORT_d0" "$KV_OUT/rec" 5
	echo "$output" >&2
	assert_success
	assert_output --partial "error code=129 text=HELLO refused: not authorised (a missing or wrong token)"
	assert_output --partial "closed after"
	refute_output --partial "welcome"
	refute_output --partial "wrote"
	# 16 more at once: each refused, none holds the rank or a pending slot.
	for ((i = 0; i < 16; i++)); do
		"$KV_REPLAY" replay "$ADDR" "$PORT_d0" "$KV_OUT/rec" 20 >"$KV_OUT/replay.$i.out" 2>&1 &
		KV_PID[replay$i]=$!
	done
	for ((i = 0; i < 16; i++)); do
		reap "replay$i"
	done
	run cat "$KV_OUT"/replay.*.out
	refute_output --partial "welcome"
	refute_output --partial "wrote"
	[ "$(grep -c "error code=129 text=HELLO refused: not authorised" <<<"$output")" -eq 16 ] ||
		fail "not 16 refused: $output"
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --token s3cret
	reap s0 d0
	status 0 s0 d0
	check '(.d0 | verified(1)) and (.s0 | verified(1))
		and (.d0 | ev("connected") | length == 1)
		and (.d0 | ev("refused") | map(.reason) | length == 17
			and all(. == "HELLO refused: not authorised: a wrong proof of the token in HELLO"))' s0 d0
}

@test "a decode rank without the token, or with another, is refused by the sender before its HELLO (EKEYREJECTED); one with the token serves" {
	local p
	serve d0 "${G[@]}" --pool-pages 16
	serve d1 "${G[@]}" --pool-pages 16 --token 0ther
	for p in "$PORT_d0" "$PORT_d1"; do
		run "$RDMACTL" -j kvxfer send "${G[@]}" --connect "$ADDR:$p" --tokens 10 --token s3cret
		echo "$output" >&2
		assert_failure
		jq -e -s 'map(select(.error)) | length == 1 and .[0].error.code == "EKEYREJECTED"
			and (.[0].error.message | test("decode rank at .* did not prove the token: not authorised \\(a missing or wrong token on its side\\); nothing was sent to it"))' <<<"$output"
	done
	serve d2 "${G[@]}" --pool-pages 16 --verify --requests 1 --token s3cret
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d2" --tokens 10 --token s3cret
	reap s0 d2
	kill -TERM "${KV_PID[d0]}" "${KV_PID[d1]}"
	reap d0 d1
	status 0 s0 d2
	# No HELLO reached the other two: nothing connected, no HELLO refused.
	check '(.d2 | verified(1)) and (.s0 | verified(1))
		and ([.d0, .d1] | all(ev("connected") | length == 0))
		and ([.d0, .d1] | all(ev("refused") | all(.reason | test("HELLO") | not)))' s0 d0 d1 d2
}

@test "hostile: a data QP on the decode rank's other rail than its control QP is refused, naming both rails; on its own rail it joins" {
	need_four_nics
	# sanitizer tier: always (a refusal on a state check of the rails)
	ADDR=$RDMACTL_VM_ADDR_B KV_RAIL2=$RDMACTL_VM_ADDR_D serve d0 "${G[@]}" --pool-pages 16 \
		--requests 1 --token s3cret
	hostile other-rail "$RDMACTL_VM_ADDR_B" "$PORT_d0" -T s3cret -R "$RDMACTL_VM_ADDR_D"
	assert_output --partial "welcome"
	assert_output --partial "rejected: data QP 1"
	refute_output --partial "accepted on the other rail"
	assert_output --partial "data QP 1 accepted on the control QP's rail"
	kill -TERM "${KV_PID[d0]}"
	reap d0
	check ".d0 | ev(\"refused\") | map(.reason) | any(. == \"data QP 1 of source rank 0 on rail 2 ($RDMACTL_VM_DEV_D), its control QP on rail 1 ($RDMACTL_VM_DEV_B)\")" d0
}

@test "hostile: a wrong HELLO, field by field, is told nothing of the decode rank's geometry" {
	local f n=0
	serve d0 "${G[@]}" --pool-pages 16 --verify --requests 1 --token s3cret
	for f in layers=5 kv_heads=4 head_dim=32 src_tp=2 dst_tp=2 src_page_tokens=8 \
		dst_page_tokens=8 dtype=1 layout=1 page_layout=1 rank=1 nqps=2; do
		hostile hello "$ADDR" "$PORT_d0" -T s3cret -f "$f"
		# The one generic sentence, nothing else of the decode rank.
		assert_output --partial "error code=22 text=HELLO refused: it does not match this decode rank (geometry, rank or QPs); the decode rank's log names the difference"
		assert_output --partial "closed after"
		no_leak
		n=$((n + 1))
	done
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --token s3cret
	reap s0 d0
	status 0 s0 d0
	# The operator's log names each field.
	check "(.d0 | verified(1)) and (.s0 | verified(1))
		and (.d0 | ev(\"refused\") | length == $n
			and (map(.reason) | map(select(test(\"geometry mismatch: decode rank has\"))) | length == 10)
			and (map(.reason) | map(select(test(\"does not match its connect request\"))) | length == 2))" s0 d0
}

@test "hostile: heartbeats before HELLO, a silent squatter and a data QP first hold no rank" {
	serve d0 "${G[@]}" --pool-pages 16 --verify --requests 1 --token s3cret
	"$KV_HOSTILE" squat "$ADDR" "$PORT_d0" -T s3cret -s 60 >"$KV_OUT/squat.out" 2>&1 &
	KV_PID[squat]=$!
	for ((i = 0; i < 300; i++)); do
		grep -q connected "$KV_OUT/squat.out" && break
		sleep 0.1
	done
	hostile hb-first "$ADDR" "$PORT_d0" -T s3cret -s 5
	assert_output --regexp "closed after [0-9]+ ms"
	hostile data-first "$ADDR" "$PORT_d0" -T s3cret
	assert_output --partial "rejected: data QP 1"
	# The real source gets rank 0, the squatter connected or not.
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --token s3cret
	reap s0 d0 squat
	status 0 s0 d0
	grep -q "closed after" "$KV_OUT/squat.out"
	check '(.d0 | verified(1)) and (.s0 | verified(1))
		and (.d0 | ev("refused") | map(.reason) | any(test("sent HB before HELLO"))
			and any(test("data QP 1 of source rank 0 before a valid HELLO")))' s0 d0
}

@test "a source of an earlier protocol (KVX2, no landing) is refused by name; the real source is served" {
	serve d0 "${G[@]}" --pool-pages 16 --verify --requests 1
	hostile v2 "$ADDR" "$PORT_d0"
	assert_output --partial "rejected: data QP 0"
	refute_output --partial "accepted"
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10
	reap s0 d0
	status 0 s0 d0
	check '(.d0 | verified(1)) and (.s0 | verified(1))
		and (.d0 | ev("refused") | map(.reason) | any(test("of an earlier protocol .*speaks protocol 7")))' s0 d0
}

# bats test_tags=plain-only
@test "hostile: a REQ sent again and again does not hold the request: it still times out" {
	serve d0 "${G[@]}" --pool-pages 16 --token s3cret
	hostile dup-req "$ADDR" "$PORT_d0" -T s3cret -s 40
	assert_output --partial "alloc req=0"
	assert_output --partial "cancel req=0 code=110 text=request 0: nothing from its sources for"
	assert_output --regexp "ended after [0-9]+ ms, [1-9][0-9]+ duplicate REQs"
}

@test "hostile: an RDMA WRITE with immediate on the control QP is refused by the NIC (no remote access) and drops that source, not the next" {
	serve d0 "${G[@]}" --pool-pages 16 --verify --requests 1 --token s3cret
	hostile ctrl-imm "$ADDR" "$PORT_d0" -T s3cret
	assert_output --partial "welcome"
	assert_output --partial "RDMA WRITE with immediate on the control QP refused: remote invalid request error"
	assert_output --partial "closed after"
	wait_event d0 disconnected
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --token s3cret
	reap s0 d0
	status 0 s0 d0
	check '(.d0 | verified(1)) and (.s0 | verified(1))
		and (.d0 | ev("disconnected")[0].reason | test("^RECV from .* failed"))' s0 d0
}

@test "hostile: a control QP that never proved the token can neither read nor write the pool" {
	# sanitizer tier: always (the pool's QP access, withheld)
	serve d0 "${G[@]}" --pool-pages 16 --verify --requests 1 --token s3cret
	hostile ctrl-rdma "$ADDR" "$PORT_d0" -T s3cret
	assert_output --partial "welcome"
	assert_output --partial "RDMA READ on an unproven control QP refused"
	assert_output --partial "RDMA WRITE on an unproven control QP refused"
	refute_output --partial "completed"
	wait_event d0 disconnected
	send s0 "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --token s3cret
	reap s0 d0
	status 0 s0 d0
	check '(.d0 | verified(1)) and (.s0 | verified(1))' s0 d0
}

@test "hostile: two notifications on one data QP and none on the other land no layer" {
	serve d0 "${G[@]}" --pool-pages 16 --verify --requests 1 --token s3cret
	hostile one-qp "$ADDR" "$PORT_d0" -T s3cret -s 30
	assert_output --partial "alloc req=0"
	assert_output --partial "cancel req=0 code=71 text=source rank 0 notified layer 0 of request 0 twice on data QP 1"
	reap d0
	check '.d0 | ev("failed") | length == 1 and .[0].layers_landed == 0
		and (.[0].landed_us | all(. == null)) and (.[0].reason | test("twice on data QP 1"))' d0
}

@test "a large request verified and filled in slices: heartbeats of 50 ms, timeout 400 ms, nobody declared dead" {
	heavy_sibling "a timing property of 256 MiB; every other kvxfer test fills and verifies in the same slices"
	# In this project's CI guest (kernel 6.1.0-57) serve now declares the
	# sender dead 0.4 to 2 s into the first request, loaded or not: a timing
	# property, so it is opt-in until the stall is found (CHANGES.md).
	[[ ${RDMACTL_TEST_TIMING:-} == 1 ]] ||
		skip "a timing property (400 ms heartbeats across a 256 MiB fill and verify) that fails in this guest; RDMACTL_TEST_TIMING=1 runs it"
	# 256 MiB a request: seconds of filling (send) and checking (serve)
	# under TCG, many times the heartbeat timeout.
	# The sanitizer build checks 256 MiB in more than the default 10 s, so the
	# end of a request may take up to a minute here (-t); the heartbeats still
	# have 400 ms. The two processes get 150 s to end (reap).
	local KV_T=60000 KV_REAP_S=150
	local B=(--layers 4 --kv-heads 8 --head-dim 128 --page-tokens 16 --heartbeat-ms 50 --heartbeat-timeout 400)
	serve d0 "${B[@]}" --pool-pages 1024 --verify --requests 2
	send s0 "${B[@]}" --connect "$ADDR:$PORT_d0" --tokens 16384 --requests 2
	reap s0 d0
	jq -r 'select(.event == "done") | "# request \(.request): \(.seconds) s, verified in \(.seconds - (.landed_us | max) / 1e6) s"' \
		"$KV_OUT/d0.out" >&3
	status 0 s0 d0
	# Verification (last layer landed -> reported) outlasted the timeout.
	check '(.d0 | verified(2)) and (.s0 | verified(2))
		and (.d0 | ev("done") | all(.bytes == 16384*4*2*8*128*2))
		and (.d0 | ev("done") | map(.seconds * 1e6 - (.landed_us | max)) | max > 400000)
		and ([.[] | ev("disconnected")[] | .reason | select(test("heartbeat"))] | length == 0)' s0 d0
}

# two_nics_pack LAYOUT SGE: TP 4 -> 2 with 4-token source pages into 8-token
# destination pages, the decode ranks on device B, the prefill ranks bound
# to device A; one set with --pack always --max-sge SGE (32: gathered by the
# NIC, rxe takes 32 entries; 1: copied into staging), one with --pack never,
# at once. Three requests, two in flight: a staging slot is reused.
two_nics_pack() {
	local layout=$1 sge=$2 pack d s p names=()
	T=(--layers 3 --kv-heads 8 --head-dim 16 --src-page-tokens 4 --dst-page-tokens 8
	   --src-tp 4 --dst-tp 2 --page-layout "$layout")
	ADDR=$RDMACTL_VM_ADDR_B
	for pack in always never; do
		for d in 0 1; do
			serve_bg "d$d$pack" "${T[@]}" --rank "$d" --pool-pages 24 --scatter $((d + 5)) \
				--verify --requests 3
			names+=("d$d$pack")
		done
	done
	wait_listening "${names[@]}"
	for pack in always never; do
		for s in 0 1 2 3; do
			p=PORT_d$((s / 2))$pack
			send "s$s$pack" "${T[@]}" --rank "$s" --connect "$ADDR:${!p}" --bind "$RDMACTL_VM_ADDR_A" \
				--tokens 19 --requests 3 --inflight 2 --qps 2 --pack "$pack" --max-sge "$sge"
			names+=("s$s$pack")
		done
	done
	reap "${names[@]}"
	status 0 "${names[@]}"
	# What plan says each choice gives each source rank (pages apart).
	for pack in always never; do
		"$RDMACTL" -j kvxfer plan "${T[@]}" --tokens 19 --qps 2 --pack "$pack" --max-sge "$sge" \
			>"$KV_OUT/plan$pack.out"
	done
	# Every request verified on device B, from senders on device A; each
	# sender packed its one route (or not), copied or gathered exactly its
	# bytes (19 tokens x 2 heads x 32 bytes x K+V x 3 layers x 3 requests),
	# and posted the writes plan counts for it (each route fills half of
	# every destination row or head block: no neighbouring pages can merge).
	check "def A: \"$RDMACTL_VM_ADDR_A\"; def devA: \"$RDMACTL_VM_DEV_A\";
		def devB: \"$RDMACTL_VM_DEV_B\"; def sge: $sge; $TWO_NICS_CHECK" "${names[@]}" planalways plannever
}
TWO_NICS_CHECK='
	def ranks($k): to_entries | map(select(.key | test($k)) | .value);
	def writes: ev("summary")[0].qp_writes | add;
	(.planalways[0].src_ranks | map(.writes * 3)) as $pa
	| (.plannever[0].src_ranks | map(.writes * 3)) as $pn
	| (ranks("^[sd]") | all(verified(3)))
	and (ranks("^d") | all(ev("listening")[0].device == devB
		and (ev("connected") | length == 2 and all(.peer | startswith(A + ":")))))
	and (ranks("^s") | all(ev("connected")[0].device == devA))
	and (ranks("^s.always") | all(ev("summary")[0]
		| .routes == 1 and .routes_packed == 1 and .gather_sge == sge
		and (if sge == 1 then .packed_bytes == 19*2*32*2*3*3 and .gathered_bytes == 0
		     else .packed_bytes == 0 and .gathered_bytes == 19*2*32*2*3*3 end)))
	and (ranks("^s.never") | all(ev("summary")[0]
		| .routes == 1 and .routes_packed == 0 and .packed_bytes == 0 and .gathered_bytes == 0))
	and (.planalways[0].pack.max_sge == sge)
	and ([range(4) as $r | .["s\($r)always"] | writes] == $pa)
	and ([range(4) as $r | .["s\($r)never"] | writes] == $pn)'

@test "two NICs, TP 4 -> 2, hnd pages: --pack always (gathered by the NIC) and never land verified across the veth pair" {
	need_two_nics
	heavy_sibling "the nhd twin crosses the pair; the fake-GPU send test gathers and copies"
	two_nics_pack hnd 32
	# hnd: packing joins each head's 4-token runs into the 8-token page's.
	check '.planalways[0].pack.always.writes < .planalways[0].pack.never.writes' planalways
}

# bats test_tags=plain-only
@test "two NICs, TP 4 -> 2, nhd pages: --pack always (copied into staging) and never land verified across the veth pair" {
	need_two_nics
	two_nics_pack nhd 1
	# nhd: two sources interleave in every destination row; nothing joins.
	check '.planalways[0].pack.always.writes == .planalways[0].pack.never.writes' planalways
}

# rails_tp2 TO FROM [SERVE-ARGS...]: TP 2 -> 1, the decode rank serving on
# rxe_b and rxe_d (two rails) with SERVE-ARGS (default --verify), source
# rank 0 from rxe_a to rxe_b, source rank 1 from the address FROM to the
# address TO (rxe_c to rxe_d: a rail of its own; rxe_a to rxe_b: rank 0's).
# Three requests.
rails_tp2() {
	local to=$1 from=$2
	shift 2
	(($#)) || set -- --verify
	T=(--layers 4 --kv-heads 8 --head-dim 16 --page-tokens 4 --src-tp 2 --dst-tp 1)
	ADDR=$RDMACTL_VM_ADDR_B KV_RAIL2=$RDMACTL_VM_ADDR_D serve d0 "${T[@]}" --pool-pages 32 \
		--requests 3 "$@"
	send s0 "${T[@]}" --rank 0 --connect "$RDMACTL_VM_ADDR_B:$PORT_d0" --bind "$RDMACTL_VM_ADDR_A" \
		--tokens 10 --requests 3
	send s1 "${T[@]}" --rank 1 --connect "$to:$PORT_d0" --bind "$from" \
		--tokens 10 --requests 3
	reap s0 s1 d0
	status 0 s0 s1 d0
}

@test "kvxfer TP 2 -> 1 over two rails: each source rank on its own, every request verified, each rail half the bytes" {
	need_four_nics
	rails_tp2 "$RDMACTL_VM_ADDR_D" "$RDMACTL_VM_ADDR_C"
	# The decode rank listens on both rails, welcomes rank 0 on rxe_b and
	# rank 1 on rxe_d, and each rail carried exactly its source's route.
	check "def B: \"$RDMACTL_VM_DEV_B\"; def D: \"$RDMACTL_VM_DEV_D\";
		([.s0, .s1, .d0] | all(verified(3)))
		and (.s0 | ev(\"connected\")[0].device == \"$RDMACTL_VM_DEV_A\")
		and (.s1 | ev(\"connected\")[0].device == \"$RDMACTL_VM_DEV_C\")
		and (.d0 | ev(\"listening\") | map([.rail, .device]) == [[1, B], [2, D]])
		and (.d0 | ev(\"connected\") | map([.peer_rank, .device]) | sort == [[0, B], [1, D]])
		and (.d0 | ev(\"summary\")[0] | .bytes as \$t | \$t > 0 and (.rails | map([.device, .sources, .bytes, .share])
			== [[B, 1, (\$t / 2), 0.5], [D, 1, (\$t / 2), 0.5]]))" s0 s1 d0
}

# bats test_tags=plain-only
@test "kvxfer over two rails, both source ranks on rail 1: rail 2 shows no source and no bytes" {
	need_four_nics
	# The per-rail figures come from where the sources really came in: the
	# same run with rank 1 sent to rxe_b's address instead.
	rails_tp2 "$RDMACTL_VM_ADDR_B" "$RDMACTL_VM_ADDR_A"
	check "def B: \"$RDMACTL_VM_DEV_B\"; def D: \"$RDMACTL_VM_DEV_D\";
		(.d0 | verified(3))
		and (.d0 | ev(\"connected\") | map(.device) == [B, B])
		and (.d0 | ev(\"summary\")[0] | .rails | map([.device, .sources, .share]) == [[B, 2, 1], [D, 0, 0]])" d0
}
# bats test_tags=plain-only
@test "kvxfer serve's pool in GPU memory (fake driver) on two rails: registered on both, each source rank on its own, every request done" {
	need_four_nics
	local fake=$BUILD_DIR/tests/unit/libfakecuda.so
	[ -f "$fake" ] || fail "no fake CUDA driver at $fake"
	# the pool in "GPU memory", so no --verify (it reads the pool with the CPU)
	RDMACTL_CUDA_LIB=$fake rails_tp2 "$RDMACTL_VM_ADDR_D" "$RDMACTL_VM_ADDR_C" --mem cuda:0
	check "def B: \"$RDMACTL_VM_DEV_B\"; def D: \"$RDMACTL_VM_DEV_D\";
		([.s0, .s1, .d0] | all(ev(\"done\") | length == 3))
		and (.d0 | ev(\"listening\") | map([.rail, .device]) == [[1, B], [2, D]])
		and (.d0 | ev(\"summary\")[0] | .bytes as \$t | \$t > 0 and (.rails | map([.device, .sources, .bytes])
			== [[B, 1, (\$t / 2)], [D, 1, (\$t / 2)]]))" s0 s1 d0
}

@test "kvxfer send over two rails: one source rank feeds decode rank 0 over rail 1 and decode rank 1 over rail 2, verified, each rail half the bytes" {
	need_four_nics
	T=(--layers 4 --kv-heads 8 --head-dim 16 --page-tokens 4 --src-tp 1 --dst-tp 2)
	ADDR=$RDMACTL_VM_ADDR_B serve_bg d0 "${T[@]}" --rank 0 --pool-pages 32 --verify --requests 3
	ADDR=$RDMACTL_VM_ADDR_D serve_bg d1 "${T[@]}" --rank 1 --pool-pages 32 --verify --requests 3
	wait_listening d0 d1
	send s0 "${T[@]}" --connect "$RDMACTL_VM_ADDR_B:$PORT_d0" --connect "$RDMACTL_VM_ADDR_D:$PORT_d1" \
		--bind "$RDMACTL_VM_ADDR_A,$RDMACTL_VM_ADDR_C" --tokens 10 --requests 3 --qps 2
	reap s0 d0 d1
	status 0 s0 d0 d1
	# Each decode rank came over its rail's device, and each rail carried
	# exactly its decode rank's writes (TP 1 -> 2: half the heads each).
	check "def A: \"$RDMACTL_VM_DEV_A\"; def C: \"$RDMACTL_VM_DEV_C\";
		([.s0, .d0, .d1] | all(verified(3)))
		and (.s0 | ev(\"connected\") | map(.device) == [A, C])
		and (.s0 | ev(\"summary\")[0] | (.qp_bytes | add) as \$t | \$t > 0
			and (.rails | map([.rail, .device, .address, .decode_ranks, .bytes, .share])
			== [[1, A, \"$RDMACTL_VM_ADDR_A\", 1, (\$t / 2), 0.5], [2, C, \"$RDMACTL_VM_ADDR_C\", 1, (\$t / 2), 0.5]]))" s0 d0 d1
}

# bats test_tags=plain-only
@test "kvxfer --rails auto on both ends, each from its host's plan: the decode ranks serve on rxe_b and rxe_d, the source sends over rxe_a and rxe_c; verified, each rail half the bytes" {
	need_four_nics
	rail_trees
	T=(--layers 4 --kv-heads 8 --head-dim 16 --page-tokens 4 --src-tp 1 --dst-tp 2)
	# no address: serve listens on each rail of its plan at the port, send
	# takes its plan's rails (decode rank i over rail i mod 2), no --bind
	RDMACTL_SYSFS=$TREE_BD ADDR=0.0.0.0 serve_bg d0 "${T[@]}" --rank 0 --pool-pages 32 --verify \
		--requests 3 --rails auto
	RDMACTL_SYSFS=$TREE_BD ADDR=0.0.0.0 serve_bg d1 "${T[@]}" --rank 1 --pool-pages 32 --verify \
		--requests 3 --rails auto
	wait_listening d0 d1
	RDMACTL_SYSFS=$TREE_AC send s0 "${T[@]}" --connect "$RDMACTL_VM_ADDR_B:$PORT_d0" \
		--connect "$RDMACTL_VM_ADDR_D:$PORT_d1" --rails auto --tokens 10 --requests 3 --qps 2
	reap s0 d0 d1
	status 0 s0 d0 d1
	grep -q "kvxfer send: --rails auto: the rail plan of .*: $RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C (2 rails)" \
		"$KV_OUT/s0.err" || fail "send took no plan of rxe_a and rxe_c: $(cat "$KV_OUT/s0.err")"
	check "def A: \"$RDMACTL_VM_DEV_A\"; def B: \"$RDMACTL_VM_DEV_B\"; def C: \"$RDMACTL_VM_DEV_C\";
		def D: \"$RDMACTL_VM_DEV_D\";
		([.s0, .d0, .d1] | all(verified(3)))
		and ([.d0, .d1] | all(ev(\"listening\") | map([.rail, .device]) == [[1, B], [2, D]]))
		and (.d0 | ev(\"connected\") | map(.device) == [B]) and (.d1 | ev(\"connected\") | map(.device) == [D])
		and (.s0 | ev(\"connected\") | map(.device) == [A, C])
		and (.s0 | ev(\"summary\")[0] | (.qp_bytes | add) as \$t | \$t > 0
			and (.rails | map([.device, .decode_ranks, .bytes]) == [[A, 1, (\$t / 2)], [C, 1, (\$t / 2)]]))" s0 d0 d1
}

# The fake CUDA driver (tests/unit/fake_cuda.c): "GPU memory" that is host
# memory, so that send's GPU memory path (the fill through a host copy, the
# packed staging copied over, the registered addresses in the writes) runs
# here without a GPU; the decode ranks use host memory and --verify every
# byte. It proves the plumbing, not GPUDirect (tests/gpu/run.sh). With
# RDMACTL_FAKE_CUDA_PROTECT=1 device memory is closed to the CPU: peer
# memory cannot register it, the bounce buffer path runs, and any direct
# CPU access would crash.
FAKE_CUDA=$BUILD_DIR/tests/unit/libfakecuda.so

# bats test_tags=plain-only
@test "send --mem cuda with no GPU driver fails at once, naming the cause, before connecting" {
	jq -e '.features.gpu_memory' <<<"$("$RDMACTL" -j help)" >/dev/null ||
		skip "this rdmactl was built without CUDA (tests/cli/gpu-mem.bats covers that build)"
	serve d0 "${G[@]}" --pool-pages 8 --requests 1
	SECONDS=0
	run timeout 30 "$RDMACTL" -j kvxfer send "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --mem cuda:0
	assert_failure 1
	(( SECONDS < 15 )) || fail "took $SECONDS s"
	jq -e '.error.code == "ENODEV" and (.error.message | startswith("--mem cuda:0: GPU memory needs the NVIDIA driver"))' <<<"$output"
	run timeout 30 "$RDMACTL" kvxfer send "${G[@]}" --connect "$ADDR:$PORT_d0" --tokens 10 --mem cuda:0 --gpu-reg bounce
	assert_failure 1
	assert_output --partial "GPU memory needs the NVIDIA driver"
	# nobody came to the decode rank
	sleep 0.5
	check '.d0 | ev("connected") | length == 0' d0
}

@test "send --mem cuda (fake driver): source pages in GPU memory, filled through a host copy, gathered and copied, verified" {
	[ -f "$FAKE_CUDA" ] || fail "no fake CUDA driver at $FAKE_CUDA"
	jq -e '.features.gpu_memory' <<<"$("$RDMACTL" -j help)" >/dev/null ||
		skip "this rdmactl was built without CUDA"
	# TP 2 -> 1, 4-token source pages into 8-token destination pages: each
	# source fills half of every destination row, and --pack always packs.
	# Two senders at once, three requests each, two in flight, two QPs: peer
	# memory (auto) packed by gather lists that name GPU addresses, the
	# bounce buffer (device memory closed to the CPU) packed by a copy into
	# the staging ring (--max-sge 1), copied over to the GPU. Every request
	# needs both sources.
	local T=(--layers 3 --kv-heads 8 --head-dim 16 --src-page-tokens 4 --dst-page-tokens 8
		 --src-tp 2 --dst-tp 1)
	serve d0 "${T[@]}" --pool-pages 24 --scatter 5 --verify --requests 3
	RDMACTL_CUDA_LIB=$FAKE_CUDA send s0 "${T[@]}" --rank 0 --connect "$ADDR:$PORT_d0" --tokens 19 \
		--requests 3 --inflight 2 --qps 2 --pack always --mem cuda:0 --layer-compute-us 2000
	RDMACTL_CUDA_LIB=$FAKE_CUDA RDMACTL_FAKE_CUDA_PROTECT=1 send s1 "${T[@]}" --rank 1 \
		--connect "$ADDR:$PORT_d0" --tokens 19 --requests 3 --inflight 2 --qps 2 --pack always --max-sge 1 \
		--mem cuda
	reap s0 s1 d0
	status 0 s0 s1 d0
	check '(.d0 | verified(3)) and (.d0 | ev("done") | all(.sources == [0,1]))
		and (.s0 | verified(3)) and (.s1 | verified(3))
		and (.s0 | ev("ready")[0] | .mem == "cuda" and .gpu == 0 and .registration == "peermem"
			and (.registration_notes | contains("dma-buf: the export was refused")))
		and (.s1 | ev("ready")[0] | .mem == "cuda" and .registration == "bounce"
			and (.registration_notes | contains("peer memory: ibv_reg_mr")))
		and (.s0 | ev("summary")[0] | .routes_packed == 1 and .packed_bytes == 0
			and .gathered_bytes == 19*4*32*2*3*3 and .gather_sge == 32)
		and (.s1 | ev("summary")[0] | .routes_packed == 1 and .packed_bytes == 19*4*32*2*3*3
			and .gathered_bytes == 0 and .gather_sge == 1)
		and (.d0 | ev("listening")[0] | .mem == "host" and .gpu == null and .registration == "host"
			and .registration_notes == null)' s0 s1 d0
	# --gpu-reg peermem on memory closed to the CPU: that path alone, and its failure named
	serve d1 "${T[@]}" --pool-pages 24 --requests 1
	RDMACTL_CUDA_LIB=$FAKE_CUDA RDMACTL_FAKE_CUDA_PROTECT=1 run timeout 30 "$RDMACTL" kvxfer send "${T[@]}" \
		--connect "$ADDR:$PORT_d1" --tokens 19 --mem cuda --gpu-reg peermem
	assert_failure 1
	assert_output --partial "cannot register"
	assert_output --partial "(peermem)"
	assert_output --partial "peer memory: ibv_reg_mr"
}

@test "send on a terminal: a progress line on stderr of the requests ended, none on stdout or with -j" {
	local mode j
	serve d0 "${G[@]}" --pool-pages 64 --verify
	for mode in text json; do
		j=
		[[ $mode != json ]] || j=-j
		# script(1) gives rdmactl a terminal; stdout goes to a file.
		run timeout 120 script -qefc "'$RDMACTL' $j kvxfer send ${G[*]} --connect $ADDR:$PORT_d0 --tokens 16 --requests 3 >'$KV_OUT/send.$mode.out'" \
			"$KV_OUT/send.$mode.tty" </dev/null
		assert_success
	done
	grep -qE $'\r\033\\[Kkvxfer send: 3/3 requests ended, [0-9.]+[KMG]?i?B moved, [0-9.]+ GB/s' "$KV_OUT/send.text.tty" ||
		{ cat -A "$KV_OUT/send.text.tty"; fail "no progress line on the terminal"; }
	# Each event's line starts clean: the line is cleared before it.
	run grep -c 'kvxfer send: ' "$KV_OUT/send.text.out"
	assert_output 0
	run grep -c '^request [0-9]*: done' "$KV_OUT/send.text.out"
	assert_output 3
	run grep -c 'kvxfer send: ' "$KV_OUT/send.json.tty"
	assert_output 0
	# -j: one JSON document a line, nothing else.
	run jq -s 'map(select(.event == "done")) | length' "$KV_OUT/send.json.out"
	assert_output 3
}
