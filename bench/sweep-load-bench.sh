#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# sweep --load and --incast, the figures: four ranks on the two rxe
# devices of the veth pair (two addresses on each end), each direction's
# WRITE p99 idle and loaded and its leakage, with no qdisc and with a tbf
# bottleneck (RATE) on the link into rank 3, alone on its device (0, 1 and
# 2 on the other: two of them load it while the third is timed); then an
# incast into rank 0
# with and without a tbf on the link into it: goodput, Jain's index and
# the p99 per step, and the knee. Run it inside the SoftRoCE guest:
#   tests/vm/run.sh --two-nics -- bench/sweep-load-bench.sh
# The guest's rxe shares two emulated CPUs among the ranks: compare the
# figures only within one run. Environment: MODE (same-port), DURATION
# (0.5), MSG (16K), DEPTH (4), RATE (10mbit); SHOW_TEXT=1 also prints a
# text report.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
bench_setup sweep-load-bench
[[ -n ${RDMACTL_VM_ADDR_A:-} ]] || { echo "sweep-load-bench: needs the guest's two rxe devices (tests/vm/run.sh --two-nics)" >&2; exit 2; }
mode=${MODE:-same-port}
duration=${DURATION:-0.5}
msg=${MSG:-16K}
depth=${DEPTH:-4}
rate=${RATE:-10mbit}
xa=198.18.1.3 xb=198.18.1.4
ip addr add "$xa/24" dev va 2>/dev/null || true
ip addr add "$xb/24" dev vb 2>/dev/null || true
sleep 1
port=29000
cleanup() {
	tc qdisc del dev va root 2>/dev/null || true
	tc qdisc del dev vb root 2>/dev/null || true
	bench_cleanup
}
trap cleanup EXIT

# group ARGS -- ADDR...: one rank an address, rank 0's document in $work/r0.
group() {
	local args=() r n pids=()
	while [[ $1 != -- ]]; do args+=("$1"); shift; done
	shift
	n=$#
	port=$((port + 16))
	local addrs=("$@")
	for ((r = 0; r < n; r++)); do echo "$r ${addrs[r]}:$((port + r))"; done >"$work/peers"
	for ((r = 1; r < n; r++)); do
		"$rdmactl" -j -t 60000 sweep -r $r -w "$n" -R "file:$work/peers" --duration "$duration" \
			--msg-size "$msg" --depth "$depth" --slow-ratio 0 "${args[@]}" >/dev/null 2>"$work/e$r" &
		pids+=("$!")
	done
	local json=-j
	[[ -z ${TEXT:-} ]] || json=
	"$rdmactl" $json -t 60000 sweep -r 0 -w "$n" -R "file:$work/peers" --duration "$duration" \
		--msg-size "$msg" --depth "$depth" --slow-ratio 0 "${args[@]}" >"$work/r0" 2>"$work/e0" || true
	for p in "${pids[@]}"; do wait "$p" || true; done
	[[ -n ${TEXT:-} ]] || jq -e . "$work/r0" >/dev/null || { cat "$work"/e* >&2; exit 1; }
}

bottleneck() {
	tc qdisc add dev "$1" root handle 1: prio
	tc qdisc add dev "$1" parent 1:3 handle 30: tbf rate "$rate" burst 32kb limit 4mb
	tc filter add dev "$1" parent 1: protocol ip u32 match ip dst "$2/32" flowid 1:3
}

load_table() {
	jq -r '"  leakage median WRITE \(.load.write_leak_median // "-") READ \(.load.read_leak_median // "-"); blamed: \([.load.blamed_ports[] | "rank \(.rank) (\(.device), \(.sides | join("/")))"] | join(", ") | if . == "" then "none" else . end)",
		(.load.directions_loaded[] | "  \(.from) -> \(.to)  WRITE p50 \(.write.idle.p50_us | floor) -> \(.write.loaded.p50_us | floor) us (x\(.write.leakage_p50 * 100 | round / 100)), p99 \(.write.idle.p99_us | floor) -> \(.write.loaded.p99_us | floor) us (x\(.write.leakage_p99 * 100 | round / 100)); READ p50 x\(.read.leakage_p50 * 100 | round / 100)\(if .leaks then "  LEAKS" else "" end)"),
		"  counters moved: \([.congestion_counters[] | "rank \(.rank): \(.moved | to_entries | map("\(.key) +\(.value)") | join(" "))"] | join("; "))",
		"  absent on this NIC: \(.congestion_counters[0].absent | join(" "))"' "$work/r0"
}

incast_table() {
	jq -r '(.steps[] | "  N=\(.senders)  goodput \(.goodput_gbit_per_s * 1000 | round / 1000) Gb/s  jain \(.jain * 1000 | round / 1000)  spread \(.completion_spread_s * 1000 | round) ms  p99 \(.latency.p99_us | floor) us"),
		"  knee: \(if .knee.senders == null then "none" else "\(.knee.senders) senders (flat \(.knee.flat), unfair \(.knee.unfair))" end)"' "$work/r0"
}

four=("$RDMACTL_VM_ADDR_A" "$xa" "$RDMACTL_VM_ADDR_B" "$xb")
echo "# sweep-load-bench: --load $mode, 4 ranks, $duration s a direction, WRITEs of $msg x $depth"
echo "# no qdisc:"
group --load "$mode" --leak-ratio 20 -- "${four[@]}"
load_table
behind=("$RDMACTL_VM_ADDR_A" "$xa" "$RDMACTL_VM_ADDR_A" "$xb")
echo "# ranks 0, 1, 2 on ${RDMACTL_VM_DEV_A:-rxe_a}, 3 on ${RDMACTL_VM_DEV_B:-rxe_b}, tbf $rate on the link into rank 3 ($xb):"
bottleneck va "$xb"
group --load "$mode" --leak-ratio 20 -- "${behind[@]}"
load_table
tc qdisc del dev va root
into0=("$RDMACTL_VM_ADDR_A" "$RDMACTL_VM_ADDR_B" "$xb" "$RDMACTL_VM_ADDR_B")
echo "# incast into rank 0, no qdisc:"
group --incast 0 -- "${into0[@]}"
incast_table
echo "# incast into rank 0, tbf $rate on the link into it:"
bottleneck vb "$RDMACTL_VM_ADDR_A"
group --incast 0 -- "${into0[@]}"
incast_table
if [[ -n ${SHOW_TEXT:-} ]]; then
	echo "# the text report of --load $mode with the tbf into rank 3:"
	tc qdisc del dev vb root
	bottleneck va "$xb"
	TEXT=1 group --load "$mode" --leak-ratio 20 -- "${behind[@]}"
	sed 's/^/  /' "$work/r0"
fi
