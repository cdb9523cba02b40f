#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# alltoall's busbw for flat, hierarchical and ring at 4 and 8 ranks, uniform
# and zipf routing, against ib_write_bw on the same device: one process with
# as many flows (queue pairs) as flat uses, and the fair baseline, as many
# ib_write_bw pairs as alltoall has ranks, each with a rank's n - 1 flows,
# started together. Run it inside the SoftRoCE
# guest:
#   tests/vm/run.sh -- bench/alltoall-bench.sh
# or on a host with an RDMA device: bench/alltoall-bench.sh ADDR DEVICE GID_INDEX
#
# All ranks share one device here, so the figure to hold against perftest
# is the device's aggregate: every rank's wire bytes, n x busbw (nccl-tests'
# busbw is per rank). Hierarchical splits the ranks into two nodes and moves
# the in-node half through shared memory. Sizes are small: rxe under TCG
# moves tens of MB/s; compare ratios, not absolute figures.
# Each world also runs flat, uniform once more with --background pairs
# (rank r and r + n/2 write 64 KiB bulk WRITEs, 4 deep, into each other
# over QPs of their own on the same device): a loaded row, each phase's p50
# and p99 idle and loaded and the leakage (loaded over idle).
# Environment: HIDDEN (default 2048), TOKENS (256), ITERS (5), RANKS ("4 8").
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
bench_setup alltoall-bench "$@"
hidden=${HIDDEN:-2048}
tokens=${TOKENS:-256}
iters=${ITERS:-5}
port=24000

# a2a N ALGO SKEW [ARGS...]: one run of N ranks; rank 0's document on stdout.
a2a() {
	local n=$1 algo=$2 skew=$3 r bad=0 extra=()
	shift 3
	[[ $algo != hierarchical ]] || extra=(--ranks-per-node $((n / 2)))
	extra+=("$@")
	port=$((port + 32))
	for ((r = 0; r < n; r++)); do echo "$r $addr:$((port + r))"; done >"$work/peers"
	# --background's group: ports of its own
	for ((r = 0; r < n; r++)); do echo "$r $addr:$((port + 16 + r))"; done >"$work/peers.bg"
	pids=()
	for ((r = 0; r < n; r++)); do
		"$rdmactl" -j -t 60000 alltoall -r $r -w "$n" -R "file:$work/peers" --algo "$algo" \
			--skew "$skew" --hidden "$hidden" --tokens "$tokens" --iters "$iters" --warmup 1 \
			"${extra[@]}" >"$work/r$r" 2>"$work/e$r" &
		pids+=("$!")
	done
	for p in "${pids[@]}"; do wait "$p" || bad=1; done
	pids=()
	if ((bad)); then
		echo "alltoall-bench: $n ranks $algo $skew failed:" >&2
		cat "$work"/e* >&2
		exit 1
	fi
	cat "$work/r0"
}

# fair_ibw N QPS MSG: the fair baseline, N ib_write_bw pairs started
# together, as alltoall runs N ranks of N - 1 flows each: each client with
# QPS queue pairs of 200 MSG-byte writes each; all their bytes over the
# wall time from the clients' start to the last one's end, in GB/s. Not
# the sum of their own figures: perftest calibrates its clock at the end of
# a run with a regression that fails while the other pairs still load the
# two CPUs, and then prints 0.00 (seen in 1 to 5 of 8 pairs; with -D it
# counts 0 iterations). The wall time includes each pair's set-up (tenths
# of a second of some seconds), so the baseline errs low.
fair_ibw() {
	local n=$1 qps=$2 msg=$3 i bytes got t0 t1 srvs=() clis=()
	for ((i = 0; i < n; i++)); do
		ib_write_bw -d "$dev" -x "$gid" -F -q "$qps" -s "$msg" -n 200 -p $((19000 + i)) \
			>"$work/fair.srv.$i" 2>&1 &
		srvs+=("$!")
	done
	pids=("${srvs[@]}")
	sleep 1
	t0=$(date +%s.%N)
	for ((i = 0; i < n; i++)); do
		ib_write_bw -d "$dev" -x "$gid" -F -q "$qps" -s "$msg" -n 200 -p $((19000 + i)) \
			127.0.0.1 >"$work/fair.cli.$i" 2>&1 &
		clis+=("$!")
	done
	pids+=("${clis[@]}")
	for p in "${clis[@]}"; do wait "$p" || true; done
	t1=$(date +%s.%N)
	for p in "${srvs[@]}"; do wait "$p" || true; done
	pids=()
	# the result line: bytes, iterations (all QPs'), peak, average, rate
	got=$(awk -v s="$msg" '$1 == s && NF >= 5 && $2 > 0 { k++ } END { print k + 0 }' "$work"/fair.cli.*)
	bytes=$(awk -v s="$msg" '$1 == s && NF >= 5 { t += $1 * $2 } END { printf "%.0f", t }' \
		"$work"/fair.cli.*)
	if ((got != n)); then
		echo "alltoall-bench: $got of $n ib_write_bw pairs completed their writes:" >&2
		tail -n 3 "$work"/fair.cli.* >&2
		exit 1
	fi
	awk -v b="$bytes" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.6f", b / (t1 - t0) / 1e9 }'
}

