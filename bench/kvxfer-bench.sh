#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# kvxfer against perftest on the same device, and the exposed transfer time
# in layer-times. Run it inside the SoftRoCE guest:
#   tests/vm/run.sh -- bench/kvxfer-bench.sh
# or on a host with an RDMA device: bench/kvxfer-bench.sh ADDR DEVICE GID_INDEX
#
# Paged KV, 8 KV heads x 128 dims bf16, 32-token (16 KiB) pages on the
# prefill side and 16-token ones on the decode side, hnd and nhd pages, TP
# 4 -> 2 (four prefill processes, two decode processes) and 1 -> 1, and
# nhd 2 -> 4 where packing joins 512-byte rows into whole pages; two data
# QPs per route, --pack auto (the NIC gathers), auto with --max-sge 1 (a
# copy packs) and never (--land auto: nhd 4 -> 2 lands), and
# for nhd 4 -> 2 also --land never (the direct path, for comparison):
# 1. rate as perftest reckons it: all bytes over the wall time from the
#    first write posted (any prefill rank) to the last completion in the
#    pool (any decode rank, complete_us; last column: to their reports,
#    the --verify check included), all layers ready at once, 4 requests
#    two at a time (--inflight 2, as a prefill rank serving a stream of
#    requests keeps them: with one, the next request waits for its pages
#    from decode ranks busy checking the last one), against ib_write_bw
#    moving as many bytes with as many QPs (flows) and the same average
#    write size as kvxfer posted (the writes its prefill ranks counted),
#    and against ib_write_bw with 16 KiB writes and as many QPs;
# 2. exposed time (last layer's compute end -> the decode ranks'
#    completion: last byte landed and, for landed routes, unpacked into
#    the pool; the prefill ranks' exposed_us), layers 20 ms of compute
#    apart, streamed (the last layer in pieces over the QPs) and with
#    --no-stream, in layer-times, and the part of it that was the decode
#    ranks' unpack (unpack_us), over 2 requests.
# Each figure is the mean over RDMACTL_BENCH_ROUNDS rounds (default 3); a
# round runs every configuration once, kvxfer and perftest alternating.
# Sizes are small (MiB): rxe under TCG moves tens of MB/s; compare ratios,
# not absolute figures. Every request is checked byte for byte (serve
# --verify): a failed or unverified request, or a figure that does not
# parse, stops the run.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
bench_setup kvxfer-bench "$@"
rounds=${RDMACTL_BENCH_ROUNDS:-3}
# RDMACTL_BENCH_CONFIGS: a subset, e.g. "nhd 4 2,hnd 4 2" (default: all).
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "kvxfer-bench: RDMACTL_BENCH_ROUNDS must be a positive count" >&2; exit 1; }
port=7600
# reqs: the requests of a run; the rates' runs move rate_reqs, two in
# flight, the exposed times' runs 2.
qps=2 layers=8 reqs=2 rate_reqs=4 compute_us=20000

# serve NAME ARGS...: a decode rank in the background, waiting for it to listen.
serve() {
	local name=$1 i
	shift
	port=$((port + 1))
	"$rdmactl" -j kvxfer serve --listen "$addr:$port" "$@" >"$work/$name" 2>&1 &
	pids+=("$!")
	for ((i = 0; i < 300; i++)); do
		grep -q '"listening"' "$work/$name" && return 0
		sleep 0.1
	done
	echo "kvxfer-bench: $name did not start:" >&2
	cat "$work/$name" >&2
	exit 1
}

