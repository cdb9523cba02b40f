#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build the libFuzzer targets with clang (ASan, UBSan) and run each for a
# bounded time over a scratch copy of its seed corpus (tests/fuzz/corpus/,
# which stays as committed). A crash, a leak, a sanitizer report or a
# broken property fails the target; the input that did it is kept under
# build-fuzz/artifacts/. Prints one TAP line per target.
#
# Usage: tests/fuzz/run.sh [SECONDS-PER-TARGET]   (default 30, or $RDMACTL_FUZZ_SECONDS)
set -uo pipefail

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${1:-${RDMACTL_FUZZ_SECONDS:-30}}
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: tests/fuzz/run.sh [SECONDS-PER-TARGET]" >&2; exit 2; }
build=$repo/build-fuzz
targets=(fuzz_ctrl fuzz_kv_msg fuzz_kv_imm fuzz_parse fuzz_words fuzz_etcd fuzz_files fuzz_blocks fuzz_model fuzz_region_srv fuzz_region_hello fuzz_reject fuzz_group_hello fuzz_group_msg fuzz_group_fab fuzz_fab_wire)
# The corpus each target starts from.
declare -A corpus=([fuzz_ctrl]=ctrl [fuzz_kv_msg]=kv_msg [fuzz_kv_imm]=kv_imm [fuzz_parse]=parse [fuzz_words]=words
	[fuzz_etcd]=etcd [fuzz_files]=files [fuzz_blocks]=blocks [fuzz_model]=model [fuzz_region_srv]=region_srv
	[fuzz_region_hello]=region_hello [fuzz_reject]=reject [fuzz_group_hello]=group_hello [fuzz_group_msg]=group_msg [fuzz_group_fab]=group_fab [fuzz_fab_wire]=fab_wire)

echo "1..${#targets[@]}"
if ! { CC=clang cmake -S "$repo" -B "$build" -DRDMACTL_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null &&
	cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$build/build.log" 2>&1; }; then
	cat "$build/build.log" >&2 2>/dev/null
	for i in "${!targets[@]}"; do echo "not ok $((i + 1)) ${targets[i]}: the fuzz build failed"; done
	exit 1
fi

rc=0
mkdir -p "$build/artifacts"
for i in "${!targets[@]}"; do
	t=${targets[i]}
	work=$(mktemp -d)
	cp -- "$repo/tests/fuzz/corpus/${corpus[$t]}"/* "$work/"
	log=$build/$t.log
	# -timeout: one input taking over 10 s is a hang, and a failure.
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		timeout $((seconds + 60)) "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 \
		-rss_limit_mb=2048 -max_len=8192 -artifact_prefix="$build/artifacts/$t-" \
		-print_final_stats=1 "$work" >"$log" 2>&1
	status=$?
	runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -n 1)
	rm -rf -- "$work"
	if ((status == 0)) && [[ -n "$runs" ]] && ((runs > 0)); then
		echo "ok $((i + 1)) $t: $runs inputs in ${seconds} s, no crash"
	else
		echo "not ok $((i + 1)) $t: exit $status after ${runs:-no} inputs (log: $log)"
		grep -E 'ERROR: |property failed|SUMMARY|Test unit written' "$log" | head -n 8 | sed 's/^/#   /'
		rc=1
	fi
done
exit $rc