printf '%-6s %-13s %-9s %9s %9s %9s %10s %9s %9s %9s\n' ranks algo skew "busbw" "n*busbw" \
	"p50(us)" "p99(us)" imbalance "vs_ibw" "vs_fair"
printf '%-6s %-13s %-9s %9s %9s %9s %10s %9s %9s %9s\n' "" "" "" "GB/s" "GB/s" "" "" "" "" ""
for n in ${RANKS:-4 8}; do
	flows=$((n * (n - 1)))
	# perftest: as many QPs as flat has flows, messages of flat's mean block
	doc=$(a2a "$n" flat uniform)
	msg=$(jq '.bytes_per_peer.mean' <<<"$doc")
	ib_write_bw -d "$dev" -x "$gid" -F -q "$flows" -s "$msg" -n 200 --report_gbits \
		>"$work/ibw.srv" 2>&1 &
	srv=$!
	sleep 1
	for ((i = 0; i < 20; i++)); do
		ib_write_bw -d "$dev" -x "$gid" -F -q "$flows" -s "$msg" -n 200 --report_gbits \
			127.0.0.1 >"$work/ibw.cli" 2>&1 && break
		sleep 0.5
	done
	wait $srv || true
	gbits=$(awk -v s="$msg" '$1 == s && NF >= 5 { print $4 }' "$work/ibw.cli" | tail -1)
	[[ -n $gbits ]] || { echo "alltoall-bench: no ib_write_bw figure:" >&2; cat "$work/ibw.cli" >&2; exit 1; }
	ibw=$(jq -n "$gbits / 8")
	fair=$(fair_ibw "$n" $((n - 1)) "$msg")
	for algo in flat hierarchical ring; do
		for skew in uniform zipf:1.2; do
			[[ $algo == flat && $skew == uniform ]] || doc=$(a2a "$n" "$algo" "$skew")
			jq -r --arg skew "$skew" --argjson ibw "$ibw" --argjson fair "$fair" \
				'[.ranks, .algo, $skew, .busbw_gbyte_per_s, .busbw_gbyte_per_s * .ranks, .lat_us.p50,
				  .lat_us.p99, .imbalance, .busbw_gbyte_per_s * .ranks / $ibw,
				  .busbw_gbyte_per_s * .ranks / $fair]
				 | "\(.[0]) \(.[1]) \(.[2]) \(.[3]) \(.[4]) \(.[5]) \(.[6]) \(.[7]) \(.[8]) \(.[9])"' \
				<<<"$doc" | awk '{ printf "%-6s %-13s %-9s %9.4f %9.4f %9.0f %10.0f %9.2f %9.2f %9.2f\n",
					$1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
		done
	done
	doc=$(a2a "$n" flat uniform --background pairs --background-size 64K --background-depth 4)
	jq -r '.ranks as $n | .background | [.dispatch, .combine] | to_entries[] | .key as $k | .value
		| [$n, (if $k == 0 then "dispatch" else "combine" end), .idle.p50_us, .loaded.p50_us,
		   .leakage_p50, .idle.p99_us, .loaded.p99_us, .leakage_p99] | map(tostring) | join(" ")' <<<"$doc" |
		awk '{ printf "%-6s %-13s %-9s p50 %.0f -> %.0f us (x%.2f), p99 %.0f -> %.0f us (x%.2f)\n",
			$1, "flat loaded", $2, $3, $4, $5, $6, $7, $8 }'
	printf '%-6s %-13s %-9s %9s %9.4f   (one process, %d QPs, %d-byte writes)\n' "$n" ib_write_bw - - \
		"$ibw" "$flows" "$msg"
	printf '%-6s %-13s %-9s %9s %9.4f   (%d pairs of %d QPs, %d-byte writes, started together)\n' \
		"$n" "fair ibw" - - "$fair" "$n" $((n - 1)) "$msg"
done
echo "(hidden $hidden bf16, $tokens tokens a rank, top-2 of 8 experts a rank, $iters timed iterations;"
echo " vs_ibw = n x busbw over one ib_write_bw process's aggregate on the same device;"
echo " vs_fair = n x busbw over n ib_write_bw pairs of n - 1 QPs each, started together: as"
echo " many processes and flows as alltoall, each with its share of the bytes;"
echo " flat loaded: each phase idle -> under --background pairs (64 KiB WRITEs, 4 deep,"
echo " rank r and r + n/2 into each other), and the leakage, loaded over idle)"
