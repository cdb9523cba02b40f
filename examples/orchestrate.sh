#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# orchestrate.sh: drive an rdmactl region server from a shell script.
#
# For whoever glues rdmactl into a job launcher, a storage agent or a CI
# pipeline, and wants the whole life cycle of a server in one place: start
# `rdmactl -j register` in the background, take its descriptors from its
# stdout (a FIFO read with a bounded wait), fill the region from a file,
# from standard input and from generated patterns, count each step in an
# atomic "generation" counter (--faa 1), announce the last generation with
# `write --imm`, read everything back and check it, then stop the server with
# SIGTERM and check that it said "stopped" and exited 0. A fresh token is
# required by the server (RDMACTL_TOKEN, unless already set) and sent by
# every client. Progress goes to stderr; stdout gets one JSON summary; the
# exit status is 0 only when every check passed.
#
# Run (on a host with an RDMA device owning ADDR, e.g. in the SoftRoCE
# guest: tests/vm/run.sh -- examples/orchestrate.sh):
#   examples/orchestrate.sh [--listen ADDR[:PORT]] [--bind ADDR] [--timeout SECONDS] [--keep]
#
# Options:
#   --listen ADDR[:PORT]  where the server listens (default $RDMACTL_VM_ADDR,
#                         else 198.18.0.1; port 7471)
#   --bind ADDR           local address the clients connect from
#   --timeout SECONDS     bound on each step: one rdmactl run, the server's
#                         start and stop (default 30)
#   --keep                keep the work folder (its path is in the summary)
# The binary: $RDMACTL, else ../build/cli/rdmactl next to this script, else
# rdmactl on PATH.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
started=$EPOCHREALTIME

