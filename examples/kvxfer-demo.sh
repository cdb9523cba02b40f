#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A small prefill-to-decode KV-cache transfer: two prefill ranks (TP 2)
# stream four requests, layer by layer, into one decode rank (TP 1), which
# checks every byte. Needs an RDMA device with an address, e.g. inside the
# SoftRoCE guest:
#   tests/vm/run.sh -- examples/kvxfer-demo.sh
# Usage: examples/kvxfer-demo.sh [ADDR [PORT]]
#   ADDR        an address of an RDMA device (default $RDMACTL_VM_ADDR, 198.18.0.1)
#   PORT        the decode rank's port (default 7500)
#   -h, --help  this text
# The binary: $RDMACTL, else build/cli/rdmactl of this checkout, else rdmactl.
# Exits 0 when every request arrived verified, 1 on a failure, 2 on a
# usage error.
set -euo pipefail

for a in "$@"; do
	case $a in
	-h | --help)
		sed -n '/^# Usage/,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	-*) echo "kvxfer-demo: unknown option '$a' (see --help)" >&2; exit 2 ;;
	esac
done
(($# <= 2)) || { echo "kvxfer-demo: ADDR and PORT at most (see --help)" >&2; exit 2; }

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
addr=${1:-${RDMACTL_VM_ADDR:-198.18.0.1}}
port=${2:-7500}
rdmactl=${RDMACTL:-$here/../build/cli/rdmactl}
[[ -x $rdmactl ]] || rdmactl=$(command -v rdmactl) ||
	{ echo "kvxfer-demo: no rdmactl binary (build first, or set RDMACTL)" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf -- "$work"
}
trap cleanup EXIT

# A Llama-3-8B-like layer shape, shortened to 4 layers; 16-token pages on
# the prefill side, 32 on the decode side: every run is converted.
geom=(--model "$here/models/llama-3-8b.json" --layers 4 --src-tp 2 --dst-tp 1
	--src-page-tokens 16 --dst-page-tokens 32)

echo "== the plan"
"$rdmactl" kvxfer plan "${geom[@]}" --tokens 100 --layer-compute-us 5000 --pool-pages 64

echo "== decode rank 0 on $addr:$port (pages scattered, every byte verified)"
"$rdmactl" kvxfer serve "${geom[@]}" --listen "$addr:$port" --pool-pages 64 --scatter 1 \
	--verify --requests 4 >"$work/decode.out" 2>&1 &
decode=$!
pids+=("$decode")
for ((i = 0; i < 200; i++)); do
	grep -q listening "$work/decode.out" && break
	kill -0 "$decode" 2>/dev/null || { cat "$work/decode.out"; exit 1; }
	sleep 0.1
done

echo "== prefill ranks 0 and 1: 4 requests of 100 tokens, a layer every 5 ms, 2 QPs"
for r in 0 1; do
	"$rdmactl" kvxfer send "${geom[@]}" --rank "$r" --connect "$addr:$port" --tokens 100 \
		--requests 4 --inflight 2 --layer-compute-us 5000 --qps 2 >"$work/prefill$r.out" 2>&1 &
	pids+=("$!")
done
rc=0
for p in "${pids[@]:1}"; do wait "$p" || rc=1; done
wait "$decode" || rc=1
pids=()
for r in 0 1; do
	echo "-- prefill rank $r"
	cat "$work/prefill$r.out"
done
echo "-- decode rank 0"
cat "$work/decode.out"
if ((rc == 0)) && grep -q "4 done (4 verified)" "$work/decode.out"; then
	echo "kvxfer-demo: 4 requests moved and verified"
else
	echo "kvxfer-demo: FAILED" >&2
	exit 1
fi
