#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# kv-live-migrate.sh: drain a KV-cache server onto another node with
# `rdmactl migrate`, in two steps an orchestrator would script: first the
# blocks of one urgent request (a block list, JSON, moved and verified),
# then the whole region live while a decode loop keeps appending tokens.
#
# For the inference platform engineer who drains a decode node for
# maintenance: the source serves a region of KV blocks; the destination,
# on another device, serves an empty region of the same name, size and
# access. The script
#   1. starts both servers, fills the source's blocks (one batch of
#      `write --pattern random:SEED --offset`);
#   2. moves the urgent request's blocks as a JSON block list
#      (`migrate --blocks -`), and checks `verified`;
#   3. starts a "decode loop" that appends one 4 KiB token slot at a time
#      to the source, then moves the region live (`migrate`, no --blocks):
#      the loop's writes follow the region to the destination on their own;
#   4. stops the loop and checks that the destination holds every slot
#      the loop wrote (read back, sha256 per slot), and that a read
#      addressed to the source is now answered by the destination.
# Progress goes to stderr; stdout gets one JSON summary (rounds, bytes per
# round, blackout, the digests, the loop's writes); exit status 0 only when
# every check passed.
#
# Run (two RDMA devices, e.g. in the SoftRoCE guest):
#   tests/vm/run.sh --two-nics -- examples/kv-live-migrate.sh [OPTIONS]
# Options:
#   --blocks N            KV blocks in the region (default 64)
#   --block-size SIZE     bytes per block, K or M suffix (default 256K)
#   --urgent LIST         block ids of the urgent request (default 3,4,9)
#   --src ADDR[:PORT]     source (default $RDMACTL_VM_ADDR_A:7480)
#   --dst ADDR[:PORT]     destination (default $RDMACTL_VM_ADDR_B:7480)
#   --timeout SECONDS     bound on each step (default 60)
# The binary: $RDMACTL, else ../build/cli/rdmactl next to this script, else
# rdmactl on PATH.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

usage() { sed -n '/^# Run (/,/^# rdmactl on PATH/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
log() { printf 'kv-live-migrate.sh: %s\n' "$*" >&2; }
work='' summary_printed=0
declare -A server_pid=()
die() {
	log "FAILED: $*"
	[[ -z "$work" ]] || printf '%s\n' "$*" >>"$work/errors"
	exit 1
}
usage_err() {
	printf 'kv-live-migrate.sh: %s (see --help)\n' "$1" >&2
	jq -n --arg e "$1" '{example: "kv-live-migrate", ok: false, error: $e, exit_status: 2}'
	summary_printed=1
	exit 2
}
bytes() {
	case "$1" in
	*[kK]) echo $((${1%?} * 1024)) ;;
	*[mM]) echo $((${1%?} * 1048576)) ;;
	*) echo $(($1)) ;;
	esac
}

nblocks=64 bs=256K urgent=3,4,9 src='' dst='' step=60
while (($#)); do
	case "$1" in
	--blocks | --block-size | --urgent | --src | --dst | --timeout)
		(($# > 1)) || usage_err "$1 needs a value"
		case "$1" in
		--blocks) nblocks=$2 ;;
		--block-size) bs=$2 ;;
		--urgent) urgent=$2 ;;
		--src) src=$2 ;;
		--dst) dst=$2 ;;
		--timeout) step=$2 ;;
		esac
		shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage_err "unknown argument '$1'" ;;
	esac
	shift
