#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# For the ML infrastructure engineer sizing the expert-parallel exchange of
# an MoE layer on a fabric: launch a skewed dispatch and combine with Open
# MPI's mpirun (each rank takes its rank from mpirun's environment), read
# rank 0's JSON and tell whether the hot ranks, not the mean, set the pace.
#
# Usage: examples/moe-dispatch.sh [OPTIONS]
#   --ranks N       ranks to start (default 4)
#   --addr ADDR     the RDMA address every rank listens on (default
#                   $RDMACTL_VM_ADDR, else 198.18.0.1)
#   --etcd H:P      meet through this etcd (default: a peers file)
#   --skew MODEL    routing skew (default zipf:1.2)
#   --algo ALGO     flat, ring or hierarchical (default flat)
#   --hidden N      elements per token (default 1024)
#   --tokens N      tokens per rank (default 64)
#   --iters N       timed iterations (default 10)
# Prints one JSON summary on stdout; exits 0 when every token arrived
# right, 1 on a failure, 2 on a usage error. In the SoftRoCE guest:
#   tests/vm/run.sh -- examples/moe-dispatch.sh --ranks 4
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
usage_err() { echo "moe-dispatch: $*" >&2; exit 2; }
summary_fail() {
	jq -n --arg e "$1" '{ok: false, error: $e}'
	exit 1
}
die() { summary_fail "$*"; }
step=120
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT
# shellcheck source=examples/lib/common.bash
. "$here/lib/common.bash"

ranks=4 addr=${RDMACTL_VM_ADDR:-198.18.0.1} etcd= skew=zipf:1.2 algo=flat hidden=1024
tokens=64 iters=10
while (($#)); do
	case $1 in
	--ranks) ranks=${2:?}; shift 2 ;;
	--addr) addr=${2:?}; shift 2 ;;
	--etcd) etcd=${2:?}; shift 2 ;;
	--skew) skew=${2:?}; shift 2 ;;
	--algo) algo=${2:?}; shift 2 ;;
	--hidden) hidden=${2:?}; shift 2 ;;
	--tokens) tokens=${2:?}; shift 2 ;;
	--iters) iters=${2:?}; shift 2 ;;
	-h | --help) sed -n '/^# Usage/,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) usage_err "unknown option '$1' (see --help)" ;;
	esac
done
[[ $ranks =~ ^[0-9]+$ ]] && ((ranks >= 2)) || usage_err "--ranks wants a number of at least 2"
command -v mpirun >/dev/null || usage_err "needs Open MPI's mpirun (Debian: openmpi-bin)"

# Where the ranks meet: etcd when given, else a peers file of ADDR:PORT.
if [[ -n $etcd ]]; then
	rendezvous=etcd://$etcd/moe-dispatch-$$
	listen=(--listen "$addr")
else
	for ((r = 0; r < ranks; r++)); do echo "$r $addr:$((23000 + r))"; done >"$work/peers"
	rendezvous=file:$work/peers
	listen=()
fi
mpi=(mpirun -n "$ranks" --oversubscribe --bind-to none)
((EUID != 0)) || mpi+=(--allow-run-as-root)

echo "moe-dispatch: $ranks ranks, $algo, skew $skew, via ${rendezvous%%:*}" >&2
rc=0
timeout --kill-after=5 "$step" "${mpi[@]}" "$rdmactl" -j -t 30000 alltoall \
	--rendezvous "$rendezvous" "${listen[@]}" --algo "$algo" --skew "$skew" \
	--hidden "$hidden" --tokens "$tokens" --iters "$iters" >"$work/doc" 2>"$work/err" || rc=$?
if ((rc != 0)); then
	msg=$(jq -r '.error.message // empty' "$work/doc" 2>/dev/null | head -1) || msg=
	summary_fail "${msg:-mpirun exited $rc: $(tail -n 3 "$work/err")}"
fi
jq -e 'type == "object" and has("busbw_gbyte_per_s")' "$work/doc" >/dev/null 2>&1 ||
	summary_fail "rank 0 printed no report: $(head -c 300 "$work/doc")"

# The mean hides the hot ranks: at imbalance I the busiest rank moves I
# times the mean, and the exchange ends when it does.
# figures to 3 significant digits (sig3), as a reader takes them in
jq 'def sig3: if . == 0 or . == null then . else pow(10; 2 - (fabs | log10 | floor)) as $m | . * $m | round / $m end;
	{ok: (.wrong == 0), algo, ranks, rank_source, skew: $skew,
	busbw_gbyte_per_s: (.busbw_gbyte_per_s | sig3), algbw_gbyte_per_s: (.algbw_gbyte_per_s | sig3),
	lat_us: (.lat_us | map_values(sig3)), imbalance: (.imbalance | sig3), wrong,
	verdict: (if .imbalance > 1.5
		then "skew-bound: the hottest rank receives \(.imbalance * 100 | round / 100)x the mean"
		else "balanced: imbalance \(.imbalance * 100 | round / 100)" end)}' \
	--arg skew "$skew" "$work/doc"
jq -r 'def sig3: if . == 0 or . == null then . else pow(10; 2 - (fabs | log10 | floor)) as $m | . * $m | round / $m end; "moe-dispatch: busbw \(.busbw_gbyte_per_s | sig3) GB/s, p99 \(.lat_us.p99 | sig3) us, imbalance \(.imbalance | sig3), wrong \(.wrong)"' \
	"$work/doc" >&2
jq -e '.wrong == 0' "$work/doc" >/dev/null
