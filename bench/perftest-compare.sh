#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rdmactl's --bench/--lat beside Debian's perftest, alternately, on the same
# rxe device with the same message sizes and depth:
#   ib_write_bw  vs write --bench    (64 KiB and 1 MiB)
#   ib_read_bw   vs read --bench     (64 KiB and 1 MiB)
#   ib_atomic_bw vs atomic --bench   (8 bytes)
#   ib_write_lat vs write --lat      (8 bytes)
#   ib_read_lat  vs read --lat       (8 bytes)
# Bandwidth in MiB/s (perftest's MB/sec is 2^20 bytes), latency in us.
# Each pair runs ROUNDS times (default 2), alternating, and the mean is kept;
# a round that fails, or whose figure does not parse, stops the run.
# Speed is only comparable as a ratio taken in one place: numbers from the
# emulated guest say nothing about real NICs.
#
#   bench/perftest-compare.sh           (re-runs itself in the SoftRoCE guest
#                                        where there is no RDMA device)
#   RDMACTL_BENCH_ROUNDS=3 bench/perftest-compare.sh (RDMACTL_* reach the guest)
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/.." && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
if [ -z "${RDMACTL_VM:-}" ] && [ -z "${RDMACTL_BENCH_DEV:-}" ]; then
	exec "$repo/tests/vm/run.sh" -- "$0" "$@"
fi
rdmactl=${RDMACTL:-$repo/build/cli/rdmactl}
dev=${RDMACTL_BENCH_DEV:-${RDMACTL_VM_DEV:-rxe0}}
addr=${RDMACTL_BENCH_ADDR:-${RDMACTL_VM_ADDR:-198.18.0.1}}
gidx=${RDMACTL_BENCH_GID_INDEX:-${RDMACTL_VM_GID_INDEX:-1}}
rounds=${RDMACTL_BENCH_ROUNDS:-${ROUNDS:-2}}
depth=128
cqmod=64
port=19000
work=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

# perftest: server in the background, the client once the server listens on
# perftest's port (bounded wait), run once: a failed client fails the run.
perftest() { # TOOL ARGS... -> stdout of the client
	local tool=$1 i
	shift
	timeout 120 "$tool" -d "$dev" -x "$gidx" -F "$@" >"$work/pt-server" 2>&1 &
	local srv=$!
	for ((i = 0; i < 100; i++)); do
		[ -n "$(ss -Hltn 'sport = :18515' 2>/dev/null)" ] && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
	if ! timeout 120 "$tool" -d "$dev" -x "$gidx" -F "$@" 127.0.0.1 >"$work/pt-client" 2>&1; then
		kill "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
		echo "perftest-compare: $tool failed:" >&2
		cat "$work/pt-client" "$work/pt-server" >&2
		return 1
	fi
	wait "$srv" || true
	cat "$work/pt-client"
}

# The result row of a perftest table: the line that starts with the size.
pt_row() { awk -v s="$1" '$1 == s { print; exit }'; }

serve() {
	port=$((port + 1))
	"$rdmactl" -j register --listen "$addr:$port" --name b --size 2M --access atomic \
		>"$work/srv" 2>&1 &
	server=$!
	for _ in $(seq 100); do
		grep -q '"event":"region"' "$work/srv" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "rdmactl register did not start" >&2
	cat "$work/srv" >&2
	return 1
}

unserve() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	server=
}

mean() { awk '{ s += $1; n++ } END { if (n) printf "%.2f", s / n; else print "nan" }'; }
# ratios PT-FILE RC-FILE: each round's rdmactl/perftest ratio (a round's
# two runs are neighbours in time), as "median least-most" of the rounds.
ratios() {
	local m lo hi
	# shellcheck disable=SC2119 # the numbers on stdin
	read -r m lo hi < <(paste "$1" "$2" | awk '{ print $2 / $1 }' | median_spread)
	printf "%.2fx %.2f-%.2f" "$m" "$lo" "$hi"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }

