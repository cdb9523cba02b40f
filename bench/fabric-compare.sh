#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# One workload over every fabric the host offers, side by side: rdmactl's
# write and read bandwidth (64 KiB and 1 MiB), 8-byte write latency,
# fetch-and-add rate and alltoall among 8 ranks (flat, its bus bandwidth),
# over verbs (RC through rdma_cm) and over each
# libfabric provider rdmactl can open (ofi:verbs, ofi:efa, ofi:tcp), rounds
# alternating between fabrics, each figure also as a ratio to the fastest
# fabric of its row. Beside them the physical references, measured in the
# same place: perftest (ib_write_bw, ib_read_bw, ib_write_lat,
# ib_atomic_bw) on the verbs device, and iperf3 over the tcp path.
# Every operation completes on every fabric (--signal-every 1 on verbs,
# perftest -Q 1), as libfabric completes each. Bandwidth in MiB/s, latency
# in us, atomics in millions a second (write_lat: half of post to completion, as perftest-compare.sh
# compares it with ib_write_lat's half round trip).
#
#   bench/fabric-compare.sh                 (in the SoftRoCE guest when the
#                                            host has no RDMA device: verbs,
#                                            ofi:verbs and ofi:tcp on rxe0)
#   RDMACTL_BENCH_HOST=1 bench/fabric-compare.sh   (here, no guest: ofi:tcp
#                                            on 127.0.0.1 beside iperf3)
#   RDMACTL_BENCH_FABRICS="verbs ofi:efa" RDMACTL_BENCH_ROUNDS=5 ...
#   RDMACTL_BENCH_KEYS="write_bw_1m write_lat" ...   (some rows only)
# kvxfer and multicast run over verbs only so far: their rows are named
# as such, not measured.
# shellcheck disable=SC2119 # median reads its numbers on stdin
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/.." && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
has_device() { compgen -G '/sys/class/infiniband/*' >/dev/null; }
if [ -z "${RDMACTL_VM:-}" ] && [ -z "${RDMACTL_BENCH_HOST:-}" ] && ! has_device; then
	exec "$repo/tests/vm/run.sh" -- "$0" "$@"
fi
rdmactl=${RDMACTL:-$repo/build/cli/rdmactl}
[[ -x $rdmactl ]] || { echo "fabric-compare: no rdmactl at $rdmactl: build first, or set RDMACTL" >&2; exit 1; }
command -v jq >/dev/null || { echo "fabric-compare: jq is missing" >&2; exit 1; }
if [ -n "${RDMACTL_BENCH_HOST:-}" ]; then
	addr=${RDMACTL_BENCH_ADDR:-127.0.0.1}
else
	addr=${RDMACTL_BENCH_ADDR:-${RDMACTL_VM_ADDR:-198.18.0.1}}
fi
dev=${RDMACTL_BENCH_DEV:-${RDMACTL_VM_DEV:-rxe0}}
gidx=${RDMACTL_BENCH_GID_INDEX:-${RDMACTL_VM_GID_INDEX:-1}}
rounds=${RDMACTL_BENCH_ROUNDS:-2}
keys=${RDMACTL_BENCH_KEYS:-write_bw_64k write_bw_1m read_bw_64k read_bw_1m write_lat atomic_bw alltoall_8}
depth=128
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf -- "$work"' EXIT

