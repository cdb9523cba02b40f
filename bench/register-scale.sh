#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# How a register server holds many clients: for each N (NS, default "256
# 512 1024") one server with --max-conns N and one process holding N
# connections to it (tests/rxe/foreign_client, as N client hosts would),
# each of which writes 64 bytes of its own and, once all have, reads them
# back and compares. Per N: the seconds until all N were verified, and what
# the server holds with N clients: descriptors, resident memory, and the
# same figures with none. Run it inside the SoftRoCE guest:
#   tests/vm/run.sh --mem 4G -- bench/register-scale.sh
# The client process holds three descriptors a connection (librdmacm's
# synchronous mode): the script raises its own limit for it.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
bench_setup register-scale "$@"
client=${FOREIGN_CLIENT:-$(dirname -- "$rdmactl")/../tests/rxe/foreign_client}
[[ -x $client ]] || { echo "register-scale: no foreign_client at $client: build the tests" >&2; exit 1; }
ulimit -n 16384 || { echo "register-scale: cannot raise the descriptor limit" >&2; exit 1; }
port=27000

# fds PID, rss PID: what the process holds now.
fds() { find "/proc/$1/fd" -mindepth 1 | wc -l; }
rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

printf '%6s %9s %8s %8s %9s %9s\n' clients verified fds fds "RSS MiB" "RSS MiB"
printf '%6s %9s %8s %8s %9s %9s\n' "" s idle busy idle busy
for n in ${NS:-256 512 1024}; do
	port=$((port + 1))
	"$rdmactl" -j register --listen "$addr:$port" --name kv --size $((n * 64)) --max-conns "$n" \
		>"$work/server.out" 2>"$work/server.err" &
	server=$!
	pids=("$server")
	for ((i = 0; i < 100; i++)); do
		grep -q '"event":"region"' "$work/server.out" && break
		sleep 0.1
	done
	d=$(jq -c 'select(.event == "region")' "$work/server.out")
	idle_fds=$(fds "$server")
	idle_rss=$(rss "$server")
	rm -f "$work/client.out"
	t0=$(date +%s.%N)
	FOREIGN_CLIENT_CONNS=$n FOREIGN_CLIENT_OWN=1 FOREIGN_CLIENT_HOLD=600 "$client" write "$addr" "$port" \
		"$(jq -r .addr <<<"$d")" "$(jq -r .rkey <<<"$d")" 0 64 >"$work/client.out" 2>&1 &
	pids+=("$!")
	for ((i = 0; i < 6000; i++)); do
		grep -qs '^verified=' "$work/client.out" && break
		kill -0 "${pids[1]}" 2>/dev/null || break
		sleep 0.1
	done
	t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	if ! grep -qx "verified=$n" "$work/client.out"; then
		echo "register-scale: $n clients: not all verified:" >&2
		tail -3 "$work/client.out" >&2
		exit 1
	fi
	printf '%6d %9s %8d %8d %9s %9s\n' "$n" "$t" "$idle_fds" "$(fds "$server")" "$idle_rss" "$(rss "$server")"
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	pids=()
done
