# shellcheck source=bench/lib.bash
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.bash"
#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The blackout and the total time of a live `rdmactl migrate` of a region of
# tens of MiB, verified against unverified, at a low and a high write rate.
# Run it in the SoftRoCE guest, A and B on the two devices of the veth pair:
#   tests/vm/run.sh --two-nics -- bench/migrate-bench.sh [SIZE]
# or between two devices of a host: RDMACTL_VM_ADDR_A=... RDMACTL_VM_ADDR_B=...
#
# low:  one writer, a 4 KiB `rdmactl write` every 0.5 s into rotating slots;
# high: two writers, each one `rdmactl -b` batch of 16 writes of 1 MiB
#       (--pattern) after another.
# Each rate runs with --no-verify (the blackout is the fence, the final copy
# and the cutover) and verified (B keeps each pulled block aside, digested
# after the cutover, A digests its frozen copy after the cutover: the
# blackout adds only the copy aside of the final copy's blocks;
# rdmactl-migrate(8), Verification), RDMACTL_BENCH_ROUNDS rounds (default 3)
# of both, alternating (unverified first in odd rounds, verified first in
# even ones), RDMACTL_BENCH_RATES ("low high" by default) in each round.
# Writers address the source only and follow the region to the destination;
# a writer's failure is counted and reported.
# Prints one JSON line per run, then on stderr a table of the runs and, per
# rate, the median blackout verified and unverified and their ratio, and
# the low rate's target (verified at most 2x unverified and under 20 ms).
# rxe under TCG moves tens of MB/s: compare figures with each other, not
# with hardware.
set -euo pipefail

size=${1:-32M}
rounds=${RDMACTL_BENCH_ROUNDS:-3}
rates=${RDMACTL_BENCH_RATES:-low high}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "migrate-bench: RDMACTL_BENCH_ROUNDS must be a positive count" >&2; exit 1; }
for rate in $rates; do
	[[ $rate == low || $rate == high ]] || { echo "migrate-bench: RDMACTL_BENCH_RATES: '$rate' is neither low nor high" >&2; exit 1; }
done
addr_a=${RDMACTL_VM_ADDR_A:?run with tests/vm/run.sh --two-nics (RDMACTL_VM_ADDR_A unset)}
addr_b=${RDMACTL_VM_ADDR_B:?RDMACTL_VM_ADDR_B unset}
# shellcheck source=bench/lib.bash
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.bash"
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
	servers+=("$!")
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

# run RATE VERIFY ROUND: one migration between two fresh servers, its JSON
# line on stdout; the servers end with it.
run() {
	local rate=$1 verify=$2 round=$3 w=() args=() out p servers=()
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
	kill "${servers[@]}" 2>/dev/null || true
	for p in "${servers[@]}"; do wait "$p" 2>/dev/null || true; done
	jq -c --arg rate "$rate" --arg verify "$verify" --arg size "$size" --argjson round "$round" \
		--argjson writes "$(wc -l <"$work/writes")" \
		--argjson failed "$(grep -cv '^0$' "$work/writes" || true)" \
		'{round: $round, rate: $rate, verify: ($verify == "yes"), size: $size, blackout_ms, seconds, rounds,
		  bytes_per_round, blocks_per_round, verified, writes: $writes, writes_failed: $failed}' <<<"$out"
}

for ((r = 1; r <= rounds; r++)); do
	for rate in $rates; do
		order=(no yes)
		((r % 2)) || order=(yes no)
		for verify in "${order[@]}"; do
			run "$rate" "$verify" "$r" >>"$work/results"
			tail -n 1 "$work/results" >&2
		done
	done
done
jq -rs '["round", "rate", "verify", "blackout_ms", "seconds", "rounds", "final_copy_bytes", "writes", "failed"],
	(.[] | [.round, .rate, .verify, (.blackout_ms * 1000 | round / 1000), (.seconds * 1000 | round / 1000),
		.rounds, .bytes_per_round[-1], .writes, .writes_failed]) | @tsv' "$work/results" >&2
# Per rate: the medians of each kind and their ratio (verified / unverified).
jq -rs --arg size "$size" "$BENCH_JQ_MEDIAN"'
	def r3: . * 1000 | round / 1000;
	"# \(.[0].size // $size), medians of \([.[] | .round] | max) rounds, verified and unverified alternating",
	(["rate", "blackout_ms_unverified", "blackout_ms_verified", "ratio", "seconds_unverified", "seconds_verified"] | @tsv),
	(group_by(.rate)[] as $g
	 | ([$g[] | select(.verify | not) | .blackout_ms] | median) as $bu
	 | ([$g[] | select(.verify) | .blackout_ms] | median) as $bv
	 | ([$g[] | select(.verify | not) | .seconds] | median) as $su
	 | ([$g[] | select(.verify) | .seconds] | median) as $sv
	 | ([$g[0].rate, ($bu | r3), ($bv | r3), ($bv / $bu * 100 | round / 100), ($su | r3), ($sv | r3)] | @tsv),
	   (if $g[0].rate == "low" then
		"# target (low rate): verified at most 2x unverified and under 20 ms: "
		+ (if $bv <= 2 * $bu and $bv < 20 then "met" else "short" end)
	    else empty end))' "$work/results" >&2
cat "$work/results"
