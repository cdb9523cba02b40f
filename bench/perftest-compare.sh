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
# Each pair runs ROUNDS times (default 2), alternating, and the mean is kept.
# Speed is only comparable as a ratio taken in one place: numbers from the
# emulated guest say nothing about real NICs.
#
#   bench/perftest-compare.sh           (re-runs itself in the SoftRoCE guest
#                                        where there is no RDMA device)
#   RDMACTL_BENCH_ROUNDS=3 bench/perftest-compare.sh (RDMACTL_* reach the guest)
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/.." && pwd)
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

# perftest: server in the background, client once the server listens.
perftest() { # TOOL ARGS... -> stdout of the client
	local tool=$1 i
	shift
	timeout 120 "$tool" -d "$dev" -x "$gidx" -F "$@" >"$work/pt-server" 2>&1 &
	local srv=$!
	for i in $(seq 50); do
		sleep 0.2
		if timeout 120 "$tool" -d "$dev" -x "$gidx" -F "$@" 127.0.0.1 >"$work/pt-client" 2>&1; then
			wait "$srv" || true
			cat "$work/pt-client"
			return 0
		fi
		kill -0 "$srv" 2>/dev/null || break
	done
	kill "$srv" 2>/dev/null || true
	echo "perftest $tool failed:" >&2
	cat "$work/pt-client" "$work/pt-server" >&2
	return 1
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
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }

declare -A ptv rcv
run_pair() { # KEY PERFTEST-CMD... -- RDMACTL-ARGS...
	local key=$1 r
	shift
	local -a pt=() rc=()
	while [ "$1" != -- ]; do pt+=("$1"); shift; done
	shift
	rc=("$@")
	: >"$work/$key.pt"
	: >"$work/$key.rc"
	for ((r = 0; r < rounds; r++)); do
		perftest "${pt[@]}" >"$work/out" || return 1
		case "$key" in
		*lat*) pt_row "${pt_size}" <"$work/out" | awk '{ print $5 }' >>"$work/$key.pt" ;;
		*) pt_row "${pt_size}" <"$work/out" | awk '{ print $4 }' >>"$work/$key.pt" ;;
		esac
		serve
		if ! "$rdmactl" -j "${rc[@]}" "$addr:$port/b" >"$work/out"; then
			echo "rdmactl ${rc[*]} failed:" >&2
			cat "$work/out" >&2
			return 1
		fi
		unserve
		case "$key" in
		write_lat) jq -r .one_way_us.p50 "$work/out" >>"$work/$key.rc" ;;
		*lat*) jq -r .latency_us.p50 "$work/out" >>"$work/$key.rc" ;;
		*) jq -r .mib_per_s "$work/out" >>"$work/$key.rc" ;;
		esac
	done
	ptv[$key]=$(mean <"$work/$key.pt")
	rcv[$key]=$(mean <"$work/$key.rc")
}

echo "rdmactl vs perftest on $dev ($addr), $rounds rounds each, alternating" >&2
pt_size=65536
run_pair write_bw_64k ib_write_bw -s 65536 -n 2000 -t $depth -Q $cqmod -- \
	write --bench --msg-size 64K --iters 2000 --depth $depth --signal-every $cqmod
pt_size=1048576
run_pair write_bw_1m ib_write_bw -s 1048576 -n 200 -t $depth -Q $cqmod -- \
	write --bench --msg-size 1M --iters 200 --depth $depth --signal-every $cqmod
pt_size=65536
run_pair read_bw_64k ib_read_bw -s 65536 -n 2000 -t $depth -Q $cqmod -- \
	read --bench --msg-size 64K --iters 2000 --depth $depth --signal-every $cqmod
pt_size=1048576
run_pair read_bw_1m ib_read_bw -s 1048576 -n 200 -t $depth -Q $cqmod -- \
	read --bench --msg-size 1M --iters 200 --depth $depth --signal-every $cqmod
pt_size=8
run_pair atomic_bw ib_atomic_bw -n 20000 -t $depth -Q $cqmod -- \
	atomic --faa 1 --bench --iters 20000 --depth $depth --signal-every $cqmod
run_pair write_lat ib_write_lat -s 8 -n 5000 -- write --lat --msg-size 8 --iters 5000
run_pair read_lat ib_read_lat -s 8 -n 5000 -- read --lat --msg-size 8 --iters 5000

printf '%-16s %14s %14s %8s\n' test perftest rdmactl ratio
for key in write_bw_64k write_bw_1m read_bw_64k read_bw_1m atomic_bw write_lat read_lat; do
	case "$key" in
	*lat*) unit=us ;;
	*) unit=MiB/s ;;
	esac
	printf '%-16s %8s %5s %8s %5s %8s\n' "$key" "${ptv[$key]}" "$unit" "${rcv[$key]}" "$unit" \
		"$(ratio "${rcv[$key]}" "${ptv[$key]}")"
done
cat <<'NOTE'
Bandwidth ratios are rdmactl/perftest (higher is better); latency ratios
rdmactl/perftest (lower is better), medians. ib_write_lat reports half a
ping-pong round trip; rdmactl write --lat measures post-to-completion (data
there, ACK back) and write_lat compares half of it (one_way_us); read_lat
compares full round trips, as ib_read_lat measures them.
atomic_bw compares MiB/s of 8-byte operations (ib_atomic_bw's BW column).
NOTE
