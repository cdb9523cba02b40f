#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# write over one rail against two, then kvxfer: a region served on rxe_b and rxe_d
# (register --listen B,D), written from rxe_a alone, then from rxe_a and
# rxe_c striped in 1 MiB chunks, in alternating rounds; the median rate of
# each, their ratio, and how busy the guest's CPUs were during each (from
# /proc/stat): rxe moves every packet in the kernel on those CPUs, so when
# they are near 100% busy with one rail, the CPU, not the rails, is the
# limit, and a second rail cannot double the rate. Run it in the guest:
#   tests/vm/run.sh --four-nics -- bench/rails-bench.sh
# Then kvxfer, alltoall and multicast (below). Environment: SIZE (default
# 32M), STRIPE (1M), ROUNDS (5); KV_TOKENS (512), KV_REQUESTS (4).
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
bench_setup rails-bench
[[ -n ${RDMACTL_VM_ADDR_C:-} ]] || { echo "rails-bench: needs four rxe devices (tests/vm/run.sh --four-nics)" >&2; exit 1; }
size=${SIZE:-32M}
stripe=${STRIPE:-1M}
rounds=${ROUNDS:-5}
port=26000

"$rdmactl" -j -d "$RDMACTL_VM_DEV_B,$RDMACTL_VM_DEV_D" register \
	--listen "$RDMACTL_VM_ADDR_B:$port,$RDMACTL_VM_ADDR_D:$port" --name kv --size "$size" \
	>"$work/server" 2>&1 &
pids+=("$!")
await_region "$work/server"
head -c "$(numfmt --from=iec "$size")" /dev/urandom >"$work/in"

# busy: the CPUs' busy share since the last call (cpu line of /proc/stat).
prev_busy=0 prev_all=0
busy() {
	local _ user nice sys idle iow irq soft steal b a
	read -r _ user nice sys idle iow irq soft steal _ </proc/stat
	b=$((user + nice + sys + irq + soft + steal))
	a=$((b + idle + iow))
	if ((a > prev_all)); then
		echo $(((b - prev_busy) * 100 / (a - prev_all)))
	fi
	prev_busy=$b prev_all=$a
}

# run NAME ARGS...: one write; "GB/s busy%" on stdout.
run() {
	local doc cpu
	busy >/dev/null
	doc=$("$rdmactl" -j "$@" --file "$work/in") || { echo "rails-bench: write failed: $*" >&2; exit 1; }
	cpu=$(busy)
	jq -r --arg cpu "$cpu" '"\(.gbyte_per_s) \($cpu) \([.rails[]?.share] | map(. * 100 | floor) | join("/"))"' <<<"$doc"
}

one=() two=() cpu1=() cpu2=()
printf '%-6s %12s %8s %12s %8s %10s\n' round "one(GB/s)" "cpu%" "two(GB/s)" "cpu%" "shares%"
for ((r = 1; r <= rounds; r++)); do
	read -r g1 c1 _ < <(run -d "$RDMACTL_VM_DEV_A" write "$RDMACTL_VM_ADDR_B:$port/kv" --bind "$RDMACTL_VM_ADDR_A")
	read -r g2 c2 sh < <(run -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" write \
		"$RDMACTL_VM_ADDR_B,$RDMACTL_VM_ADDR_D:$port/kv" --stripe "$stripe")
	one+=("$g1") two+=("$g2") cpu1+=("$c1") cpu2+=("$c2")
	printf '%-6s %12.4f %8s %12.4f %8s %10s\n' "$r" "$g1" "$c1" "$g2" "$c2" "$sh"
done
# verdict ONE TWO BUSY1 BUSY2: the medians, their ratio, and whether the
# guest's CPUs or the rails set the limit.
verdict() {
	awk -v m1="$1" -v m2="$2" -v b1="$3" -v b2="$4" -v n="$(nproc)" 'BEGIN {
	printf "median: one rail %.4f GB/s (CPUs %d%% busy), two rails %.4f GB/s (CPUs %d%% busy): ratio %.2f\n",
		m1, b1, m2, b2, (m1 > 0 ? m2 / m1 : 0)
	# what the CPUs allow: one rail costs b1% of them, two cannot have more than 100%
	ceiling = b1 > 0 ? 100 / b1 : 2
	if (ceiling > 2)
		ceiling = 2
	printf "one rail keeps %.2f of the guest'"'"'s %d CPUs busy: the CPUs allow two rails at most %.2f times one\n",
		b1 * n / 100, n, ceiling
	if (b2 >= 75)
		printf "two rails keep the CPUs %d%% busy: the guest'"'"'s CPU (rxe does its work there), not the rails, bounds the ratio\n", b2
	else
		printf "the CPUs had room (%d%% busy with two rails): not the CPUs together but one busy thread (one is %d%% of them) or the rails set the rates\n", b2, 100 / n
}'
}
verdict "$(median "${one[@]}")" "$(median "${two[@]}")" "$(median "${cpu1[@]}")" "$(median "${cpu2[@]}")"
echo "($size from a file per write, $stripe chunks for two rails, $rounds alternating rounds; shares% = each rail's part of the bytes)"

