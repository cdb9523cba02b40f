#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# For the inference platform engineer scaling out a model: push a model's
# weights from one node to new replicas with `rdmactl multicast`, each
# replica writing its copy as the chunks arrive, read the root's JSON, and
# say when every replica could start computing on its first layer and when
# it had them all, against the ideal of the algorithm.
#
# Usage: examples/push-weights.sh [OPTIONS]
#   --replicas N     new replicas to fill (default 3)
#   --weights FILE   the weights to push (default: a made-up model of
#                    --layers layers of --layer-size bytes)
#   --layers N       layers of the made-up model (default 8)
#   --layer-size S   bytes per layer (default 256K)
#   --algo ALGO      flat, chain or tree (default tree)
#   --chunk S        bytes per write (default 64K)
#   --addr ADDR      the RDMA address every rank listens on (default
#                    $RDMACTL_VM_ADDR, else 198.18.0.1); --addr-b ADDR puts
#                    every other replica on a second device
# Prints one JSON summary on stdout; exits 0 when every replica holds the
# weights byte for byte, 1 on a failure, 2 on a usage error. In the
# SoftRoCE guest:
#   tests/vm/run.sh -- examples/push-weights.sh --replicas 3
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
usage_err() { echo "push-weights: $*" >&2; exit 2; }
summary_fail() {
	jq -n --arg e "$1" --slurpfile doc <(cat "${work:-/nonexistent}/doc" 2>/dev/null || true) \
		'{ok: false, error: $e, report: ($doc[0] // null)}'
	exit 1
}
die() { summary_fail "$*"; }
step=120
work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf -- "$work"
}
trap cleanup EXIT
# shellcheck source=examples/lib/common.bash
. "$here/lib/common.bash"

replicas=3 weights= layers=8 layer_size=256K algo=tree chunk=64K
addr=${RDMACTL_VM_ADDR:-198.18.0.1} addr_b=
while (($#)); do
	case $1 in
	--replicas) replicas=${2:?}; shift 2 ;;
	--weights) weights=${2:?}; shift 2 ;;
	--layers) layers=${2:?}; shift 2 ;;
	--layer-size) layer_size=${2:?}; shift 2 ;;
	--algo) algo=${2:?}; shift 2 ;;
	--chunk) chunk=${2:?}; shift 2 ;;
	--addr) addr=${2:?}; shift 2 ;;
	--addr-b) addr_b=${2:?}; shift 2 ;;
	-h | --help) sed -n '/^# Usage/,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) usage_err "unknown option '$1' (see --help)" ;;
	esac
done
[[ $replicas =~ ^[0-9]+$ ]] && ((replicas >= 1 && replicas < 64)) ||
	usage_err "--replicas wants a number from 1 to 63"
[[ $layers =~ ^[0-9]+$ ]] && ((layers >= 1 && layers <= 100)) ||
	usage_err "--layers wants a number from 1 to 100"

# The weights: the given file, or layers of random bytes. Each layer is a
# block the replicas report as usable when its last byte is in.
blocks=
if [[ -n $weights ]]; then
	[[ -r $weights && -f $weights ]] || usage_err "cannot read --weights $weights"
else
	weights=$work/model.bin
	bytes=$(numfmt --from=iec "$layer_size") || usage_err "--layer-size $layer_size is not a size"
	head -c $((bytes * layers)) /dev/urandom >"$weights"
	blocks=$(printf "$layer_size%.0s," $(seq "$layers")); blocks=${blocks%,}
fi
want=$(sha256sum <"$weights" | cut -d' ' -f1)
# The root's digest (XXH64, multicast's default) of the weights, as xxhsum
# gives it where xxhash is installed; without it, the replicas checked byte
# for byte below and every receiver's digest equal to the root's say as much.
root_want=
if command -v xxhsum >/dev/null; then root_want=$(xxhsum -H1 <"$weights" | cut -d' ' -f1); fi

world=$((replicas + 1))
for ((r = 0; r < world; r++)); do
	a=$addr
	[[ -z $addr_b ]] || ((r % 2 == 0)) || a=$addr_b
	echo "$r $a:$((24000 + r))"
done >"$work/peers"
common=(--world "$world" --rendezvous "file:$work/peers" --algo "$algo" --chunk "$chunk"
	${blocks:+--block-sizes "$blocks"})

echo "push-weights: $(stat -c %s "$weights") bytes to $replicas replicas, $algo" >&2
for ((r = 1; r < world; r++)); do
	timeout --kill-after=5 "$step" "$rdmactl" -t 30000 multicast --rank "$r" "${common[@]}" \
		--out "$work/replica.%r" 2>"$work/err.$r" &
	pids+=($!)
done
rc=0
timeout --kill-after=5 "$step" "$rdmactl" -j -t 30000 multicast --rank 0 "${common[@]}" \
	--file "$weights" >"$work/doc" 2>"$work/err.0" || rc=$?
for p in "${pids[@]}"; do wait "$p" || true; done
pids=()
jq -e 'type == "object"' "$work/doc" >/dev/null 2>&1 ||
	summary_fail "the root printed no report (exit $rc): $(tail -n 3 "$work/err.0")"
((rc == 0)) || summary_fail "$(jq -r '.error.message // "the root exited '"$rc"'"' "$work/doc")"

# Byte for byte: every replica's file against the weights themselves.
bad=()
for ((r = 1; r < world; r++)); do
	[[ "$(sha256sum <"$work/replica.$r" | cut -d' ' -f1)" == "$want" ]] || bad+=("$r")
done
((${#bad[@]} == 0)) || summary_fail "replica ${bad[*]}: the file differs from the weights"

# When could each replica start? Its first layer usable, and all of them.
# figures to 3 significant digits (sig3), as a reader takes them in
jq --arg want "$root_want" 'def sig3: if . == 0 or . == null then . else pow(10; 2 - (fabs | log10 | floor)) as $m | . * $m | round / $m end;
	{ok: (.ok_count == .receivers_count and ($want == "" or .digest_value == $want)),
	algo, replicas: .receivers_count, bytes: .size_bytes, seconds: (.seconds | sig3),
	ideal_seconds: (.ideal_seconds | sig3), ratio: (.ratio | sig3),
	first_layer_ready_ms: ([.receivers[] | .blocks_usable_ms[0] // .first_chunk_ms] | max | sig3),
	all_ready_ms: ([.receivers[].last_chunk_ms] | max | sig3),
	per_replica: [.receivers[] | {rank, device, ok,
		first_layer_ms: (.blocks_usable_ms[0] // .first_chunk_ms | sig3), all_ms: (.last_chunk_ms | sig3)}]}' \
	"$work/doc" >"$work/summary"
cat "$work/summary"
jq -r '"push-weights: \(.replicas) replicas whole in \(.seconds) s (ideal \(.ideal_seconds) s, ratio \(.ratio)); the last replica could start after \(.first_layer_ready_ms) ms"' \
	"$work/summary" >&2
jq -e '.ok' "$work/summary" >/dev/null
