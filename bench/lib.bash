# SPDX-License-Identifier: MIT
# Sourced by the benchmarks that run ranks as background processes:
#   bench_setup NAME [ADDR [DEVICE [GID_INDEX]]]
# sets addr, dev, gid (arguments, then $RDMACTL_VM_*, then the guest's
# defaults) and rdmactl, checks for perftest and jq, and makes a scratch
# folder $work; processes whose pids go into the array pids are killed and
# $work removed when the script exits.
# shellcheck disable=SC2034 # addr, dev, gid and rdmactl are for the sourcing script
bench_setup() {
	local name=$1
	addr=${2:-${RDMACTL_VM_ADDR:-198.18.0.1}}
	dev=${3:-${RDMACTL_VM_DEV:-rxe0}}
	gid=${4:-${RDMACTL_VM_GID_INDEX:-1}}
	rdmactl=${RDMACTL:-$(dirname -- "${BASH_SOURCE[0]}")/../build/cli/rdmactl}
	command -v ib_write_bw >/dev/null || { echo "$name: ib_write_bw (perftest) is missing" >&2; exit 1; }
	command -v jq >/dev/null || { echo "$name: jq is missing" >&2; exit 1; }
	[[ -x $rdmactl ]] || { echo "$name: no rdmactl at $rdmactl: build first, or set RDMACTL" >&2; exit 1; }
	work=$(mktemp -d)
	pids=()
	trap bench_cleanup EXIT
}

bench_cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf -- "$work"
}

# await_region FILE: until a register server's -j output in FILE announced
# its region (10 s at most); else print FILE and exit 1.
await_region() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q '"event":"region"' "$1" && return 0
		sleep 0.1
	done
	cat "$1" >&2
	exit 1
}

# The one median of the benchmarks, as a jq definition (migrate-bench.sh's
# report uses it inside its own jq program): the conventional one, the middle
# value, or for an even count the mean of the two middle values.
BENCH_JQ_MEDIAN='def median: map(select(. != null)) | sort
	| if length == 0 then null
	  elif length % 2 == 1 then .[length / 2 | floor]
	  else (.[length / 2 - 1] + .[length / 2]) / 2 end;'

# median [NUMBERS...]: their median (the numbers on stdin when none given).
median() {
	if (($#)); then printf '%s\n' "$@"; else cat; fi | sed '/^$/d' | jq -rs "$BENCH_JQ_MEDIAN median"
}

# median_spread [NUMBERS...]: "MEDIAN LEAST MOST" (stdin when none given).
median_spread() {
	if (($#)); then printf '%s\n' "$@"; else cat; fi | sed '/^$/d' |
		jq -rs "$BENCH_JQ_MEDIAN"' "\(median) \(min) \(max)"'
}

# measure VALUE WHAT: print VALUE when it is a number above zero; else the
# run stops, naming the script and WHAT (an unparsed figure never counts as 0).
measure() {
	if [[ "$1" =~ ^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] && awk -v v="$1" 'BEGIN { exit !(v > 0) }'; then
		echo "$1"
		return 0
	fi
	echo "$(basename -- "$0" .sh): $2: no measurement ('$1')" >&2
	exit 1
}
