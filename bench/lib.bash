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
