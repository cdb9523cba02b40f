#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# kv-migrate.sh: move KV-cache blocks from one server to another with
# rdmactl, jq and sha256sum.
#
# For the inference platform engineer whose orchestrator moves a request's
# KV cache between nodes (prefill to decode, or off a node being drained),
# and who wants to see that choreography as a plain shell script: a source
# server holds a region of fixed-size KV blocks; a destination server, on
# another device, holds a pool of blocks of its own layout (a 4 KiB header,
# then the blocks, some already taken by other requests). The script
#   1. populates the source blocks (one `write --pattern random:SEED
#      --offset` each, sent as one `rdmactl -b FILE` batch) and the
#      destination's taken blocks;
#   2. for each block id to migrate: reads it from the source (`read
#      --offset --size`), writes it into the block the destination's free
#      list gives next, reads that back and compares the sha256 of the
#      two, block by block;
#   3. commits the destination's new block table into its header;
#   4. checks that no other destination block changed, stops both servers.
# Progress goes to stderr; stdout gets one JSON summary with per-block and
# total bytes and times; the exit status is 0 only when every check passed.
#
# Run (where the addresses belong to RDMA devices, e.g. in the SoftRoCE
# guest: tests/vm/run.sh --two-nics -- examples/kv-migrate.sh):
#   examples/kv-migrate.sh [--blocks 1,2,5,6] [--block-size 64K] [OPTIONS]
# Without --src and --dst: with RDMACTL_VM_ADDR_A and RDMACTL_VM_ADDR_B set
# (tests/vm/run.sh --two-nics) the source listens on A and the destination
# on B, and each transfer crosses between the two devices (reads bound to B,
# writes to A); otherwise both listen on one address ($RDMACTL_VM_ADDR, else
# 198.18.0.1) on two ports.
#
# Options:
#   --blocks LIST         source block ids to migrate (default 1,2,5,6)
#   --block-size SIZE     bytes per block, K or M suffix (default 64K)
#   --src-blocks N        blocks in the source region (default 8)
#   --dst-blocks N        blocks in the destination pool (default 12)
#   --dst-used LIST       destination blocks already taken (default 0,1,3)
#   --seed N              source block i holds random:(N+i) (default 1000)
#   --src ADDR[:PORT]     source listen address
#   --dst ADDR[:PORT]     destination listen address
#   --port N              default port: the source's; one address: the
#                         destination gets N+1 (default 7471)
#   --read-bind ADDR      local address to read from the source with
#   --write-bind ADDR     local address to write into the destination with
#   --timeout SECONDS     bound on each step: one rdmactl run, a server's
#                         start or stop (default 30)
#   --keep                keep the work folder (its path is in the summary)
# The binary: $RDMACTL, else ../build/cli/rdmactl next to this script, else
# rdmactl on PATH.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
started=$EPOCHREALTIME

usage() {
	sed -n '/^# Run (/,/^# rdmactl on PATH/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}
log() { printf 'kv-migrate.sh: %s\n' "$*" >&2; }

work='' summary_printed=0
declare -A server_pid=()

# die MESSAGE: fail the run with MESSAGE. It may be called in a command
# substitution's subshell, so the message goes through a file.
die() {
	log "FAILED: $*"
	[[ -z "$work" ]] || printf '%s\n' "$*" >>"$work/errors"
	exit 1
}

usage_err() {
	printf 'kv-migrate.sh: %s (see --help)\n' "$1" >&2
	jq -n --arg e "$1" '{example: "kv-migrate", ok: false, error: $e, exit_status: 2}'
	summary_printed=1
	exit 2
}

# SIZE with an optional K or M suffix, in bytes.
bytes() {
	case "$1" in
	*[kK]) echo $((${1%?} * 1024)) ;;
	*[mM]) echo $((${1%?} * 1048576)) ;;
	*) echo $(($1)) ;;
	esac
}