# The fabrics: as asked, else verbs where there is a device, then each of
# ofi:verbs, ofi:efa and ofi:tcp that probe-topology --fabrics says opens.
offered() {
	local f
	has_device && [ -z "${RDMACTL_BENCH_HOST:-}" ] && echo verbs
	f=$("$rdmactl" -j probe-topology --fabrics | jq -r '[.fabrics.list[].fabric_option] | unique | .[]')
	for o in ofi:verbs ofi:efa ofi:tcp; do
		grep -qx -- "$o" <<<"$f" && echo "$o"
	done
	return 0
}
read -r -a fabrics <<<"${RDMACTL_BENCH_FABRICS:-$(offered | tr '\n' ' ')}"
((${#fabrics[@]})) || { echo "fabric-compare: no fabric to run on" >&2; exit 1; }

# One register server a fabric, for every round: its -j lines in $work/F.srv.
declare -A port_of
port=19400
for f in "${fabrics[@]}"; do
	port=$((port + 1))
	port_of[$f]=$port
	"$rdmactl" -j register --fabric "$f" --listen "$addr:$port" --name b --size 2M --access atomic \
		>"$work/$f.srv" 2>&1 &
	pids+=($!)
	await_region "$work/$f.srv"
done

# The rows: rdmactl's arguments, the figure (jq), the operations and bytes
# each moves, perftest's command and the column of its result row.
declare -A args fig ops size pt ptcol
row() { args[$1]=$2 fig[$1]=$3 ops[$1]=$4 size[$1]=$5 pt[$1]=$6 ptcol[$1]=$7; }
bw='.gbyte_per_s * 1e9 / 1048576'
row write_bw_64k "write --bench --msg-size 64K --iters 2000 --depth $depth" "$bw" 2000 65536 \
	"ib_write_bw -s 65536 -n 2000 -t $depth -Q 1" 4
row write_bw_1m "write --bench --msg-size 1M --iters 200 --depth $depth" "$bw" 200 1048576 \
	"ib_write_bw -s 1048576 -n 200 -t $depth -Q 1" 4
row read_bw_64k "read --bench --msg-size 64K --iters 2000 --depth $depth" "$bw" 2000 65536 \
	"ib_read_bw -s 65536 -n 2000 -t $depth -Q 1" 4
row read_bw_1m "read --bench --msg-size 1M --iters 200 --depth $depth" "$bw" 200 1048576 \
	"ib_read_bw -s 1048576 -n 200 -t $depth -Q 1" 4
row write_lat "write --lat --msg-size 8 --iters 2000" .one_way_us.p50 2000 8 \
	"ib_write_lat -s 8 -n 2000" 5
row atomic_bw "atomic --faa 1 --bench --iters 5000 --depth $depth" ".msgs_per_s / 1e6" 5000 8 \
	"ib_atomic_bw -n 5000 -t $depth -Q 1" 5
# 8 ranks of alltoall on this address, flat, every token checked: no
# perftest beside it
row alltoall_8 "alltoall --algo flat --tokens 128 --hidden 1024 --iters 10 --warmup 2" \
	".busbw_gbyte_per_s * 1e9 / 1048576" 0 0 "" 0

# run_a2a KEY FABRIC: 8 ranks on $addr (ports of their own each run), rank
# 0's figure appended to $work/KEY.FABRIC.
a2a_runs=0
run_a2a() {
	local key=$1 f=$2 r p=$((19500 + a2a_runs * 8)) v
	local -a rp=()
	a2a_runs=$((a2a_runs + 1))
	: >"$work/peers"
	for ((r = 0; r < 8; r++)); do echo "$r $addr:$((p + r))" >>"$work/peers"; done
	for ((r = 1; r < 8; r++)); do
		# shellcheck disable=SC2086 # the row's arguments, a word each
		"$rdmactl" ${args[$key]} --fabric "$f" -R "file:$work/peers" -r "$r" -w 8 \
			>/dev/null 2>"$work/a2a.$r" &
		rp+=($!)
	done
	# shellcheck disable=SC2086
	if ! "$rdmactl" -j ${args[$key]} --fabric "$f" -R "file:$work/peers" -r 0 -w 8 \
		>"$work/out" 2>&1; then
		echo "fabric-compare: $key over $f failed:" >&2
		cat "$work/out" "$work"/a2a.* >&2
		exit 1
	fi
	for r in "${rp[@]}"; do wait "$r" || { echo "fabric-compare: a rank of $key over $f failed" >&2; exit 1; }; done
	jq -e '.wrong == 0 and .checked_tokens > 0' "$work/out" >/dev/null || {
		echo "fabric-compare: $key over $f did not check its tokens:" >&2
		cat "$work/out" >&2
		exit 1
	}
	v=$(jq -r "${fig[$key]}" "$work/out")
	measure "$v" "$key over $f" >>"$work/$key.$f"
}

# run KEY FABRIC: one rdmactl run; its figure appended to $work/KEY.FABRIC.
run() {
	local key=$1 f=$2 v extra=()
	if [[ $key == alltoall* ]]; then
		run_a2a "$key" "$f"
		return
	fi
	if [ "$f" = verbs ]; then
		[[ $key == *lat* ]] || extra=(--signal-every 1)
	else
		extra=(--descriptor "$work/$f.srv")
	fi
	# shellcheck disable=SC2086 # the row's arguments, a word each
	if ! "$rdmactl" -j ${args[$key]} "${extra[@]}" --fabric "$f" \
		"$addr:${port_of[$f]}/b" >"$work/out" 2>&1; then
		echo "fabric-compare: $key over $f failed:" >&2
		cat "$work/out" >&2
		exit 1
	fi
	# every operation ran, every byte moved
	jq -e --argjson n "${ops[$key]}" --argjson s "${size[$key]}" \
		'.operations == $n and .bytes == $n * $s' "$work/out" >/dev/null || {
		echo "fabric-compare: $key over $f did not move ${ops[$key]} x ${size[$key]} bytes:" >&2
		cat "$work/out" >&2
		exit 1
	}
	v=$(jq -r "${fig[$key]}" "$work/out")
	measure "$v" "$key over $f" >>"$work/$key.$f"
}

# perftest KEY: the reference on the verbs device, appended to $work/KEY.pt.
perftest() {
	local key=$1 i srv v
	# shellcheck disable=SC2086 # perftest's arguments, a word each
	timeout 120 ${pt[$key]} -d "$dev" -x "$gidx" -F >"$work/pt-server" 2>&1 &
	srv=$!
	for ((i = 0; i < 100; i++)); do
		[ -n "$(ss -Hltn 'sport = :18515' 2>/dev/null)" ] && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
	# shellcheck disable=SC2086
	if ! timeout 120 ${pt[$key]} -d "$dev" -x "$gidx" -F 127.0.0.1 >"$work/pt-client" 2>&1; then
		kill "$srv" 2>/dev/null || true
		echo "fabric-compare: ${pt[$key]} failed:" >&2
		cat "$work/pt-client" "$work/pt-server" >&2
		exit 1
	fi
	wait "$srv" || true
	v=$(awk -v s="${size[$key]}" -v c="${ptcol[$key]}" '$1 == s { print $c; exit }' "$work/pt-client")
	measure "$v" "$key, perftest" >>"$work/$key.pt"
}

# iperf3 over the tcp path: MiB/s of one stream for 2 s, into $work/iperf.
iperf() {
	local p=19499 v
	timeout 30 iperf3 -s -1 -p $p -B "$addr" >/dev/null 2>&1 &
	for _ in $(seq 50); do
		[ -n "$(ss -Hltn "sport = :$p" 2>/dev/null)" ] && break
		sleep 0.1
	done
	v=$(timeout 30 iperf3 -c "$addr" -p $p -t 2 -J | jq '.end.sum_received.bits_per_second / 8 / 1048576')
	measure "$v" "iperf3" >>"$work/iperf"
}

use_perftest=0
[[ " ${fabrics[*]} " == *" verbs "* ]] && command -v ib_write_bw >/dev/null && use_perftest=1
use_iperf=0
[[ " ${fabrics[*]} " == *" ofi:tcp "* ]] && command -v iperf3 >/dev/null && use_iperf=1
echo "fabric-compare: ${fabrics[*]} on $addr, $rounds rounds, alternating" >&2
for ((r = 0; r < rounds; r++)); do
	for key in $keys; do
		[ -n "${args[$key]:-}" ] || { echo "fabric-compare: no row '$key'" >&2; exit 1; }
		for f in "${fabrics[@]}"; do run "$key" "$f"; done
		((use_perftest)) && [ -n "${pt[$key]}" ] && perftest "$key"
	done
	((use_iperf)) && iperf
done

unit() {
	case $1 in
	*lat*) echo us ;;
	atomic*) echo Mops ;;
	*) echo MiB/s ;;
	esac
}

