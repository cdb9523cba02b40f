#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The main job, end to end: serve a region with `register`, write a file
# into it with `write`, read it back with `read`, verify, print JSON.
# examples/demo.sh runs this inside the guest on a machine without RDMA.
#
# Usage: examples/roundtrip.sh [ADDR]
#   ADDR        a local address on an RDMA device (default: the SoftRoCE
#               guest's, $RDMACTL_VM_ADDR, or the first active RoCE port's
#               that probe-topology finds)
#   -h, --help  this text
# $RDMACTL_DEMO_SIZE (default 8M) and $RDMACTL_DEMO_PORT (default 7471) set
# the region's size and port. Prints one JSON summary on stdout; exits 0
# when the data came back verified, 1 on a failure, 2 on a usage error.
set -euo pipefail

case ${1:-} in
-h | --help)
	sed -n '/^# Usage/,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
-*) echo "roundtrip: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
(($# <= 1)) || { echo "roundtrip: one ADDR at most (see --help)" >&2; exit 2; }

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
rdmactl=${RDMACTL:-$here/../build/cli/rdmactl}
size=${RDMACTL_DEMO_SIZE:-8M}
port=${RDMACTL_DEMO_PORT:-7471}
work=$(mktemp -d)
server=

cleanup() {
	[ -z "$server" ] || kill "$server" 2>/dev/null || true
	rm -rf -- "$work"
}
trap cleanup EXIT

addr=${1:-${RDMACTL_VM_ADDR:-}}
if [ -z "$addr" ]; then
	addr=$("$rdmactl" -j probe-topology |
		jq -r '[.devices[].ports[] | select(.state == "ACTIVE") | .addresses[]
			| select(test("^[0-9.]+/"))][0] // empty | sub("/.*"; "")')
fi
[ -n "$addr" ] || { echo "roundtrip: no active RDMA port with an IPv4 address; give ADDR" >&2; exit 1; }

# 1. Serve a region; its descriptor is the first line the server prints.
"$rdmactl" -j register --listen "$addr:$port" --name demo --size "$size" >"$work/server.json" &
server=$!
for _ in $(seq 100); do
	[ -s "$work/server.json" ] && break
	kill -0 "$server" 2>/dev/null || { echo "roundtrip: the server did not start" >&2; exit 1; }
	sleep 0.1
done
descriptor=$(head -n 1 "$work/server.json")
[ "$(jq -r .event <<<"$descriptor")" = region ] || { echo "roundtrip: no descriptor" >&2; exit 1; }

# 2. Write a file of random bytes into it, 3. read it back, 4. verify.
head -c "$(( $(jq -r .length <<<"$descriptor") ))" /dev/urandom >"$work/in"
target="$addr:$port/demo"
written=$("$rdmactl" -j write "$target" --file "$work/in")
read_back=$("$rdmactl" -j read "$target" --out "$work/out")
sum_in=$(sha256sum <"$work/in" | cut -d' ' -f1)
sum_out=$(sha256sum <"$work/out" | cut -d' ' -f1)

kill -TERM "$server"
wait "$server"
server=

jq -n --argjson region "$descriptor" --argjson write "$written" --argjson read "$read_back" \
	--arg in "$sum_in" --arg out "$sum_out" '{
	region: ($region | {name, addr, rkey, length, access, device, gid, listen}),
	write: ($write | {bytes, seconds: (.seconds * 1e4 | round / 1e4),
		gbyte_per_s: (.gbyte_per_s * 1e3 | round / 1e3)}),
	read: ($read | {bytes, seconds: (.seconds * 1e4 | round / 1e4),
		gbyte_per_s: (.gbyte_per_s * 1e3 | round / 1e3)}),
	sha256: $in,
	verified: ($in == $out)
}' | tee "$work/result.json"
[ "$sum_in" = "$sum_out" ]