done
[[ "$bs" =~ ^[1-9][0-9]*[kKmM]?$ ]] || usage_err "--block-size wants bytes with an optional K or M, not '$bs'"
bs=$(bytes "$bs")
((bs % 4096 == 0)) || usage_err "--block-size must be a multiple of 4K"
[[ "$nblocks" =~ ^[1-9][0-9]*$ && "$step" =~ ^[1-9][0-9]*$ ]] || usage_err "--blocks and --timeout want positive whole numbers"
[[ "$urgent" =~ ^[0-9]+(,[0-9]+)*$ ]] || usage_err "--urgent is a comma-separated list of block ids"
for id in ${urgent//,/ }; do ((id < nblocks)) || usage_err "--urgent: the region has blocks 0 to $((nblocks - 1))"; done
if [[ -z "$src" || -z "$dst" ]]; then
	[[ -n "${RDMACTL_VM_ADDR_A:-}" && -n "${RDMACTL_VM_ADDR_B:-}" ]] ||
		usage_err "give --src and --dst, or run in the two-device guest (tests/vm/run.sh --two-nics)"
	src=${src:-$RDMACTL_VM_ADDR_A:7480}
	dst=${dst:-$RDMACTL_VM_ADDR_B:7480}
fi
[[ "$src" != "$dst" ]] || usage_err "the source and the destination are the same"

# shellcheck source=examples/lib/common.bash
source "$here/lib/common.bash"

cleanup() {
	local rc=$? name errors=''
	trap - EXIT
	[[ -z "$work" ]] || touch "$work/stop"
	[[ -z "${loop_pid:-}" ]] || kill "$loop_pid" 2>/dev/null || true
	for name in "${!server_pid[@]}"; do stop_pid "${server_pid[$name]}" 5; done
	if ((rc != 0 && !summary_printed)); then
		[[ -z "$work" || ! -s "$work/errors" ]] || errors=$(head -n 1 "$work/errors")
		jq -n --arg e "${errors:-exited with status $rc}" --argjson rc "$rc" \
			'{example: "kv-live-migrate", ok: false, error: $e, exit_status: $rc}'
	fi
	[[ -z "$work" ]] || rm -rf -- "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
work=$(mktemp -d "${TMPDIR:-/tmp}/kv-live-migrate.XXXXXX")
# The servers' admin token, which migrate presents: the migration steps
# need it (a region's token grants its data alone). Kept in a file, off argv.
admin=$work/admin.token
(umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$admin")

serve() { # NAME LISTEN
	local events=$work/$1.events deadline=$((SECONDS + step))
	"$rdmactl" -j register --admin-token-file "$admin" --listen "$2" --name kv --size $((nblocks * bs)) >"$events" 2>"$work/$1.err" &
	server_pid[$1]=$!
	until jq -n -e 'any(inputs; .event == "region")' "$events" >/dev/null 2>&1; do
		kill -0 "${server_pid[$1]}" 2>/dev/null || die "the $1 server did not start: $(tail -n 2 "$work/$1.err")"
		((SECONDS < deadline)) || die "the $1 server printed no descriptor within $step s"
		sleep 0.1
	done
}
target() {
	jq -r 'select(.event == "region") | (.listen.address | if test(":") then "[\(.)]" else . end) as $a
		| "\($a):\(.listen.port)/\(.name)"' "$work/$1.events"
}

# --- 1. Two servers; the source's blocks filled ---------------------------
serve source "$src"
serve destination "$dst"
src_t=$(target source) dst_t=$(target destination)
log "source $src_t, destination $dst_t"
for ((i = 0; i < nblocks; i++)); do
	echo "write $src_t --pattern random:$((1000 + i)) --offset $((i * bs)) --size $bs"
done >"$work/fill.batch"
j -b "$work/fill.batch" | jq -e 'all(.[]; .output.error == null)' >/dev/null || die "filling the source failed"

# --- 2. The urgent request's blocks, as a JSON block list ------------------
jq -n --arg ids "$urgent" --argjson bs "$bs" \
	'{blocks: ($ids | split(",") | map(tonumber) | map({offset: (. * $bs), length: $bs}))}' >"$work/urgent.json"
blocks_out=$(j migrate --admin-token-file "$admin" "$src_t" "$dst_t" --blocks "$work/urgent.json")
jq -e '.verified' <<<"$blocks_out" >/dev/null || die "the urgent blocks differ at the destination"
log "urgent blocks $urgent: $(jq .bytes <<<"$blocks_out") bytes, verified"

# --- 3. A decode loop appends token slots while the region moves live -----
slot=4096
decode_loop() {
	local n=0 st
	while [[ ! -e $work/stop ]]; do
		{ printf 'token %08d\n' "$n"; head -c $((slot - 15)) /dev/zero; } >"$work/tok.$n"
		st=0
		"$rdmactl" write "$src_t" --offset $(((n % (nblocks * bs / slot)) * slot)) --file "$work/tok.$n" \
			>/dev/null 2>>"$work/loop.err" || st=$?
		echo "$n $st" >>"$work/loop.log"
		n=$((n + 1))
	done
}
decode_loop &
loop_pid=$!
sleep 1
live_out=$(j migrate --admin-token-file "$admin" "$src_t" "$dst_t" --dirty 64K)
sleep 1
touch "$work/stop"
wait "$loop_pid"
log "moved live in $(jq .rounds <<<"$live_out") rounds, blackout $(jq .blackout_ms <<<"$live_out") ms"

# --- 4. Every slot the loop wrote is at the destination -------------------
j read "$dst_t" --out "$work/dst" >/dev/null
declare -A last=()
while read -r n st; do
	((st == 0)) || continue
	last[$((n % (nblocks * bs / slot)))]=$n
done <"$work/loop.log"
bad=0
for s in "${!last[@]}"; do
	cmp -s -n "$slot" -i "0:$((s * slot))" "$work/tok.${last[$s]}" "$work/dst" || bad=$((bad + 1))
done
failed=$(awk '$2 != 0' "$work/loop.log" | wc -l)
via_src=$(j read "$src_t" --size 8 --out "$work/via" | jq -r .peer)

summary_printed=1
jq -n --argjson blocks "$blocks_out" --argjson live "$live_out" --argjson writes "$(wc -l <"$work/loop.log")" \
	--argjson failed "$failed" --argjson bad "$bad" --arg via "$via_src" --arg dst "$dst" '
	{example: "kv-live-migrate",
	 urgent: {bytes: $blocks.bytes, verified: $blocks.verified, sha256: $blocks.sha256_dst},
	 live: ($live | {rounds, bytes_per_round, blocks_per_round, blackout_ms, seconds, sha256_src, sha256_dst, verified}),
	 decode_loop: {writes: $writes, failed: $failed, slots_wrong_at_destination: $bad},
	 read_via_source_answered_by: $via}
	| .ok = (.urgent.verified and .live.verified and $failed == 0 and $bad == 0 and ($via | startswith($dst)))
	| .exit_status = (if .ok then 0 else 1 end)' | tee "$work/summary"
jq -e .ok "$work/summary" >/dev/null || { log "FAILED: see the summary"; exit 1; }
log "all checks passed"