usage() {
	sed -n '/^# Run (/,/^# rdmactl on PATH/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}
log() { printf 'orchestrate.sh: %s\n' "$*" >&2; }

work='' server_pid='' drain_pid='' summary_printed=0

# die MESSAGE: fail the run with MESSAGE. It may be called in a command
# substitution's subshell, so the message goes through a file.
die() {
	log "FAILED: $*"
	[[ -z "$work" ]] || printf '%s\n' "$*" >>"$work/errors"
	exit 1
}

usage_err() {
	printf 'orchestrate.sh: %s (see --help)\n' "$1" >&2
	jq -n --arg e "$1" '{example: "orchestrate", ok: false, error: $e, exit_status: 2}'
	summary_printed=1
	exit 2
}

listen='' bind=() step=30 keep=0
while (($#)); do
	case "$1" in
	--listen) (($# > 1)) || usage_err "--listen needs ADDR[:PORT]"; listen=$2; shift ;;
	--bind) (($# > 1)) || usage_err "--bind needs an address"; bind=(--bind "$2"); shift ;;
	--timeout) (($# > 1)) || usage_err "--timeout needs seconds"; step=$2; shift ;;
	--keep) keep=1 ;;
	-h | --help) usage; exit 0 ;;
	*) usage_err "unknown argument '$1'" ;;
	esac
	shift
done
[[ "$step" =~ ^[1-9][0-9]*$ ]] || usage_err "--timeout wants whole seconds, not '$step'"
listen=${listen:-${RDMACTL_VM_ADDR:-198.18.0.1}}
# A bare address (IPv4, a name or [IPv6]) gets the default port.
[[ "$listen" =~ (^[^:]+|\])(:[0-9]+)$ ]] || listen=$listen:7471

# rdmactl, j() and stop_pid() (examples/lib/common.bash).
# shellcheck source=examples/lib/common.bash
source "$here/lib/common.bash"

# Every way out stops what we started and, on failure, still prints a JSON
# summary saying why.
cleanup() {
	local rc=$? errors=
	trap - EXIT
	[[ -z "$server_pid" ]] || stop_pid "$server_pid" 5
	[[ -z "$drain_pid" ]] || stop_pid "$drain_pid" 2
	if ((rc != 0 && !summary_printed)); then
		[[ -z "$work" || ! -s "$work/errors" ]] || errors=$(cat "$work/errors")
		# The first error is the cause; any next one says where it surfaced.
		jq -n --arg e "${errors:-exited with status $rc}" --argjson rc "$rc" \
			'($e | split("\n") | map(select(. != ""))) as $all
			 | {example: "orchestrate", ok: false, error: $all[0], errors: $all, exit_status: $rc}'
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

work=$(mktemp -d "${TMPDIR:-/tmp}/orchestrate.XXXXXX")
events=$work/server.events # every JSON line the server printed
: >"$events"

# The server and every client share a token that nobody else knows.
export RDMACTL_TOKEN=${RDMACTL_TOKEN:-$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')}


# --- 1. Start the server; take its descriptors from a FIFO --------------
regions=(data ctr scratch)
mkfifo "$work/server.fifo"
log "starting the server on $listen"
"$rdmactl" -j register --listen "$listen" \
	--name data --size 1M \
	--name ctr --size 4K --access atomic \
	--name scratch --size 1M \
	>"$work/server.fifo" 2>"$work/server.err" &
server_pid=$!
# Opening a FIFO waits for its writer: the server's shell opened it right
# after the fork, before rdmactl even started.
exec 3<"$work/server.fifo"
deadline=$((SECONDS + step)) seen=0
while ((seen < ${#regions[@]})); do
	left=$((deadline - SECONDS))
	((left > 0)) || die "the server printed $seen of ${#regions[@]} descriptors within $step s"
	line='' rc=0
	IFS= read -r -t "$left" -u 3 line || rc=$?
	if ((rc > 128)); then
		continue # timed out: the deadline check above ends it
	elif ((rc)); then
		err=$(jq -r '.error.message // empty' <<<"$line" 2>/dev/null) || err=
		die "the server exited before it was ready: ${err:-$(tail -n 3 "$work/server.err")}"
	fi
	printf '%s\n' "$line" >>"$events"
	case $(jq -r '.event // "error"' <<<"$line") in
	region) seen=$((seen + 1)) ;;
	error) die "the server failed: $(jq -r '.error.message // .' <<<"$line")" ;;
	esac
done
# From here on, a reader keeps the server's stdout flowing into the event
# log, so that the server never blocks on a full pipe.
cat <&3 >>"$events" &
drain_pid=$!
exec 3<&-

# The lines of FILE as a JSON array of strings (none when it does not exist).

# TARGET of region NAME, from its descriptor alone.
target() {
	jq -r --arg n "$1" 'select(.event == "region" and .name == $n)
		| (.listen.address | if test(":") then "[\(.)]" else . end) as $a
		| "\($a):\(.listen.port)/\(.name)"' "$events"
}
data=$(target data) ctr=$(target ctr) scratch=$(target scratch)
log "serving $data, $ctr, $scratch"

# --- 2. Fill the region; each write is one more generation ---------------
# put NAME OFFSET EXPECTED-FILE WRITE-ARGS...: write into data at OFFSET,
# then count it in the generation counter; the bytes are later checked
# against EXPECTED-FILE (made afterwards when it does not exist yet).
put() {
	local name=$1 off=$2 expect=$3 w g
	shift 3
	w=$(j write "$data" --offset "$off" "${bind[@]}" "$@")
	g=$(j atomic "$ctr" --faa 1 "${bind[@]}")
	jq -c --arg name "$name" --arg expect "$expect" --argjson g "$g" \
		'{name: $name, offset, bytes, seconds, device} + (if has("imm") then {imm} else {} end)
		 + {expect: $expect, generation: $g.new, generation_before: $g.old}' <<<"$w" >>"$work/writes.jsonl"
	log "$name: $(jq -r .bytes <<<"$w") bytes at offset $off, generation $(jq -r .new <<<"$g")"
}

head -c 200000 /dev/urandom >"$work/blob.bin"
put blob 0 "$work/blob.bin" --file "$work/blob.bin"

# seq: byte i holds (region offset of i) & 0xff; 256K is a multiple of 256,
# so the expected bytes are 0..255 over and over.
for i in {0..255}; do printf '%b' "\\0$(printf %03o "$i")"; done >"$work/seq.expect"
for i in {1..8}; do cat "$work/seq.expect" "$work/seq.expect" >"$work/seq.tmp"; mv "$work/seq.tmp" "$work/seq.expect"; done
put seq $((256 * 1024)) "$work/seq.expect" --pattern seq --size 64K

# A fixed seed, whose 64 KiB at offset 512K have a known sha256: the check
# below does not rest on the generator agreeing with itself.
seed=7 random_sha256=7d258a6f481c73458a9e66d34d085ebafcad07c890d82814f402f51a7388138e
put random $((512 * 1024)) "$work/random.expect" --pattern "random:$seed" --size 64K

# The manifest goes in through standard input, and its write ends with the
# immediate value of the generation it completes: the server's cue.
next_gen=$(($(jq -s 'map(.generation) | max' "$work/writes.jsonl") + 1))
jq -s --argjson g "$next_gen" '{generation: $g, parts: map({name, offset, bytes})}' \
	"$work/writes.jsonl" >"$work/manifest.json"
manifest_len=$(stat -c %s "$work/manifest.json")
# shellcheck disable=SC2094 # the file is only read: as stdin, and later as the reference
put manifest $((768 * 1024)) "$work/manifest.json" --size "$manifest_len" --imm "$next_gen" \
	<"$work/manifest.json"

# The notification may trail the writer's completion by a moment.
deadline=$((SECONDS + step)) imm_seen=false
while ((SECONDS < deadline)); do
	if jq -n -e --argjson g "$next_gen" 'any(inputs; .event == "imm" and .imm == $g)' "$events" >/dev/null 2>&1; then
		imm_seen=true
		break
	fi
	sleep 0.1
done
$imm_seen || die "the server did not report imm $next_gen within $step s"
log "the server got the notification: imm $next_gen"

# --- 3. Read everything back and check it --------------------------------
# The random pattern depends only on its seed and the offset in the region,
# so a copy written at the same offset of the scratch region is its reference;
# that copy must also have the known sha256 (a write that wrote nothing, or
# at the wrong offset, leaves zeros on both sides).
j write "$scratch" --offset $((512 * 1024)) --pattern "random:$seed" --size 64K "${bind[@]}" >/dev/null
j read "$scratch" --offset $((512 * 1024)) --size 64K --out "$work/random.expect" "${bind[@]}" >/dev/null
got=$(sha256sum <"$work/random.expect") got=${got%% *}
[[ "$got" == "$random_sha256" ]] ||
	die "random:$seed at offset 512K read back with sha256 $got, not the known $random_sha256"

while IFS= read -r -u 4 w; do
	name=$(jq -r .name <<<"$w")
	r=$(j read "$data" --offset "$(jq -r .offset <<<"$w")" --size "$(jq -r .bytes <<<"$w")" \
		--out "$work/$name.back" "${bind[@]}")
	got=$(sha256sum <"$work/$name.back") got=${got%% *}
	want=$(sha256sum <"$(jq -r .expect <<<"$w")") want=${want%% *}
	jq -c --arg got "$got" --arg want "$want" --argjson r "$r" \
		'del(.expect) + {sha256: $got, expected_sha256: $want, verified: ($got == $want),
		  read_seconds: $r.seconds}' <<<"$w" >>"$work/checked.jsonl"
	if [[ "$got" == "$want" ]]; then log "$name: read back, sha256 matches"; else log "$name: MISMATCH"; fi
done 4<"$work/writes.jsonl"

final=$(j atomic "$ctr" --faa 0 "${bind[@]}" | jq .old)
log "generation counter: $final"

# --- 4. Stop the server: SIGTERM, a "stopped" event, exit status 0 -------
log "stopping the server (SIGTERM)"
stop_pid "$server_pid" "$step"
server_rc=$REAPED server_pid=
stop_pid "$drain_pid" 5 # it ends by itself at the end of the server's output
drain_pid=
last_event=$(tail -n 1 "$events" | jq -r '.event // "none"')

summary=$(jq -n \
	--slurpfile ev "$events" --slurpfile writes "$work/checked.jsonl" \
	--arg listen "$listen" --argjson rc "$server_rc" --arg last "$last_event" \
	--argjson final "$final" --argjson imm "$next_gen" --argjson imm_seen "$imm_seen" \
	--argjson t0 "${started/,/.}" --argjson t1 "${EPOCHREALTIME/,/.}" --arg work "$work" \
	--argjson keep "$keep" '
	def count($e): [$ev[] | select(.event == $e)] | length;
	{example: "orchestrate",
	 server: {listen: $listen,
	          device: ([$ev[] | select(.event == "region") | .device] | first),
	          token: ([$ev[] | select(.event == "region") | has("token")] | all),
	          regions: [$ev[] | select(.event == "region") | {name, length, access, addr_hex, rkey_hex}],
	          stopped_event: ($last == "stopped"), exit_status: $rc},
	 writes: $writes,
	 generation: {final: $final, expected: ($writes | length),
	              in_order: ([$writes[] | .generation_before] == [range($writes | length)])},
	 notify: {imm: $imm, received: $imm_seen},
	 events: {connected: count("connected"), disconnected: count("disconnected"),
	          imm: count("imm"), rejected: count("rejected")},
	 seconds: ($t1 - $t0),
	 work: (if $keep == 1 then $work else null end)}
	| .ok = (.server.exit_status == 0 and .server.stopped_event
	         and (.writes | length) == 4 and (.writes | all(.verified))
	         and .generation.final == .generation.expected and .generation.in_order
	         and .notify.received and .events.rejected == 0
	         and .events.connected == .events.disconnected)
	| .exit_status = (if .ok then 0 else 1 end)')
summary_printed=1
jq . <<<"$summary"
jq -e .ok <<<"$summary" >/dev/null || { log "FAILED: see the summary"; exit 1; }
log "all checks passed"
