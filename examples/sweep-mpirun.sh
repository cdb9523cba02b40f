#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# For the cluster operator asking "which link or which node is slow?" on a
# new or degraded fleet: start rdmactl sweep on every rank with Open MPI's
# mpirun (each rank takes its rank from mpirun's environment), read rank
# 0's JSON and say the verdict: healthy, or the named nodes and pairs.
#
# Usage: examples/sweep-mpirun.sh [OPTIONS]
#   --ranks N       ranks to start (default 4)
#   --addr ADDR[,ADDR...]  the RDMA address every rank listens on (default
#                   $RDMACTL_VM_ADDR, else 198.18.0.1); of a list, rank R
#                   listens on the (R mod N)th (a peers file only)
#   --etcd H:P      meet through this etcd (default: a peers file)
#   --duration S    bandwidth test per pair and direction (default 0.3)
#   --msg-size SIZE bytes per RDMA WRITE (default 16K)
#   --svg FILE      also draw the bandwidth heatmap there
#   --              the rest goes to rdmactl sweep (--min-fraction F...)
# Prints one JSON summary on stdout; exits 0 when the fleet is healthy, 1
# when a slow link or node (or a failure) was found, 2 on a usage error.
# In the SoftRoCE guest:
#   tests/vm/run.sh -- examples/sweep-mpirun.sh --ranks 4
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
usage_err() { echo "sweep-mpirun: $*" >&2; exit 2; }
summary_fail() {
	jq -n --arg e "$1" '{ok: false, error: $e}'
	exit 1
}
die() { summary_fail "$*"; }
step=300
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT
# shellcheck source=examples/lib/common.bash
. "$here/lib/common.bash"

ranks=4 addr=${RDMACTL_VM_ADDR:-198.18.0.1} etcd= duration=0.3 msg=16K svg= extra=()
while (($#)); do
	case $1 in
	--ranks) ranks=${2:?}; shift 2 ;;
	--addr) addr=${2:?}; shift 2 ;;
	--etcd) etcd=${2:?}; shift 2 ;;
	--duration) duration=${2:?}; shift 2 ;;
	--msg-size) msg=${2:?}; shift 2 ;;
	--svg) svg=${2:?}; shift 2 ;;
	--) shift; extra=("$@"); break ;;
	-h | --help) sed -n '/^# Usage/,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) usage_err "unknown option '$1' (see --help)" ;;
	esac
done
[[ $ranks =~ ^[0-9]+$ ]] && ((ranks >= 2)) || usage_err "--ranks wants a number of at least 2"
IFS=, read -ra addrs <<<"$addr"
((${#addrs[@]} >= 1)) || usage_err "--addr wants an address"
[[ -z $etcd || ${#addrs[@]} == 1 ]] || usage_err "--addr: a list of addresses needs a peers file, not --etcd"
command -v mpirun >/dev/null || usage_err "needs Open MPI's mpirun (Debian: openmpi-bin)"

# Where the ranks meet: etcd when given, else a peers file of ADDR:PORT.
if [[ -n $etcd ]]; then
	rendezvous=etcd://$etcd/sweep-$$
	listen=(--listen "$addr")
else
	for ((r = 0; r < ranks; r++)); do echo "$r ${addrs[r % ${#addrs[@]}]}:$((24000 + r))"; done >"$work/peers"
	rendezvous=file:$work/peers
	listen=()
fi
svg_opt=()
[[ -z $svg ]] || svg_opt=(--svg "$svg")
mpi=(mpirun -n "$ranks" --oversubscribe --bind-to none)
((EUID != 0)) || mpi+=(--allow-run-as-root)

echo "sweep-mpirun: $ranks ranks, via ${rendezvous%%:*}" >&2
rc=0
timeout --kill-after=5 "$step" "${mpi[@]}" "$rdmactl" -j -t 30000 sweep \
	--rendezvous "$rendezvous" "${listen[@]}" --duration "$duration" --msg-size "$msg" \
	"${svg_opt[@]}" "${extra[@]}" >"$work/doc" 2>"$work/err" || rc=$?
# exit 1 with a report is a verdict (outliers); without one, a failure
if ! jq -e 'type == "object" and has("healthy")' "$work/doc" >/dev/null 2>&1; then
	msg=$(jq -r '.error.message // empty' "$work/doc" 2>/dev/null | head -1) || msg=
	summary_fail "${msg:-mpirun exited $rc: $(tail -n 3 "$work/err")}"
fi

# figures to 3 significant digits (sig3), as a reader takes them in
jq 'def sig3: if . == 0 or . == null then . else pow(10; 2 - (fabs | log10 | floor)) as $m | . * $m | round / $m end;
	{ok: .healthy, ranks, rounds, rank_source,
	median_gbit_per_s: (.fleet.write_median_gbit_per_s | sig3),
	bad_nodes: [.bad_nodes[] as $b | .nodes[$b.rank] | "rank \(.rank) (\(.host) \(.device))"],
	failed_pairs: [.failed_pairs[] | "\([.ranks[].rank] | map(tostring) | join(" - ")): \(.reason)"],
	outliers: [.outliers[] | "\(.from) -> \(.to): \(.reasons | join(", "))"],
	check_next, svg}' "$work/doc"
jq -r 'def sig3: if . == 0 or . == null then . else pow(10; 2 - (fabs | log10 | floor)) as $m | . * $m | round / $m end; "sweep-mpirun: \(if .healthy then "healthy" else "NOT healthy" end), \(.directions_measured) directions measured, median \(.fleet.write_median_gbit_per_s | sig3) Gb/s, \(.outliers | length) outliers"' \
	"$work/doc" >&2
jq -e '.healthy' "$work/doc" >/dev/null
