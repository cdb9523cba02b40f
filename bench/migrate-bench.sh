#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The blackout and the total time of a live `rdmactl migrate` of a region of
# tens of MiB, at a low and a high write rate. Run it in the SoftRoCE guest,
# A and B on the two devices of the veth pair:
#   tests/vm/run.sh --two-nics -- bench/migrate-bench.sh [SIZE]
# or between two devices of a host: RDMACTL_VM_ADDR_A=... RDMACTL_VM_ADDR_B=...
#
# low:  one writer, a 4 KiB `rdmactl write` every 0.5 s into rotating slots;
# high: two writers, each one `rdmactl -b` batch of 16 writes of 1 MiB
#       (--pattern) after another.
# Each rate runs twice: with --no-verify (the blackout is the fence, the
# final copy and the cutover) and verified (B digests each block as it
# lands, A its frozen copy after the cutover: the blackout adds only the
# copy aside of the final copy's blocks; rdmactl-migrate(8), Verification). Writers address the source only and follow
# the region to the destination; a writer's failure is counted and reported.
# Prints one JSON line per run and a table on stderr. rxe under TCG moves
# tens of MB/s: compare figures with each other, not with hardware.
set -euo pipefail

size=${1:-32M}
addr_a=${RDMACTL_VM_ADDR_A:?run with tests/vm/run.sh --two-nics (RDMACTL_VM_ADDR_A unset)}
addr_b=${RDMACTL_VM_ADDR_B:?RDMACTL_VM_ADDR_B unset}
rdmactl=${RDMACTL:-$(dirname -- "${BASH_SOURCE[0]}")/../build/cli/rdmactl}
command -v jq >/dev/null || { echo "migrate-bench: jq is missing" >&2; exit 1; }
work=$(mktemp -d)
# The servers' admin token (migration steps need it), in a file off argv.
admin=$work/admin.token
(umask 077 && echo "bench-$$-$RANDOM$RANDOM" >"$admin")
pids=()
cleanup() {
	touch "$work/stop" # the writers end after their current write
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	sleep 1
	rm -rf -- "$work"
}
trap cleanup EXIT
port=7700

# serve ADDR: a register server with region kv of $size; waits for it.
serve() {
	local out=$work/server.$port i
	"$rdmactl" -j register --admin-token-file "$admin" --listen "$1:$port" --name kv --size "$size" >"$out" 2>&1 &
	pids+=("$!")
	for ((i = 0; i < 300; i++)); do
		grep -q '"event":"region"' "$out" && return 0
		sleep 0.1
	done
	echo "migrate-bench: the server on $1:$port did not start" >&2
	cat "$out" >&2
	exit 1
}

# writer KIND TARGET ID: writes until $work/stop exists; one line per write
# (its exit status) in $work/writes.
writer() {
	local kind=$1 t=$2 id=$3 n=0 st
	while [[ ! -e $work/stop ]]; do
		st=0
		if [[ $kind == low ]]; then
			"$rdmactl" write "$t" --pattern "random:$n" --offset $(((n % 64) * 65536)) --size 4K \
				>/dev/null 2>>"$work/writer.err" || st=$?
			sleep 0.5
		else
			# One process, 16 writes of 1 MiB: no process start between them.
			for ((k = 0; k < 16; k++)); do
				echo "write $t --pattern random:$((n + k)) --offset $((((n + k) * 2 + id) % 16 * 1048576)) --size 1M"
			done >"$work/batch.$id"
			"$rdmactl" -b "$work/batch.$id" >/dev/null 2>>"$work/writer.err" || st=$?
			for ((k = 0; k < 15; k++)); do echo "$st" >>"$work/writes"; done
			n=$((n + 15))
		fi
		echo "$st" >>"$work/writes"
		n=$((n + 1))
	done
}

run() {
	local rate=$1 verify=$2 w=() args=() out p
	port=$((port + 2))
	rm -f "$work/stop" "$work/writes"
	serve "$addr_a"
	local src=$addr_a:$port/kv
	port=$((port + 1))
	serve "$addr_b"
	local dst=$addr_b:$port/kv
	"$rdmactl" write "$src" --pattern random:7 --size "$size" >/dev/null
	writer "$rate" "$src" 0 &
	w+=("$!")
	if [[ $rate == high ]]; then
		writer high "$src" 1 &
		w+=("$!")
	fi
	pids+=("${w[@]}")
	sleep 2
	[[ $verify == yes ]] || args+=(--no-verify)
	if ! out=$("$rdmactl" -j migrate --admin-token-file "$admin" "$src" "$dst" --dirty 64K "${args[@]}"); then
		echo "migrate-bench: the $rate-rate migration failed: $out" >&2
		touch "$work/stop"
		for p in "${w[@]}"; do wait "$p"; done
		exit 1
	fi
	sleep 1
	touch "$work/stop"
	for p in "${w[@]}"; do wait "$p"; done
	jq -c --arg rate "$rate" --arg verify "$verify" --arg size "$size" \
		--argjson writes "$(wc -l <"$work/writes")" \
		--argjson failed "$(grep -cv '^0$' "$work/writes" || true)" \
		'{rate: $rate, verify: ($verify == "yes"), size: $size, blackout_ms, seconds, rounds,
		  bytes_per_round, blocks_per_round, verified, writes: $writes, writes_failed: $failed}' <<<"$out"
}

for rate in low high; do
	for verify in no yes; do
		run "$rate" "$verify" >>"$work/results"
		tail -n 1 "$work/results" >&2
	done
done
jq -rs '["rate", "verify", "blackout_ms", "seconds", "rounds", "writes", "failed"],
	(.[] | [.rate, .verify, (.blackout_ms * 1000 | round / 1000), (.seconds * 1000 | round / 1000),
		.rounds, .writes, .writes_failed]) | @tsv' "$work/results" >&2
cat "$work/results"
