#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# multicast's time to 7 receivers for flat, chain and tree, against the time
# to one receiver, and the first-chunk time of the last receiver (when the
# slowest replica could start); then, for each digest, the time to one
# receiver against a plain `rdmactl write` of the same blob (the same size,
# from the same pattern) into a `register` server, and their ratio: what
# multicast costs over the one-sided write it is made of (issue #29: within
# 1.25x). Run it inside the SoftRoCE guest:
#   tests/vm/run.sh -- bench/multicast-bench.sh
#   tests/vm/run.sh --two-nics -- bench/multicast-bench.sh   (receivers on both devices)
# or on a host with an RDMA device: bench/multicast-bench.sh ADDR DEVICE GID_INDEX
#
# The target on separate links: chain or tree within 1.5x the one-receiver
# time where flat takes about 7x. In one guest every rank shares the same
# emulated device and two CPUs, so every algorithm moves 7 copies through
# the same place; read the ratios with that in mind.
# Environment: SIZE (default 16M), CHUNK (auto), RING (16), RUNS (1),
# DIGESTS ("xxh64 sha256": multicast's --digest for the rows against write;
# "-" gives none, the binary's default, for an rdmactl without --digest).
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
bench_setup multicast-bench "$@"
size=${SIZE:-16M}
chunk=${CHUNK:-auto}
ring=${RING:-16}
port=25000
addrs=("$addr")
[[ -z ${RDMACTL_VM_ADDR_A:-} || $# -gt 0 ]] || addrs=("$RDMACTL_VM_ADDR_A" "$RDMACTL_VM_ADDR_B")

# mc N ALGO [DIGEST]: the root and N-1 receivers; the root's document on stdout.
mc() {
	local n=$1 algo=$2 r bad=0 dg=()
	[[ ${3:--} == - ]] || dg=(--digest "$3")
	port=$((port + 16))
	for ((r = 0; r < n; r++)); do
		echo "$r ${addrs[r * ${#addrs[@]} / n]}:$((port + r))"
	done >"$work/peers"
	pids=(${server:+"$server"})
	for ((r = 1; r < n; r++)); do
		"$rdmactl" -t 60000 multicast -r $r -w "$n" -R "file:$work/peers" --algo "$algo" \
			--chunk "$chunk" --ring "$ring" "${dg[@]}" 2>"$work/e$r" &
		pids+=("$!")
	done
	"$rdmactl" -j -t 60000 multicast -r 0 -w "$n" -R "file:$work/peers" --algo "$algo" \
		--chunk "$chunk" --ring "$ring" "${dg[@]}" --pattern random:1 --size "$size" \
		>"$work/r0" 2>"$work/e0" || bad=1
	for p in "${pids[@]}"; do [[ $p == "${server:-}" ]] || wait "$p" || bad=1; done
	pids=(${server:+"$server"})
	if ((bad)); then
		echo "multicast-bench: $n ranks $algo failed:" >&2
		cat "$work/r0" "$work"/e* >&2
		exit 1
	fi
	cat "$work/r0"
}

row() {
	jq -r --argjson one "$1" '[.algo, (.ranks - 1), .chunk_bytes / 1024, .seconds, .seconds / $one,
		([.receivers[].first_chunk_ms] | max), .ideal_seconds, .ratio, .link_gbyte_per_s * 1e3]
		| @tsv' | awk -F'\t' '{ printf "%-6s %9s %8s %9.3f %10.2f %14.1f %9.3f %9.2f %9.1f\n",
			$1, $2, $3, $4, $5, $6, $7, $8, $9 }'
}

printf '%-6s %9s %8s %9s %10s %14s %9s %9s %9s\n' algo receivers "chunk(K)" "time(s)" "vs_one" \
	"last_first(ms)" "ideal(s)" "vs_ideal" "link(MB/s)"
for ((i = 0; i < ${RUNS:-1}; i++)); do
	doc=$(mc 2 chain)
	one=$(jq .seconds <<<"$doc")
	row "$one" <<<"$doc" | sed 's/^chain /one   /'
	for algo in flat chain tree; do
		mc 8 "$algo" | row "$one"
	done
done
echo "($size from a pattern in chunks of $chunk (chunk(K): as the root cut it), rings of $ring chunks, multicast's default digest;"
echo " vs_one = time over the one-receiver time; last_first = the latest first chunk of any receiver,"
echo " on its own clock; ${#addrs[@]} device(s): ${addrs[*]})"

# The same blob written once into a register server on the receiver's
# address: the seconds of the transfer, as multicast's are (from the start
# to the last byte landed, connection set-up left out). The server runs for
# its write only: the multicast beside it shares the guest's CPUs with no one.
wport=$((port + 1000))
waddr=${addrs[${#addrs[@]} - 1]}
write_once() {
	local w
	wport=$((wport + 1))
	"$rdmactl" -j register --listen "$waddr:$wport" --name mcw --size "$size" >"$work/server" 2>&1 &
	server=$!
	pids+=("$server")
	await_region "$work/server"
	w=$("$rdmactl" -j -t 60000 write "$waddr:$wport/mcw" --pattern random:1 --size "$size" |
		jq -e .seconds) || { echo "multicast-bench: the write failed" >&2; exit 1; }
	kill "$server"
	wait "$server" || true
	echo "$w"
}

echo
printf '%-7s %8s %12s %10s %10s\n' digest "chunk(K)" "one(s)" "write(s)" one/write
for ((i = 0; i < ${RUNS:-1}; i++)); do
	for d in ${DIGESTS:-xxh64 sha256}; do
		mc 2 chain "$d" >"$work/one"
		one=$(jq .seconds "$work/one")
		write_once >"$work/w"
		w=$(cat "$work/w")
		awk -v d="$d" -v c="$(jq '.chunk_bytes / 1024' "$work/one")" -v o="$one" -v w="$w" \
			'BEGIN { printf "%-7s %8s %12.3f %10.3f %10.2f\n", d, c, o, w, o / w }'
	done
done
echo "(one = multicast to one receiver, write = rdmactl write of the same $size into a register"
echo " server on $waddr; one/write the ratio; -: the binary's default digest)"