# The table: each fabric's median and its ratio to the row's fastest (bandwidth:
# value / most, higher is better; latency: value / least, lower is better).
printf '%-13s' row
for f in "${fabrics[@]}"; do printf ' %23s' "$f"; done
((use_perftest)) && printf ' %12s' perftest
printf '\n'
for key in $keys; do
	declare -A med=()
	for f in "${fabrics[@]}"; do med[$f]=$(median <"$work/$key.$f"); done
	best=$(printf '%s\n' "${med[@]}" | sort -g | if [[ $key == *lat* ]]; then head -1; else tail -1; fi)
	printf '%-13s' "$key"
	for f in "${fabrics[@]}"; do
		printf " %10.3f %-5s %5sx" "${med[$f]}" "$(unit "$key")" \
			"$(awk -v a="${med[$f]}" -v b="$best" 'BEGIN { printf "%.2f", a / b }')"
	done
	if ((use_perftest)) && [ -n "${pt[$key]}" ]; then
		printf ' %12.3f' "$(median <"$work/$key.pt")"
	elif ((use_perftest)); then
		printf ' %12s' -
	fi
	printf '\n'
done
if ((use_iperf)); then
	printf 'iperf3 over %s, one stream: %.2f MiB/s (median of %d)\n' "$addr" "$(median <"$work/iperf")" \
		"$(wc -l <"$work/iperf")"
elif [[ " ${fabrics[*]} " == *" ofi:tcp "* ]]; then
	echo "iperf3: not installed (apt install iperf3): no tcp reference"
fi
cat <<'NOTE'
Medians of the rounds. Ratios are to the row's fastest fabric: bandwidth
value/most (1.00x is the fastest, lower is slower), latency value/least
(1.00x is the fastest, higher is slower). perftest runs on the verbs
device with every operation completing (-Q 1), as every fabric here does.
ofi:tcp is a software transport: beside iperf3 it says what libfabric's
tcp provider costs over the kernel's TCP on the same path.
alltoall_8: busbw of 8 ranks, flat (MiB/s). Not measured: kvxfer and
multicast run over verbs only so far.
NOTE