# kvxfer over one rail against two: TP 2 -> 1, the decode rank serving on
# rxe_b and rxe_d; one rail: both source ranks from rxe_a to rxe_b; two
# rails: rank 0 from rxe_a to rxe_b, rank 1 from rxe_c to rxe_d. The rate
# is the decode rank's (bytes of the requests done over the time from the
# first one's start to the last one's end), no compute between layers.
KVG=(--layers 8 --kv-heads 8 --head-dim 128 --page-tokens 16 --src-tp 2 --dst-tp 1)
kv_tokens=${KV_TOKENS:-512}
kv_requests=${KV_REQUESTS:-4}
kv_port=26100
# kv_run RANK1_TO RANK1_FROM: one run; "GB/s busy% shares%" on stdout.
kv_run() {
	local s0 s1 d0 cpu
	kv_port=$((kv_port + 1))
	busy >/dev/null
	"$rdmactl" -j kvxfer serve "${KVG[@]}" --listen "$RDMACTL_VM_ADDR_B:$kv_port,$RDMACTL_VM_ADDR_D:$kv_port" \
		--pool-pages $((kv_tokens / 16 * 2 + 8)) --requests "$kv_requests" >"$work/d0" 2>&1 &
	d0=$!
	for ((i = 0; i < 100; i++)); do
		(($(grep -c '"event":"listening"' "$work/d0") == 2)) && break
		sleep 0.1
	done
	"$rdmactl" -j kvxfer send "${KVG[@]}" --rank 0 --connect "$RDMACTL_VM_ADDR_B:$kv_port" \
		--bind "$RDMACTL_VM_ADDR_A" --tokens "$kv_tokens" --requests "$kv_requests" \
		--layer-compute-us 0 >"$work/s0" 2>&1 &
	s0=$!
	"$rdmactl" -j kvxfer send "${KVG[@]}" --rank 1 --connect "$1:$kv_port" --bind "$2" \
		--tokens "$kv_tokens" --requests "$kv_requests" --layer-compute-us 0 >"$work/s1" 2>&1 &
	s1=$!
	if ! wait "$s0" || ! wait "$s1" || ! wait "$d0"; then
		echo "rails-bench: kvxfer failed:" >&2
		cat "$work/d0" "$work/s0" "$work/s1" >&2
		exit 1
	fi
	cpu=$(busy)
	jq -r --arg cpu "$cpu" 'select(.event == "summary") |
		"\(.gbyte_per_s) \($cpu) \([.rails[].share] | map(. * 100 | floor) | join("/"))"' "$work/d0"
}

