#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# kvxfer against perftest on the same device, and the exposed transfer time
# with and without layer streaming. Run it inside the SoftRoCE guest:
#   tests/vm/run.sh -- bench/kvxfer-bench.sh
# or on a host with an RDMA device: bench/kvxfer-bench.sh ADDR DEVICE GID_INDEX
#
# 1. Paged KV, 8 KV heads x 128 dims bf16, 16 KiB pages on both sides,
#    TP 4 -> 2 (four prefill processes, two decode processes), all layers
#    ready at once: aggregate rate, against ib_write_bw moving the same bytes
#    in 16 KiB messages between two processes on the same device.
# 2. 1:1, 8 layers of 20 ms compute: exposed time (last layer ready -> last
#    byte landed) streamed layer by layer, and with --no-stream.
# Sizes are small (tens of MiB): rxe under TCG moves tens of MB/s; compare
# ratios, not absolute figures.
# Every request is checked byte for byte (serve --verify): a failed or
# unverified request, or a figure that does not parse, stops the run, and
# each mean says how many requests it covers.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
bench_setup kvxfer-bench "$@"
port=7600

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

declare -A rate bytes segs exposed nreq

# verified NAME... -> each decode rank finished every request it was asked,
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

# --- 1. TP 4 -> 2 against ib_write_bw
layers=8 tokens=512 reqs=2
for layout in hnd nhd; do
	g=(--layers $layers --kv-heads 8 --head-dim 128 --src-tp 4 --dst-tp 2
	   --src-page-tokens 32 --dst-page-tokens 16 --page-layout $layout)
	serve d0.$layout "${g[@]}" --rank 0 --pool-pages 64 --requests $reqs --verify
	p0=$port
	serve d1.$layout "${g[@]}" --rank 1 --pool-pages 64 --requests $reqs --verify
	p1=$port
	for r in 0 1 2 3; do
		p=$((r < 2 ? p0 : p1))
		"$rdmactl" -j kvxfer send "${g[@]}" --rank $r --connect "$addr:$p" --tokens $tokens \
			--requests $reqs --qps 2 >"$work/s$r.$layout" 2>&1 &
		pids+=("$!")
	done
	waitall
	verified d0.$layout d1.$layout
	# A request's rate: the two decode ranks' rates summed (they run at
	# once); the mean over the requests that completed on both, divided by
	# how many did.
	rate[$layout]=$(cat "$work/d0.$layout" "$work/d1.$layout" |
		jq -s '[.[] | select(.event == "done")] | group_by(.request) | map(select(length == 2))
			| if length == 0 then error("no request completed on both decode ranks") else . end
			| (map(map(.bytes / .seconds / 1048576) | add) | add) / length')
	bytes[$layout]=$(cat "$work/d0.$layout" "$work/d1.$layout" |
		jq -s '[.[] | select(.event == "done")] | group_by(.request) | map(select(length == 2))
			| (map(map(.bytes) | add) | add) / length')
	nreq[$layout]=$(cat "$work/d0.$layout" "$work/d1.$layout" |
		jq -s '[.[] | select(.event == "done")] | group_by(.request) | map(select(length == 2)) | length')
	segs[$layout]=$("$rdmactl" -j kvxfer plan "${g[@]}" --tokens $tokens | jq '.segments.total')
done
page=16384
iters=$(( ${bytes[hnd]} / page ))
ib_write_bw -d "$dev" -x "$gid" -F -s $page -n "$iters" >"$work/ibw.srv" 2>&1 &
srv=$!
# The client once the server listens (perftest's port, bounded), run once.
for ((i = 0; i < 100; i++)); do
	[ -n "$(ss -Hltn 'sport = :18515' 2>/dev/null)" ] && break
	kill -0 $srv 2>/dev/null || break
	sleep 0.1
done
ib_write_bw -d "$dev" -x "$gid" -F -s $page -n "$iters" 127.0.0.1 >"$work/ibw.cli" 2>&1 || {
	echo "kvxfer-bench: ib_write_bw failed:" >&2
	cat "$work/ibw.cli" "$work/ibw.srv" >&2
	exit 1
}
wait $srv || true
ibw=$(awk -v s=$page -v n="$iters" '$1 == s && $2 == n && NF >= 5 { print $4 }' "$work/ibw.cli" | tail -1)
[[ $ibw =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v v="$ibw" 'BEGIN { exit !(v > 0) }' ||
	{ echo "kvxfer-bench: no ib_write_bw figure for $iters x $page bytes:" >&2; cat "$work/ibw.cli" >&2; exit 1; }

echo "== TP 4 -> 2, $layers layers, $tokens tokens a request, 16 KiB pages, all layers ready at once"
printf '%-34s %12s %14s %10s %9s\n' "" "MiB/s" "writes/request" "ratio" "requests"
for layout in hnd nhd; do
	printf '%-34s %12.1f %14s %10.2f %9s\n' "kvxfer, $layout pages" "${rate[$layout]}" "${segs[$layout]}" \
		"$(jq -n "${rate[$layout]} / $ibw")" "${nreq[$layout]}"
done
printf '%-34s %12.1f %14s %10.2f %9s\n' "ib_write_bw, 16 KiB x $iters" "$ibw" "$iters" 1 1
echo "(bytes a request: ${bytes[hnd]} over 4 prefill processes x 2 QPs, against one perftest QP;"
echo " perftest's MB/sec are MiB/s; writes average $(( ${bytes[hnd]} / ${segs[hnd]} )) bytes with hnd pages,"
echo " $(( ${bytes[nhd]} / ${segs[nhd]} )) with nhd, where TP 4 -> 2 splits every token row)"

# --- 2. exposed time, streamed or not
g=(--layers 8 --kv-heads 8 --head-dim 128 --page-tokens 16)
for mode in stream bulk; do
	serve d.$mode "${g[@]}" --pool-pages 64 --requests 3 --verify
	extra=()
	[[ $mode == bulk ]] && extra=(--no-stream)
	"$rdmactl" -j kvxfer send "${g[@]}" --connect "$addr:$port" --tokens 128 --requests 3 \
		--layer-compute-us 20000 "${extra[@]}" >"$work/s.$mode" 2>&1 &
	pids+=("$!")
	waitall
	reqs=3 verified d.$mode
	# The mean over the requests the prefill rank saw done (summary.done).
	exposed[$mode]=$(jq -s -e '[.[] | select(.event == "summary")][0] | select(.done == 3) | .exposed_avg_us | numbers' \
		"$work/s.$mode") || { echo "kvxfer-bench: $mode: no exposed time over 3 done requests:" >&2; cat "$work/s.$mode" >&2; exit 1; }
done
layer_ms=$("$rdmactl" -j kvxfer plan "${g[@]}" --tokens 128 | jq '.bytes_per_request / 8 / 1048576')
echo
echo "== 1:1, 8 layers of 20 ms compute, 128 tokens ($layer_ms MiB a layer): exposed transfer time"
printf '%-34s %12.0f us (mean of 3 verified requests)\n' "streamed layer by layer" "${exposed[stream]}"
printf '%-34s %12.0f us (mean of 3 verified requests)\n' "after the last layer (--no-stream)" "${exposed[bulk]}"
printf '%-34s %12.1f x\n' "streaming hides" "$(jq -n "${exposed[bulk]} / ${exposed[stream]}")"
