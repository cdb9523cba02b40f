#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# How groups grow: alltoall flat at 32, 64 and 128 ranks, hierarchical
# (nodes of 8) and multicast tree (fanout 4) at 32, 64, 128 and 256, tiny
# payloads, each once through a peers file and once through a real etcd.
# Per case: the time to meet (rendezvous), to connect, the first barrier
# (which waits for the slowest rank to finish its set-up) and the
# run, and what a rank holds (QPs, message-ring bytes, peak RSS), from the
# reports' group object; for alltoall the most of any rank (--all-ranks),
# for multicast the root's. Run it inside the SoftRoCE guest with room for
# the ranks:
#   tests/vm/run.sh --mem 8G -- bench/scale-bench.sh
# Environment: FLAT ("32 64 128"), HIER ("32 64 128 256"), MCAST ("32 64
# 128 256"), RDV ("file etcd"). All ranks share one emulated device and two
# CPUs here: the figures say how set-up grows with N, not how fast a
# cluster is.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
bench_setup scale-bench "$@"
port=26000
etcd_on=0
failed=0

# shellcheck source=tests/lib/etcd.bash
. "$here/../tests/lib/etcd.bash"
cleanup() {
	((etcd_on)) && stop_etcd
	bench_cleanup
}
trap cleanup EXIT

# ranks N RDV CMD ARGS...: N ranks of rdmactl CMD; each one's document in
# $work/rank.I.out; the whole wall time in $wall.
ranks() {
	local n=$1 rdv=$2 r bad=0 url t0
	shift 2
	port=$((port + 300))
	if [[ $rdv == file ]]; then
		for ((r = 0; r < n; r++)); do echo "$r $addr:$((port + r))"; done >"$work/peers"
		url=file:$work/peers
	else
		url=etcd://$ETCD_EP/scale$port
	fi
	rm -f "$work"/rank.*
	pids=()
	t0=$(date +%s.%N)
	for ((r = 0; r < n; r++)); do
		local listen=()
		[[ $rdv == file ]] || listen=(--listen "$addr")
		"$rdmactl" -j -t 240000 "$@" -r "$r" -w "$n" -R "$url" "${listen[@]}" \
			>"$work/rank.$r.out" 2>"$work/rank.$r.err" &
		pids+=("$!")
	done
	for p in "${pids[@]}"; do wait "$p" || bad=1; done
	pids=()
	wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	if ((bad)); then
		echo "scale-bench: $n ranks of $* ($rdv) failed:" >&2
		{ grep -h . "$work"/rank.*.err; jq -r '.error.message? // empty' "$work"/rank.*.out 2>/dev/null; } |
			sort | uniq -c | sort -rn | head -5 >&2
		failed=$((failed + 1))
		return 1
	fi
}

# row NAME N RDV JQ-RUN-SECONDS FILES...: one line of the table, the most of
# the given documents.
row() {
	local name=$1 n=$2 rdv=$3 run=$4
	shift 4
	jq -rs --arg name "$name" --argjson n "$n" --arg rdv "$rdv" --argjson wall "$wall" \
		"[\$name, \$n, \$rdv,
		  (map(.group.rendezvous_s) | max * 1e3), (map(.group.connect_s) | max * 1e3),
		  (map(.group.first_barrier_s // 0) | max * 1e3), (map($run) | max * 1e3),
		  (map(.group.qps) | max), (map(.group.tree_depth) | max),
		  (map(.group.ring_bytes) | max / 1024), (map(.group.max_rss_bytes) | max / 1048576), \$wall]
		 | @tsv" "$@" |
		awk -F'\t' '{ printf "%-13s %5d %-5s %9.1f %9.1f %9.1f %9.1f %6d %5d %9.0f %8.1f %7.1f\n",
			$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 }'
}

printf '%-13s %5s %-5s %9s %9s %9s %9s %6s %5s %9s %8s %7s\n' case ranks rdv "join" connect \
	barrier run QPs depth "rings" "RSS" wall
printf '%-13s %5s %-5s %9s %9s %9s %9s %6s %5s %9s %8s %7s\n' "" "" "" ms ms ms ms "" "" KiB MiB s
a2a=(alltoall --hidden 64 --tokens 8 --topk 2 --iters 2 --warmup 1 --all-ranks)
for rdv in ${RDV:-file etcd}; do
	if [[ $rdv == etcd ]]; then
		command -v etcd >/dev/null || { echo "scale-bench: no etcd (Debian's etcd-server): the etcd rows are left out" >&2; continue; }
		BATS_TEST_TMPDIR=$work start_etcd
		etcd_on=1
	fi
	for n in ${FLAT:-32 64 128}; do
		ranks "$n" "$rdv" "${a2a[@]}" --algo flat || continue
		row flat "$n" "$rdv" '.time_us / 1e6' "$work"/rank.*.out
	done
	for n in ${HIER:-32 64 128 256}; do
		ranks "$n" "$rdv" "${a2a[@]}" --algo hierarchical --ranks-per-node 8 || continue
		row hierarchical "$n" "$rdv" '.time_us / 1e6' "$work"/rank.*.out
	done
	head -c $((64 << 10)) /dev/urandom >"$work/blob"
	for n in ${MCAST:-32 64 128 256}; do
		ranks "$n" "$rdv" multicast --algo tree --fanout 4 --file "$work/blob" --chunk 16K || continue
		row "mcast tree" "$n" "$rdv" '.seconds' "$work/rank.0.out"
	done
	if [[ $rdv == etcd ]]; then
		stop_etcd
		etcd_on=0
	fi
done
if ((failed)); then
	echo "scale-bench: $failed case(s) failed (above)" >&2
	exit 1
fi