one=() two=() cpu1=() cpu2=()
echo
printf '%-6s %12s %8s %12s %8s %10s\n' kvxfer "one(GB/s)" "cpu%" "two(GB/s)" "cpu%" "shares%"
for ((r = 1; r <= rounds; r++)); do
	read -r g1 c1 _ < <(kv_run "$RDMACTL_VM_ADDR_B" "$RDMACTL_VM_ADDR_A")
	read -r g2 c2 sh < <(kv_run "$RDMACTL_VM_ADDR_D" "$RDMACTL_VM_ADDR_C")
	one+=("$g1") two+=("$g2") cpu1+=("$c1") cpu2+=("$c2")
	printf '%-6s %12.4f %8s %12.4f %8s %10s\n' "$r" "$g1" "$c1" "$g2" "$c2" "$sh"
done
verdict "$(median "${one[@]}")" "$(median "${two[@]}")" "$(median "${cpu1[@]}")" "$(median "${cpu2[@]}")"
echo "(kvxfer TP 2 -> 1: $kv_requests requests of $kv_tokens tokens, 8 layers x 8 KV heads x 128 dims, bf16; one rail: both source ranks to rxe_b; shares% = each rail's part on the decode rank)"

# alltoall over one rail a rank against two: 2 ranks meeting through etcd,
# rank 0 on rxe_a (and rxe_c), rank 1 on rxe_b (and rxe_d); with two, each
# rail carries a slice of every block, a thread each. The rate is rank 0's
# algbw (its bytes of an iteration over the slowest rail's time).
# Environment: A2A_HIDDEN (2048), A2A_TOKENS (256), A2A_ITERS (10).
if ! command -v etcd >/dev/null; then
	echo "rails-bench: no etcd (Debian's etcd-server): the alltoall rows are left out" >&2
	exit 0
fi
# shellcheck source=tests/lib/etcd.bash
. "$here/../tests/lib/etcd.bash"
BATS_TEST_TMPDIR=$work start_etcd
trap 'stop_etcd; bench_cleanup' EXIT
a2a_port=26300
A2A=(alltoall -w 2 --hidden "${A2A_HIDDEN:-2048}" --tokens "${A2A_TOKENS:-256}" --iters "${A2A_ITERS:-10}")
# a2a_run TWO: one run (TWO 1: two rails a rank); "GB/s busy% shares%".
a2a_run() {
	local d0=$RDMACTL_VM_DEV_A l0=$RDMACTL_VM_ADDR_A:$a2a_port d1=$RDMACTL_VM_DEV_B
	local l1=$RDMACTL_VM_ADDR_B:$a2a_port p0 p1 cpu
	a2a_port=$((a2a_port + 1))
	if (($1)); then
		d0+=,$RDMACTL_VM_DEV_C l0+=,$RDMACTL_VM_ADDR_C:$a2a_port
		d1+=,$RDMACTL_VM_DEV_D l1+=,$RDMACTL_VM_ADDR_D:$a2a_port
	fi
	busy >/dev/null
	"$rdmactl" -j -d "$d0" "${A2A[@]}" -r 0 -R "etcd://$ETCD_EP/a2a$a2a_port" --listen "$l0" >"$work/a0" 2>&1 &
	p0=$!
	"$rdmactl" -j -d "$d1" "${A2A[@]}" -r 1 -R "etcd://$ETCD_EP/a2a$a2a_port" --listen "$l1" >"$work/a1" 2>&1 &
	p1=$!
	if ! wait "$p0" || ! wait "$p1"; then
		echo "rails-bench: alltoall failed:" >&2
		cat "$work/a0" "$work/a1" >&2
		exit 1
	fi
	cpu=$(busy)
	jq -r --arg cpu "$cpu" '"\(.algbw_gbyte_per_s) \($cpu) \([.rails[]?.share] | map(. * 100 | floor) | join("/"))"' "$work/a0"
}