blocks=1,2,5,6 bs=64K src_blocks=8 dst_blocks=12 dst_used=0,1,3 seed=1000
src='' dst='' port=7471 read_bind='' write_bind='' step=30 keep=0
while (($#)); do
	case "$1" in
	--blocks | --block-size | --src-blocks | --dst-blocks | --dst-used | --seed | --src | --dst | \
		--port | --read-bind | --write-bind | --timeout)
		(($# > 1)) || usage_err "$1 needs a value"
		case "$1" in
		--blocks) blocks=$2 ;;
		--block-size) bs=$2 ;;
		--src-blocks) src_blocks=$2 ;;
		--dst-blocks) dst_blocks=$2 ;;
		--dst-used) dst_used=$2 ;;
		--seed) seed=$2 ;;
		--src) src=$2 ;;
		--dst) dst=$2 ;;
		--port) port=$2 ;;
		--read-bind) read_bind=$2 ;;
		--write-bind) write_bind=$2 ;;
		--timeout) step=$2 ;;
		esac
		shift ;;
	--keep) keep=1 ;;
	-h | --help) usage; exit 0 ;;
	*) usage_err "unknown argument '$1'" ;;
	esac
	shift
done

# --- Check the plan before starting anything ------------------------------
[[ "$bs" =~ ^[1-9][0-9]*[kKmM]?$ ]] || usage_err "--block-size wants bytes with an optional K or M, not '$bs'"
bs=$(bytes "$bs")
((bs % 8 == 0)) || usage_err "--block-size must be a multiple of 8"
for v in "src-blocks:$src_blocks" "dst-blocks:$dst_blocks" "seed:$seed" "port:$port" "timeout:$step"; do
	[[ "${v#*:}" =~ ^[0-9]+$ ]] || usage_err "--${v%%:*} wants a whole number, not '${v#*:}'"
done
((src_blocks > 0 && dst_blocks > 0 && step > 0)) || usage_err "block counts and --timeout must be positive"
[[ "$blocks,$dst_used" =~ ^([0-9]+,)*[0-9]*$ ]] || usage_err "--blocks and --dst-used are comma-separated block ids"
plan=$(jq -n --arg b "$blocks" --arg u "$dst_used" --argjson ns "$src_blocks" --argjson nd "$dst_blocks" '
	def ids: split(",") | map(select(. != "") | tonumber);
	($b | ids) as $blocks | ($u | ids) as $used
	| {blocks: $blocks, used: $used, free: ([range($nd)] - $used)}
	| .error = (if ($blocks | length) == 0 then "--blocks names no block"
		elif ($blocks | unique | length) != ($blocks | length) then "--blocks names a block twice"
		elif any($blocks[]; . >= $ns) then "--blocks: the source has blocks 0 to \($ns - 1)"
		elif any($used[]; . >= $nd) then "--dst-used: the destination has blocks 0 to \($nd - 1)"
		elif (.free | length) < ($blocks | length) then
			"the destination has \(.free | length) free blocks for \($blocks | length)"
		else null end)')
err=$(jq -r '.error // empty' <<<"$plan")
[[ -z "$err" ]] || usage_err "$err"
mapfile -t migrate < <(jq '.blocks[]' <<<"$plan")
mapfile -t used_before < <(jq '.used[]' <<<"$plan")
header=4096 # the destination's block table lives here

# Where the servers listen and where the clients connect from: the guest's
# two devices when it has them and no address was given.
if [[ -z "$src$dst" && -n "${RDMACTL_VM_ADDR_A:-}" && -n "${RDMACTL_VM_ADDR_B:-}" ]]; then
	src=$RDMACTL_VM_ADDR_A:$port
	dst=$RDMACTL_VM_ADDR_B:$port
	read_bind=${read_bind:-$RDMACTL_VM_ADDR_B}
	write_bind=${write_bind:-$RDMACTL_VM_ADDR_A}
else
	src=${src:-${RDMACTL_VM_ADDR:-198.18.0.1}:$port}
	dst=${dst:-${RDMACTL_VM_ADDR:-198.18.0.1}:$((port + 1))}
fi
[[ "$src" =~ (^[^:]+|\])(:[0-9]+)$ ]] || src=$src:$port
[[ "$dst" =~ (^[^:]+|\])(:[0-9]+)$ ]] || dst=$dst:$port
[[ "$src" != "$dst" ]] || usage_err "the source and the destination both listen on $src"
rbind=() wbind=()
[[ -z "$read_bind" ]] || rbind=(--bind "$read_bind")
[[ -z "$write_bind" ]] || wbind=(--bind "$write_bind")

