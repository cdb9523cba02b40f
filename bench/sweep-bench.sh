#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# sweep's per-pair bandwidth beside ib_write_bw on the same pair (the same
# devices, message size, depth and duration; the ratio as perftest-compare
# gives it), and a sweep's wall time against its ideal: rounds x 2
# directions x the per-direction duration. Run it inside the SoftRoCE guest:
#   tests/vm/run.sh --two-nics -- bench/sweep-bench.sh   (the pair across the veth)
#   tests/vm/run.sh -- bench/sweep-bench.sh              (both ranks on rxe0)
# or on a host with an RDMA device: bench/sweep-bench.sh ADDR DEVICE GID_INDEX
#
# Speed is only comparable as a ratio taken in one place: the guest's rxe
# loses packets under load, so its figures vary from run to run.
# Environment: DURATION (default 1), MSG (64K), DEPTH (16), RANKS (4), RUNS (2).
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.bash
. "$here/lib.bash"
bench_setup sweep-bench "$@"
duration=${DURATION:-1}
msg=${MSG:-64K}
depth=${DEPTH:-16}
ranks=${RANKS:-4}
runs=${RUNS:-2}
bytes=$(numfmt --from=iec "$msg")
addrs=("$addr" "$addr") devs=("$dev" "$dev") gids=("$gid" "$gid")
if [[ -n ${RDMACTL_VM_ADDR_A:-} && $# -eq 0 ]]; then
	addrs=("$RDMACTL_VM_ADDR_A" "$RDMACTL_VM_ADDR_B")
	devs=("$RDMACTL_VM_DEV_A" "$RDMACTL_VM_DEV_B")
	gids=("$RDMACTL_VM_GID_INDEX_A" "$RDMACTL_VM_GID_INDEX_B")
fi
port=27000

# sweep N: N ranks over the addresses, rank 0's document on stdout.
sweep() {
	local n=$1 r bad=0
	port=$((port + 16))
	for ((r = 0; r < n; r++)); do
		echo "$r ${addrs[r * ${#addrs[@]} / n]}:$((port + r))"
	done >"$work/peers"
	pids=()
	for ((r = 1; r < n; r++)); do
		"$rdmactl" -t 60000 sweep -r $r -w "$n" -R "file:$work/peers" --duration "$duration" \
			--msg-size "$msg" --depth "$depth" --lat-iters 50 2>"$work/e$r" >/dev/null &
		pids+=("$!")
	done
	"$rdmactl" -j -t 60000 sweep -r 0 -w "$n" -R "file:$work/peers" --duration "$duration" \
		--msg-size "$msg" --depth "$depth" --lat-iters 50 >"$work/r0" 2>"$work/e0" || bad=$?
	for p in "${pids[@]}"; do wait "$p" || bad=$((bad > 1 ? bad : $?)); done
	pids=()
	# exit 1 with a document is a verdict (an outlier), not a failure
	if ! jq -e 'has("healthy")' "$work/r0" >/dev/null 2>&1; then
		echo "sweep-bench: a sweep of $n ranks failed (exit $bad):" >&2
		cat "$work/r0" "$work"/e* >&2
		exit 1
	fi
	cat "$work/r0"
}

# ib_write_bw from devs[0] to devs[1] for the same duration (whole seconds,
# as perftest takes it): Gbit/s.
perftest_bw() {
	local i out secs
	secs=$(awk -v d="$duration" 'BEGIN { s = int(d + 0.999); print s < 1 ? 1 : s }')
	timeout 120 ib_write_bw -d "${devs[1]}" -x "${gids[1]}" -F -s "$bytes" -t "$depth" \
		-D "$secs" >"$work/pt-server" 2>&1 &
	pids=("$!")
	for ((i = 0; i < 100; i++)); do
		[ -n "$(ss -Hltn 'sport = :18515' 2>/dev/null)" ] && break
		sleep 0.1
	done
	out=$(timeout 120 ib_write_bw -d "${devs[0]}" -x "${gids[0]}" -F -s "$bytes" -t "$depth" \
		-D "$secs" "${addrs[1]}") || { cat "$work/pt-server" >&2; exit 1; }
	wait "${pids[0]}" || true
	pids=()
	# the row of the size: bytes, iterations, peak, average MB/sec (2^20 bytes)
	awk -v s="$bytes" '$1 == s { printf "%.4f\n", $4 * 1048576 * 8 / 1e9; exit }' <<<"$out"
}

echo "# sweep-bench: ${devs[0]} -> ${devs[1]}, WRITEs of $msg, depth $depth, $duration s, $runs runs"
printf "# %-4s %14s %14s %8s\n" run "sweep(Gbit/s)" "ib_write_bw" ratio
for ((k = 1; k <= runs; k++)); do
	t0=$SECONDS
	sw=$(sweep 2 | jq -r '.matrices.write_gbit_per_s[0][1]')
	echo "sweep-bench: run $k: the 2-rank sweep took $((SECONDS - t0)) s" >&2
	pt=$(perftest_bw)
	[[ -n $pt && $sw != null ]] || { echo "sweep-bench: no figure (sweep '$sw', perftest '$pt')" >&2; exit 1; }
	awk -v k="$k" -v a="$sw" -v b="$pt" 'BEGIN { printf "  %-4s %14.4f %14.4f %7.2fx\n", k, a, b, (b > 0 ? a / b : 0) }'
done
doc=$(sweep "$ranks")
jq -r --argjson d "$duration" '"# \(.ranks) ranks, \(.rounds) rounds: \(.seconds * 1000 | round / 1000) s in all, ideal \(.rounds * 2 * $d) s (rounds x 2 directions x \($d) s): \(.seconds / (.rounds * 2 * $d) * 100 | round / 100)x; median \(.fleet.write_median_gbit_per_s) Gbit/s, healthy \(.healthy)"' <<<"$doc"
