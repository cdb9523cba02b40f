#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# For the operator about to start a job on a Slurm allocation, asking "is
# every node set up the same, and right?": run rdmactl preflight once per
# node with srun (each task takes its rank from Slurm's environment), read
# the JSON (every rank prints the same comparison; rank 0's is taken) and
# print the findings, errors first, each with its nodes and fix. Run it
# inside the allocation (salloc, or the job's batch script) before the
# job's own step.
#
# Usage: examples/preflight-slurm.sh [OPTIONS] [-- PREFLIGHT OPTIONS]
#   --etcd H:P      meet through this etcd (each rank listens on its
#                   --rails auto address); default: a peers file
#   --peers FILE    the peers file to use ("RANK ADDR:PORT NODE" a line);
#                   default: one built in the working folder from the
#                   allocation's node list, each node's name resolved
#                   (it must resolve to the address of its RDMA netdev)
#   --port N        the first port of a built peers file (default 24600)
#   --local         this node only (rdmactl preflight --world 1), no srun
#   --              the rest goes to rdmactl preflight (--buffer 16G,
#                   --no-probe, --svg FILE, --sysfs TREE...)
# Prints one JSON summary on stdout; exits 0 when every node is clean, 1 on
# a finding (or a failure), 2 on a usage error.
# In the SoftRoCE guest (no Slurm there):
#   tests/vm/run.sh -- examples/preflight-slurm.sh --local
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
usage_err() { echo "preflight-slurm: $*" >&2; exit 2; }
summary_fail() {
	jq -n --arg e "$1" '{ok: false, error: $e}'
	exit 1
}
die() { summary_fail "$*"; }
step=300
etcd= peers= port=24600 local=0 extra=()
while (($#)); do
	case $1 in
	--etcd) etcd=${2:?}; shift 2 ;;
	--peers) peers=${2:?}; shift 2 ;;
	--port) port=${2:?}; shift 2 ;;
	--local) local=1; shift ;;
	--) shift; extra=("$@"); break ;;
	-h | --help) sed -n '/^# Usage/,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) usage_err "unknown option '$1' (see --help)" ;;
	esac
done
[[ $port =~ ^[0-9]+$ ]] && ((port > 0 && port < 65000)) || usage_err "--port wants a port number"
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT
# shellcheck source=examples/lib/common.bash
. "$here/lib/common.bash"

if ((local)); then
	launch=() group=(--world 1 --rank 0)
else
	command -v srun >/dev/null || usage_err "needs Slurm's srun (or --local for this node alone)"
	[[ -n ${SLURM_JOB_NODELIST:-} ]] || usage_err "run it inside a Slurm allocation (salloc, sbatch)"
	launch=(srun --ntasks-per-node 1 --kill-on-bad-exit=0)
	if [[ -n $etcd ]]; then
		group=(--rendezvous "etcd://$etcd/preflight-${SLURM_JOB_ID:-$$}" --rails auto)
	else
		if [[ -z $peers ]]; then
			# on a shared folder, so that every node reads the same file
			peers=$PWD/.preflight-peers.${SLURM_JOB_ID:-$$}
			trap 'rm -rf -- "$work" "$peers"' EXIT
			r=0
			while read -r node; do
				addr=$(getent ahostsv4 "$node" | awk 'NR == 1 { print $1 }')
				[[ -n $addr ]] || die "cannot resolve node $node"
				echo "$r $addr:$((port + r)) $node"
				r=$((r + 1))
			done < <(scontrol show hostnames "$SLURM_JOB_NODELIST") >"$peers"
		fi
		group=(--rendezvous "file:$peers")
	fi
fi

echo "preflight-slurm: ${launch[*]:-this node}" >&2
rc=0
timeout --kill-after=5 "$step" "${launch[@]}" "$rdmactl" -j -t 30000 preflight "${group[@]}" \
	"${extra[@]}" >"$work/all" 2>"$work/err" || rc=$?
# one document a rank, the same comparison in each: rank 0's (it names --svg),
# else the first that came
jq -c -s 'map(select(type == "object")) | ((map(select(has("clean"))) | sort_by(.rank)) + .)[0] // empty' \
	"$work/all" >"$work/doc" 2>/dev/null || :
# exit 1 with a report is a verdict (findings); without one, a failure
if ! jq -e 'type == "object" and has("clean")' "$work/doc" >/dev/null 2>&1; then
	msg=$(jq -r '.error.message // empty' "$work/doc" 2>/dev/null | head -1) || msg=
	summary_fail "${msg:-rdmactl preflight exited $rc: $(tail -n 3 "$work/err")}"
fi

jq '{ok: .clean, nodes: .world, counts,
	findings: [.findings[] | {severity, check, setting, nodes, message, fix}],
	probe: (if .probe then [.probe.directions[]
		| "\(.from) -> \(.to): \(if .ok then "\(.gbit_per_s) Gbit/s, \(.percent_of_expected // "?")% of expected" else .error end)"]
		else null end), svg}' "$work/doc"
jq -r '.findings[] | "\(.severity | ascii_upcase): \(.message) [\(.nodes)]\n  fix: \(.fix)"' "$work/doc" >&2
jq -r '"preflight-slurm: \(if .clean then "clean" else "NOT clean" end): \(.counts.error) errors, \(.counts.warning) warnings on \(.world) nodes"' \
	"$work/doc" >&2
jq -e '.clean' "$work/doc" >/dev/null