# rdmactl, j() and stop_pid() (examples/lib/common.bash).
# shellcheck source=examples/lib/common.bash
source "$here/lib/common.bash"

# Every way out stops the servers and, on failure, still prints a JSON
# summary saying why (with the blocks done so far).
cleanup() {
	local rc=$? errors='' name done_blocks='[]'
	trap - EXIT
	for name in "${!server_pid[@]}"; do stop_pid "${server_pid[$name]}" 5; done
	if ((rc != 0 && !summary_printed)); then
		if [[ -n "$work" ]]; then
			[[ ! -s "$work/errors" ]] || errors=$(cat "$work/errors")
			[[ ! -s "$work/blocks.jsonl" ]] || done_blocks=$(jq -cs . "$work/blocks.jsonl")
		fi
		# The first error is the cause; any next one says where it surfaced.
		jq -n --arg e "${errors:-exited with status $rc}" --argjson rc "$rc" \
			--argjson finished "$done_blocks" \
			'($e | split("\n") | map(select(. != ""))) as $all
			 | {example: "kv-migrate", ok: false, error: $all[0], errors: $all,
			    blocks_done: $finished, exit_status: $rc}'
	fi
	if [[ -n "$work" ]]; then
		if ((keep)); then log "work folder kept: $work"; else rm -rf -- "$work"; fi
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'die "line $LINENO: $BASH_COMMAND failed"' ERR

work=$(mktemp -d "${TMPDIR:-/tmp}/kv-migrate.XXXXXX")


# reach TARGET [--bind ADDR]: a preflight check that the clients reach
# TARGET before anything moves: an 8-byte read.
reach() {
	local t=$1 out
	shift
	out=$(j read "$t" --size 8 --out "$work/reach" "$@")
	jq -nc --arg t "$t" --arg via "${2:-default}" --argjson r "$out" \
		'{target: $t, bind: $via, device: $r.device}' >>"$work/preflight.jsonl"
}

# serve NAME LISTEN REGION SIZE: a server with one region; its events go to
# $work/NAME.events. Waits (bounded) for the descriptor.
serve() {
	local name=$1 listen=$2 events=$work/$1.events deadline=$((SECONDS + step)) msg
	"$rdmactl" -j register --listen "$listen" --name "$3" --size "$4" \
		>"$events" 2>"$work/$name.err" &
	server_pid[$name]=$!
	until jq -n -e 'any(inputs; .event == "region")' "$events" >/dev/null 2>&1; do
		if ! kill -0 "${server_pid[$name]}" 2>/dev/null; then
			msg=$(jq -r '.error.message // empty' "$events" 2>/dev/null) || msg=
			die "the $name server did not start: ${msg:-$(tail -n 3 "$work/$name.err")}"
		fi
		((SECONDS < deadline)) || die "the $name server printed no descriptor within $step s"
		sleep 0.1
	done
}

# TARGET of the region served by server NAME, from its descriptor alone.
target() {
	jq -r 'select(.event == "region")
		| (.listen.address | if test(":") then "[\(.)]" else . end) as $a
		| "\($a):\(.listen.port)/\(.name)"' "$work/$1.events"
}
# The lines of FILE as a JSON array of strings (none when it does not exist).
device() { jq -r 'select(.event == "region") | .device' "$work/$1.events"; }

sha() { # FILE: its sha256
	local s
	s=$(sha256sum <"$1")
	echo "${s%% *}"
}

# --- 1. Two servers, and what they hold before the migration --------------
log "source on $src, destination on $dst"
serve source "$src" kv-src $((src_blocks * bs))
serve destination "$dst" kv-dst $((header + dst_blocks * bs))
src_t=$(target source) dst_t=$(target destination)
log "source $src_t ($(device source)), destination $dst_t ($(device destination))"
reach "$src_t" "${rbind[@]}"
reach "$dst_t" "${wbind[@]}"

# Populate in one process: a batch, one write per line; -j gives one array.
for ((i = 0; i < src_blocks; i++)); do
	echo "write $src_t --pattern random:$((seed + i)) --offset $((i * bs)) --size $bs"
done >"$work/populate.batch"
for id in "${used_before[@]}"; do
	echo "write $dst_t --pattern random:$((seed + 100000 + id)) --offset $((header + id * bs)) --size $bs"
done >>"$work/populate.batch"
j -b "$work/populate.batch" >"$work/populate.json"
jq -e --argjson n "$(wc -l <"$work/populate.batch")" \
	'length == $n and all(.[]; .output.error == null)' "$work/populate.json" >/dev/null ||
	die "populating failed: $(jq -c '[.[] | select(.output.error) | .output.error.message]' "$work/populate.json")"
log "populated $src_blocks source blocks and ${#used_before[@]} taken destination blocks"

j read "$dst_t" --out "$work/dst.before" >/dev/null

# --- 2. Migrate block by block ---------------------------------------------
alloc=$plan # the destination's allocator state: .used, .free
declare -A moved_to=() # destination block -> source block
for id in "${migrate[@]}"; do
	t0=$EPOCHREALTIME
	to=$(jq '.free[0]' <<<"$alloc")
	moved_to[$to]=$id
	alloc=$(jq -c '.used += [.free[0]] | .free |= .[1:]' <<<"$alloc")
	src_off=$((id * bs)) dst_off=$((header + to * bs))
	r=$(j read "$src_t" --offset "$src_off" --size "$bs" --out "$work/block.$id" "${rbind[@]}")
	w=$(j write "$dst_t" --offset "$dst_off" --file "$work/block.$id" "${wbind[@]}")
	b=$(j read "$dst_t" --offset "$dst_off" --size "$bs" --out "$work/back.$id" "${wbind[@]}")
	want=$(sha "$work/block.$id") got=$(sha "$work/back.$id")
	jq -nc --argjson id "$id" --argjson to "$to" --argjson so "$src_off" --argjson doff "$dst_off" \
		--argjson r "$r" --argjson w "$w" --argjson b "$b" --arg want "$want" --arg got "$got" \
		--argjson t0 "${t0/,/.}" --argjson t1 "${EPOCHREALTIME/,/.}" '
		{src_block: $id, dst_block: $to, src_offset: $so, dst_offset: $doff, bytes: $w.bytes,
		 read_seconds: $r.seconds, write_seconds: $w.seconds, verify_seconds: $b.seconds,
		 wall_seconds: ($t1 - $t0), read_device: $r.device, write_device: $w.device,
		 src_sha256: $want, dst_sha256: $got, match: ($want == $got)}' >>"$work/blocks.jsonl"
	if [[ "$want" == "$got" ]]; then
		log "block $id -> $to: $bs bytes, sha256 matches"
	else
		log "block $id -> $to: sha256 MISMATCH"
	fi
done

# --- 3. Commit the new block table into the destination's header ----------
jq -s --argjson bs "$bs" --argjson alloc "$alloc" \
	'{format: 1, block_size: $bs, used: ($alloc.used | sort), free: $alloc.free,
	  migrated: map({(.dst_block | tostring): .src_block}) | add}' \
	"$work/blocks.jsonl" >"$work/table.json"