declare -A ptv rcv ptn rcn rmed
# RDMACTL_BENCH_KEYS: some rows only, e.g. "read_lat write_lat" (default: all).
keys=${RDMACTL_BENCH_KEYS:-write_bw_64k write_bw_1m read_bw_64k read_bw_1m atomic_bw write_lat read_lat}
run_pair() { # KEY PERFTEST-CMD... -- RDMACTL-ARGS...
	local key=$1 r row v
	[[ " $keys " == *" $key "* ]] || return 0
	shift
	local -a pt=() rc=()
	while [ "$1" != -- ]; do pt+=("$1"); shift; done
	shift
	rc=("$@")
	: >"$work/$key.pt"
	: >"$work/$key.rc"
	for ((r = 0; r < rounds; r++)); do
		perftest "${pt[@]}" >"$work/out" || exit 1
		# The result row: its size and iteration count must be the ones asked.
		row=$(pt_row "${pt_size}" <"$work/out")
		[ "$(awk '{ print $2 }' <<<"$row")" = "$pt_iters" ] || {
			echo "perftest-compare: $key round $((r + 1)): no $pt_size-byte row of $pt_iters iterations:" >&2
			cat "$work/out" >&2
			exit 1
		}
		case "$key" in
		*lat*) v=$(awk '{ print $5 }' <<<"$row") ;;
		*) v=$(awk '{ print $4 }' <<<"$row") ;;
		esac
		measure "$v" "$key round $((r + 1)), perftest" >>"$work/$key.pt"
		serve
		if ! "$rdmactl" -j "${rc[@]}" "$addr:$port/b" >"$work/out"; then
			echo "perftest-compare: rdmactl ${rc[*]} failed:" >&2
			cat "$work/out" >&2
			exit 1
		fi
		unserve
		# rdmactl moved what was asked: every operation, every byte.
		jq -e --argjson n "$pt_iters" --argjson s "$pt_size" '.iters == $n and .bytes == $n * $s' \
			"$work/out" >/dev/null || {
			echo "perftest-compare: $key round $((r + 1)): rdmactl did not move $pt_iters x $pt_size bytes:" >&2
			cat "$work/out" >&2
			exit 1
		}
		case "$key" in
		write_lat) v=$(jq -r .one_way_us.p50 "$work/out") ;;
		*lat*) v=$(jq -r .latency_us.p50 "$work/out") ;;
		*) v=$(jq -r ".gbyte_per_s * 1e9 / 1048576" "$work/out") ;; # MiB/s, as perftest
		esac
		measure "$v" "$key round $((r + 1)), rdmactl" >>"$work/$key.rc"
	done
	ptv[$key]=$(mean <"$work/$key.pt")
	rcv[$key]=$(mean <"$work/$key.rc")
	ptn[$key]=$(wc -l <"$work/$key.pt")
	rcn[$key]=$(wc -l <"$work/$key.rc")
	rmed[$key]=$(ratios "$work/$key.pt" "$work/$key.rc")
}

echo "rdmactl vs perftest on $dev ($addr), $rounds rounds each, alternating" >&2
pt_size=65536 pt_iters=2000
run_pair write_bw_64k ib_write_bw -s 65536 -n 2000 -t $depth -Q $cqmod -- \
	write --bench --msg-size 64K --iters 2000 --depth $depth --signal-every $cqmod
pt_size=1048576 pt_iters=200
run_pair write_bw_1m ib_write_bw -s 1048576 -n 200 -t $depth -Q $cqmod -- \
	write --bench --msg-size 1M --iters 200 --depth $depth --signal-every $cqmod
pt_size=65536 pt_iters=2000
run_pair read_bw_64k ib_read_bw -s 65536 -n 2000 -t $depth -Q $cqmod -- \
	read --bench --msg-size 64K --iters 2000 --depth $depth --signal-every $cqmod
pt_size=1048576 pt_iters=200
run_pair read_bw_1m ib_read_bw -s 1048576 -n 200 -t $depth -Q $cqmod -- \
	read --bench --msg-size 1M --iters 200 --depth $depth --signal-every $cqmod
pt_size=8 pt_iters=20000
run_pair atomic_bw ib_atomic_bw -n 20000 -t $depth -Q $cqmod -- \
	atomic --faa 1 --bench --iters 20000 --depth $depth --signal-every $cqmod
pt_iters=5000
run_pair write_lat ib_write_lat -s 8 -n 5000 -- write --lat --msg-size 8 --iters 5000
run_pair read_lat ib_read_lat -s 8 -n 5000 -- read --lat --msg-size 8 --iters 5000

printf '%-16s %14s %14s %8s %8s  %s\n' test perftest rdmactl ratio rounds "each round's ratio: median least-most"
for key in $keys; do
	case "$key" in
	*lat*) unit=us ;;
	*) unit=MiB/s ;;
	esac
	printf '%-16s %8s %5s %8s %5s %8s %8s  %s\n' "$key" "${ptv[$key]}" "$unit" "${rcv[$key]}" "$unit" \
		"$(ratio "${rcv[$key]}" "${ptv[$key]}")" "${ptn[$key]}+${rcn[$key]}" "${rmed[$key]}"
done
cat <<'NOTE'
Bandwidth ratios are rdmactl/perftest (higher is better); latency ratios
rdmactl/perftest (lower is better), medians. ib_write_lat reports half a
ping-pong round trip; rdmactl write --lat measures post-to-completion (data
there, ACK back) and write_lat compares half of it (one_way_us); read_lat
compares full round trips, as ib_read_lat measures them.
atomic_bw compares MiB/s of 8-byte operations (ib_atomic_bw's BW column).
rounds: how many perftest + rdmactl rounds each mean covers; a round that
fails or gives no figure stops the whole run. The ratio is of the means;
the last column gives each round's own ratio (its two runs neighbours in
time) as the median of the rounds and their least and most: in the guest
one latency run's p50 varies by a third from the next.
NOTE
