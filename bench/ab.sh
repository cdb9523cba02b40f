#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# One benchmark, two builds of rdmactl, in one guest: the "before" and
# "after" tables a speed change is judged by. Each pass runs BENCH once with
# RDMACTL=BEFORE and once with RDMACTL=AFTER, the order alternating (before
# first in odd passes), each run's output under a line naming its build:
#   tests/vm/run.sh --two-nics -- bench/ab.sh [--passes N] \
#       [--before-env NAME=VALUE]... [--after-env NAME=VALUE]... \
#       BEFORE AFTER -- bench/multicast-bench.sh [ARGS...]
# --before-env and --after-env set a variable for one side's runs, for a
# build that takes other options (an rdmactl before `--chunk auto`:
# --before-env CHUNK=256K). A run that fails stops the whole comparison,
# with its exit status. Compare the figures of the same pass: the guest's
# speed drifts between passes more than between two neighbouring runs.
set -euo pipefail

passes=2
benv=()
aenv=()
usage() {
	echo "usage: bench/ab.sh [--passes N] [--before-env NAME=VALUE]... [--after-env NAME=VALUE]... BEFORE AFTER -- BENCH [ARGS...]" >&2
	exit 2
}
while (($#)); do
	case $1 in
	--passes)
		[[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "ab.sh: --passes needs a positive count" >&2; exit 2; }
		passes=$2
		shift 2
		;;
	--before-env | --after-env)
		[[ ${2:-} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "ab.sh: $1 needs NAME=VALUE, not '${2:-}'" >&2; exit 2; }
		if [[ $1 == --before-env ]]; then benv+=("$2"); else aenv+=("$2"); fi
		shift 2
		;;
	*) break ;;
	esac
done
if (($# < 4)) || [[ $3 != -- ]]; then usage; fi
before=$1 after=$2
shift 3
for b in "$before" "$after"; do
	[[ -x $b ]] || { echo "ab.sh: no rdmactl at $b" >&2; exit 1; }
done
[[ -f $1 ]] || { echo "ab.sh: no benchmark at $1" >&2; exit 1; }

# side NAME BENCH [ARGS...]: one run of the benchmark with that side's
# build and variables.
side() {
	local name=$1 bin=$before rc=0
	local -a vars=("${benv[@]}")
	shift
	[[ $name == before ]] || { bin=$after; vars=("${aenv[@]}"); }
	echo "=== $name (pass $pass of $passes): $bin"
	env "${vars[@]}" RDMACTL="$bin" bash "$@" || rc=$?
	((rc == 0)) || { echo "ab.sh: the $name run of pass $pass failed (exit $rc)" >&2; exit "$rc"; }
}

for ((pass = 1; pass <= passes; pass++)); do
	if ((pass % 2)); then order=(before after); else order=(after before); fi
	for s in "${order[@]}"; do
		side "$s" "$@"
	done
done