waitall() {
	local p bad=0
	for p in "${pids[@]}"; do
		wait "$p" || bad=1
	done
	pids=()
	if ((bad)); then
		echo "kvxfer-bench: a process failed; its outputs:" >&2
		grep -H -E '"(failed|error)"' "$work"/* >&2 || true
		exit 1
	fi
}

# verified NAME...: each decode rank finished every request it was asked,
# all verified, or the run stops: a figure is only kept for what arrived right.
verified() {
	local n
	for n in "$@"; do
		jq -s -e --argjson r "$reqs" '[.[] | select(.event == "done")] | length == $r and all(.verified)' \
			"$work/$n" >/dev/null || {
			echo "kvxfer-bench: $n did not finish $reqs verified requests:" >&2
			cat "$work/$n" >&2
			exit 1
		}
	done
}

# kv LAYOUT SRC_TP DST_TP PACK TOKENS COMPUTE_US [send options...]: one
# transfer; sets kv_rate (MiB/s: the decode ranks' bytes, all requests, over
# the wall time from the first write posted to the last completion in the
# pool, complete_us), kv_vrate (the same to their last report, the --verify
# after completion included),
# kv_size (bytes per write posted), kv_flows (data QPs) and
# kv_exposed (us: per request the latest source rank's, then the mean) and
# kv_unpack (us: the decode ranks' unpack in it, the same way).
kv() {
	local layout=$1 st=$2 dt=$3 pack=$4 tokens=$5 us=$6 d s dn=() sn=() g
	shift 6
	g=(--layers "$layers" --kv-heads 8 --head-dim 128 --src-tp "$st" --dst-tp "$dt"
	   --src-page-tokens 32 --dst-page-tokens 16 --page-layout "$layout")
	for ((d = 0; d < dt; d++)); do
		serve "d$d" "${g[@]}" --rank $d --pool-pages 64 --requests $reqs --verify
		dn+=("$work/d$d")
		local "p$d=$port"
	done
	for ((s = 0; s < st; s++)); do
		# The decode ranks source rank s feeds: its head range on their side.
		local lo=$((s * dt / st)) hi=$(((s + 1) * dt / st)) c=()
		((hi > lo)) || hi=$((lo + 1))
		for ((d = lo; d < hi; d++)); do
			local pv="p$d"
			c+=(--connect "$addr:${!pv}")
		done
		"$rdmactl" -j kvxfer send "${g[@]}" --rank $s "${c[@]}" --tokens "$tokens" \
			--requests $reqs --qps $qps --pack "$pack" --layer-compute-us "$us" "$@" >"$work/s$s" 2>&1 &
		pids+=("$!")
		sn+=("$work/s$s")
	done
	waitall
	for ((d = 0; d < dt; d++)); do verified "d$d"; done
	# Rates as perftest's average: every decode rank's bytes of every
	# request, over the run's wall time from the first write any prefill
	# rank posted to the last decode rank's END (a jq expression on its
	# report, Unix time: started_at is on every rank, one clock in the guest).
	wall_rate() {
		cat "${sn[@]}" "${dn[@]}" | jq -s --argjson n "$((dt * reqs))" '
			[.[] | select(.event == "done")] as $all
			| [$all[] | select(has("complete_us"))] as $d | [$all[] | select(has("exposed_us"))] as $s
			| if ($d | length) != $n or ($s | length) == 0 then error("not every request completed") else . end
			| ($d | map(.bytes) | add) / 1048576
			/ (($d | map('"$1"') | max) - ($s | map(.started_at) | min))'
	}
	kv_rate=$(wall_rate '.started_at + .complete_us / 1e6')
	kv_vrate=$(wall_rate '.started_at + .seconds')
	kv_size=$(cat "${sn[@]}" | jq -s '[.[] | select(.event == "summary")]
		| ((map(.qp_bytes | add) | add) / (map(.qp_writes | add) | add)) | floor')
	kv_flows=$(cat "${sn[@]}" | jq -s '[.[] | select(.event == "summary") | .qp_writes | length] | add')
	kv_exposed=$(cat "${sn[@]}" | jq -s '[.[] | select(.event == "done")] | group_by(.request)
		| map(map(.exposed_us) | max) | add / length')
	kv_unpack=$(cat "${sn[@]}" | jq -s '[.[] | select(.event == "done")] | group_by(.request)
		| map(max_by(.exposed_us).unpack_us) | add / length')
}

# ibw FLOWS SIZE BYTES: ib_write_bw with FLOWS QPs moving about BYTES in
# SIZE-byte writes; sets ibw_rate (MiB/s, perftest's average).
ibw() {
	local _
	# perftest measures its clock first and, under emulation, sometimes
	# gives up on it ("Correlation coefficient r^2 ... < 0.9") and reports
	# 0 MB/s: such a run is repeated, at most three times in all.
	for _ in 1 2 3; do
		ibw_once "$@" && return 0
		grep -q 'Correlation coefficient' "$work/ibw.cli" || break
	done
	echo "kvxfer-bench: no ib_write_bw figure for $1 flows of $2-byte writes:" >&2
	cat "$work/ibw.cli" >&2
	exit 1
}

ibw_once() {
	local flows=$1 size=$2 iters srv i
	iters=$(( $3 / size / flows ))
	((iters >= 100)) || iters=100
	ib_write_bw -d "$dev" -x "$gid" -F -q "$flows" -s "$size" -n "$iters" >"$work/ibw.srv" 2>&1 &
	srv=$!
	# The client once the server listens (perftest's port, bounded), run once.
	for ((i = 0; i < 100; i++)); do
		[ -n "$(ss -Hltn 'sport = :18515' 2>/dev/null)" ] && break
		kill -0 $srv 2>/dev/null || break
		sleep 0.1
	done
	ib_write_bw -d "$dev" -x "$gid" -F -q "$flows" -s "$size" -n "$iters" 127.0.0.1 >"$work/ibw.cli" 2>&1 || {
		wait $srv || true
		return 1
	}
	wait $srv || true
	# perftest counts the iterations of all its QPs together.
	ibw_rate=$(awk -v s="$size" -v n="$((iters * flows))" '$1 == s && $2 == n && NF >= 5 { print $4 }' "$work/ibw.cli" | tail -1)
	[[ $ibw_rate =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v v="$ibw_rate" 'BEGIN { exit !(v > 0) }'
}

declare -A each_same sum_rate sum_same sum_16k sum_16kv sum_size flows sum_stream sum_bulk sum_sunpack sum_bunpack
configs=("hnd 4 2" "nhd 4 2" "nhd 2 4" "hnd 1 1" "nhd 1 1")
if [ -n "${RDMACTL_BENCH_CONFIGS:-}" ]; then
	IFS=, read -r -a configs <<<"$RDMACTL_BENCH_CONFIGS"
fi
# variants LAYOUT SRC_TP DST_TP: the --pack choices ("copy": --pack auto
# --max-sge 1, packing by a copy into staging instead of the NIC's gather
# lists), and for a geometry that lands, the direct path too ("direct":
# --pack auto --land never).
variants() {
	if [ "$1" = nhd ] && (("$2" > "$3")); then
		echo auto copy never direct
	else
		echo auto copy never
	fi
}
tokens=512 page=16384
for ((round = 1; round <= rounds; round++)); do
	echo "kvxfer-bench: round $round of $rounds" >&2
	for c in "${configs[@]}"; do
		read -r layout st dt <<<"$c"
		reqs=$rate_reqs
		for pack in $(variants "$layout" "$st" "$dt"); do
			k="$layout $st->$dt $pack"
			if [ "$pack" = direct ]; then
				kv "$layout" "$st" "$dt" auto $tokens 0 --inflight 2 --land never
			elif [ "$pack" = copy ]; then
				kv "$layout" "$st" "$dt" auto $tokens 0 --inflight 2 --max-sge 1
			else
				kv "$layout" "$st" "$dt" "$pack" $tokens 0 --inflight 2
			fi
			bytes=$("$rdmactl" -j kvxfer plan --layers $layers --kv-heads 8 --head-dim 128 --tokens $tokens \
				| jq --argjson r "$reqs" '.bytes_per_request * $r')
			ibw "$kv_flows" "$kv_size" "$bytes"
			same=$ibw_rate
			ibw "$kv_flows" $page "$bytes"
			sum_rate[$k]=$(jq -n "${sum_rate[$k]:-0} + $kv_rate")
			sum_same[$k]=$(jq -n "${sum_same[$k]:-0} + $kv_rate / $same")
			each_same[$k]+=" $(jq -n "$kv_rate / $same")"
			sum_16k[$k]=$(jq -n "${sum_16k[$k]:-0} + $kv_rate / $ibw_rate")
			sum_16kv[$k]=$(jq -n "${sum_16kv[$k]:-0} + $kv_vrate / $ibw_rate")
			sum_size[$k]=$(( ${sum_size[$k]:-0} + kv_size ))
			flows[$k]=$kv_flows
		done
		# Exposed time: 128 tokens, a layer's transfer well under its 20 ms.
		reqs=2
		k="$layout $st->$dt"
		kv "$layout" "$st" "$dt" auto 128 $compute_us
		sum_stream[$k]=$(jq -n "${sum_stream[$k]:-0} + $kv_exposed / $compute_us")
		sum_sunpack[$k]=$(jq -n "${sum_sunpack[$k]:-0} + $kv_unpack / $compute_us")
		kv "$layout" "$st" "$dt" auto 128 $compute_us --no-stream
		sum_bulk[$k]=$(jq -n "${sum_bulk[$k]:-0} + $kv_exposed / $compute_us")
		sum_bunpack[$k]=$(jq -n "${sum_bunpack[$k]:-0} + $kv_unpack / $compute_us")
	done
done

echo "== rate: $layers layers, $tokens tokens a request, 16 KiB source pages, all layers ready at once,"
echo "   $rate_reqs requests two at a time, $qps data QPs a route; ratios against ib_write_bw with as many QPs; means of $rounds rounds;"
echo "   kvxfer's rate as perftest's average: all bytes over the time from the first write posted to"
echo "   the last decode rank's completion (unpack included), and (last column) to its last report,"
echo "   the --verify check after completion included"
# spread WORDS: "median least-most" of the numbers (bench/lib.bash's median)
spread() {
	local m lo hi
	# shellcheck disable=SC2086 # the words are the numbers
	read -r m lo hi < <(median_spread $1)
	printf "%.2f %.2f-%.2f" "$m" "$lo" "$hi"
}
printf '%-26s %7s %10s %7s %12s %10s %12s  %s\n' "" "flows" "bytes/wr" "MiB/s" "x same size" "x 16 KiB" "x 16K+verify" \
	"x same size, each round: median least-most"
for c in "${configs[@]}"; do
	read -r layout st dt <<<"$c"
	for pack in $(variants "$layout" "$st" "$dt"); do
		k="$layout $st->$dt $pack"
		label="--pack $pack"
		[ "$pack" = direct ] && label="--land never"
		[ "$pack" = copy ] && label="--max-sge 1"
		printf '%-26s %7s %10s %7.1f %12.2f %10.2f %12.2f  %s\n' "$layout $st->$dt $label" "${flows[$k]}" \
			$(( ${sum_size[$k]} / rounds )) "$(jq -n "${sum_rate[$k]} / $rounds")" \
			"$(jq -n "${sum_same[$k]} / $rounds")" "$(jq -n "${sum_16k[$k]} / $rounds")" \
			"$(jq -n "${sum_16kv[$k]} / $rounds")" "$(spread "${each_same[$k]}")"
	done
done
echo
echo "== exposed time (last layer's compute end -> the decode ranks' completion, unpack included),"
echo "   in layer-times of $((compute_us / 1000)) ms, and (in brackets) the decode ranks' unpack in it;"
echo "   128 tokens, $layers layers, --pack auto; means of $rounds rounds of $reqs requests"
printf '%-22s %18s %18s\n' "" "streamed" "--no-stream"
for c in "${configs[@]}"; do
	read -r layout st dt <<<"$c"
	k="$layout $st->$dt"
	printf '%-22s %10.2f (%5.2f) %10.2f (%5.2f)\n' "$k" "$(jq -n "${sum_stream[$k]} / $rounds")" \
		"$(jq -n "${sum_sunpack[$k]} / $rounds")" "$(jq -n "${sum_bulk[$k]} / $rounds")" \
		"$(jq -n "${sum_bunpack[$k]} / $rounds")"
done