table_len=$(stat -c %s "$work/table.json")
((table_len <= header)) || die "the block table does not fit in $header bytes"
j write "$dst_t" --offset 0 --size "$table_len" "${wbind[@]}" <"$work/table.json" >/dev/null

# --- 4. Nothing else changed at the destination; stop the servers ---------
j read "$dst_t" --out "$work/dst.after" >/dev/null
table_ok=false
cmp -s -n "$table_len" "$work/table.json" "$work/dst.after" && table_ok=true
changed=()
for ((k = 0; k < dst_blocks; k++)); do
	[[ -z "${moved_to[$k]:-}" ]] || continue
	off=$((header + k * bs))
	cmp -s -i "$off:$off" -n "$bs" "$work/dst.before" "$work/dst.after" || changed+=("$k")
done
((${#changed[@]} == 0)) || log "destination blocks changed that should not have: ${changed[*]}"

stopped='{}'
for name in source destination; do
	stop_pid "${server_pid[$name]}" "$step"
	unset "server_pid[$name]"
	stopped=$(jq -c --arg n "$name" --argjson rc "$REAPED" \
		--arg last "$(tail -n 1 "$work/$name.events" | jq -r '.event // "none"')" \
		'.[$n] = {exit_status: $rc, stopped_event: ($last == "stopped")}' <<<"$stopped")
done

summary=$(jq -n --slurpfile blocks "$work/blocks.jsonl" \
	--slurpfile src_ev "$work/source.events" --slurpfile dst_ev "$work/destination.events" \
	--argjson bs "$bs" --argjson header "$header" \
	--argjson ns "$src_blocks" --argjson nd "$dst_blocks" --argjson plan "$plan" \
	--argjson alloc "$alloc" --argjson stopped "$stopped" --argjson table_ok "$table_ok" \
	--argjson changed "$(jq -cn '$ARGS.positional | map(tonumber)' --args "${changed[@]}")" \
	--argjson t0 "${started/,/.}" --argjson t1 "${EPOCHREALTIME/,/.}" \
	--slurpfile preflight "$work/preflight.jsonl" \
	--arg work "$work" --argjson keep "$keep" '
	def desc($ev): [$ev[] | select(.event == "region")][0]
		| {listen: "\(.listen.address):\(.listen.port)", device, region: .name, length};
	($blocks | map(.bytes) | add) as $bytes
	| {example: "kv-migrate",
	   mode: (if desc($src_ev).device == desc($dst_ev).device then "one-device" else "two-devices" end),
	   source: (desc($src_ev) + {block_size: $bs, blocks: $ns}),
	   destination: (desc($dst_ev) + {header_bytes: $header, block_size: $bs, blocks: $nd,
	                 used_before: $plan.used, free_before: $plan.free,
	                 used_after: ($alloc.used | sort), free_after: $alloc.free}),
	   blocks: $blocks,
	   total: {blocks: ($blocks | length), bytes: $bytes,
	           transfer_seconds: ($blocks | map(.read_seconds + .write_seconds) | add),
	           wall_seconds: ($blocks | map(.wall_seconds) | add),
	           gbyte_per_s: ($bytes / 1e9 / ($blocks | map(.wall_seconds) | add))},
	   checks: {blocks_match: ($blocks | all(.match)),
	            others_unchanged: ($changed | length == 0), changed_blocks: $changed,
	            table_committed: $table_ok, servers: $stopped},
	   preflight: $preflight,
	   seconds: ($t1 - $t0),
	   work: (if $keep == 1 then $work else null end)}
	| .ok = (.checks.blocks_match and .checks.others_unchanged and .checks.table_committed
	         and (.blocks | length) == ($plan.blocks | length)
	         and ([.checks.servers[] | .exit_status == 0 and .stopped_event] | all))
	| .exit_status = (if .ok then 0 else 1 end)')
summary_printed=1
jq . <<<"$summary"
jq -e .ok <<<"$summary" >/dev/null || { log "FAILED: see the summary"; exit 1; }
log "migrated $(jq .total.blocks <<<"$summary") blocks, all checks passed"