one=() two=() cpu1=() cpu2=()
echo
printf '%-6s %12s %8s %12s %8s %10s\n' alltoall "one(GB/s)" "cpu%" "two(GB/s)" "cpu%" "shares%"
for ((r = 1; r <= rounds; r++)); do
	read -r g1 c1 _ < <(a2a_run 0)
	read -r g2 c2 sh < <(a2a_run 1)
	one+=("$g1") two+=("$g2") cpu1+=("$c1") cpu2+=("$c2")
	printf '%-6s %12.4f %8s %12.4f %8s %10s\n' "$r" "$g1" "$c1" "$g2" "$c2" "$sh"
done
verdict "$(median "${one[@]}")" "$(median "${two[@]}")" "$(median "${cpu1[@]}")" "$(median "${cpu2[@]}")"
echo "(alltoall, 2 ranks, flat: ${A2A_TOKENS:-256} tokens of ${A2A_HIDDEN:-2048} bf16 a rank, top-2, ${A2A_ITERS:-10} iterations; algbw of rank 0; shares% = each rail's part of its bytes)"

# multicast over one rail a rank against two: the root (rank 0) on rxe_a
# (and rxe_c) pushes a pattern of MC_SIZE (default 32M) to one receiver on
# rxe_b (and rxe_d); with two, each rail carries half the blob. The rate is
# the blob's bytes over the total (the last chunk's landing).
mc_port=26500
# mc_run TWO: one run; "GB/s busy% shares%".
mc_run() {
	local d0=$RDMACTL_VM_DEV_A l0=$RDMACTL_VM_ADDR_A:$mc_port d1=$RDMACTL_VM_DEV_B
	local l1=$RDMACTL_VM_ADDR_B:$mc_port p0 p1 cpu
	mc_port=$((mc_port + 1))
	if (($1)); then
		d0+=,$RDMACTL_VM_DEV_C l0+=,$RDMACTL_VM_ADDR_C:$mc_port
		d1+=,$RDMACTL_VM_DEV_D l1+=,$RDMACTL_VM_ADDR_D:$mc_port
	fi
	busy >/dev/null
	"$rdmactl" -j -d "$d0" multicast -w 2 -r 0 -R "etcd://$ETCD_EP/mc$mc_port" --listen "$l0" \
		--pattern random:1 --size "${MC_SIZE:-32M}" >"$work/m0" 2>&1 &
	p0=$!
	"$rdmactl" -j -d "$d1" multicast -w 2 -r 1 -R "etcd://$ETCD_EP/mc$mc_port" --listen "$l1" >"$work/m1" 2>&1 &
	p1=$!
	if ! wait "$p0" || ! wait "$p1"; then
		echo "rails-bench: multicast failed:" >&2
		cat "$work/m0" "$work/m1" >&2
		exit 1
	fi
	cpu=$(busy)
	jq -r --arg cpu "$cpu" '"\(.size_bytes / .seconds / 1e9) \($cpu) \([.rails[]?.share] | map(. * 100 | floor) | join("/"))"' "$work/m0"
}

one=() two=() cpu1=() cpu2=()
echo
printf '%-6s %12s %8s %12s %8s %10s\n' mcast "one(GB/s)" "cpu%" "two(GB/s)" "cpu%" "shares%"
for ((r = 1; r <= rounds; r++)); do
	read -r g1 c1 _ < <(mc_run 0)
	read -r g2 c2 sh < <(mc_run 1)
	one+=("$g1") two+=("$g2") cpu1+=("$c1") cpu2+=("$c2")
	printf '%-6s %12.4f %8s %12.4f %8s %10s\n' "$r" "$g1" "$c1" "$g2" "$c2" "$sh"
done
verdict "$(median "${one[@]}")" "$(median "${two[@]}")" "$(median "${cpu1[@]}")" "$(median "${cpu2[@]}")"
echo "(multicast, root to one receiver: ${MC_SIZE:-32M} of a pattern, 256K chunks; the blob over the last chunk's landing; shares% = each rail's part)"
