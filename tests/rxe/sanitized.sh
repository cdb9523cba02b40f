#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/rxe/sanitized.sh COMMAND...: run COMMAND (the rxe tier on the
# ASan/UBSan build, inside the guest) with every sanitizer report written to
# a file of its own instead of a stderr that a test may swallow. Each test's
# teardown fails on the reports of its own processes (common_teardown in
# tests/lib/teardown.bash, which every teardown calls: tests/lib/bats-lint.awk
# checks it; sanitizer_reports in tests/lib/common.bash). A report that no
# teardown took up is charged to its bats file by tests/lib/bats-each.sh;
# whatever is left at the end is printed here as a TAP "not ok" line and
# fails the run.
set -uo pipefail

dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmactl-sanitizer.XXXXXX") || exit 1
export RDMACTL_SANITIZER_DIR=$dir
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$dir/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$dir/ubsan"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}log_path=$dir/lsan"

"$@"
rc=$?
n=0
for f in "$dir"/*; do
	[[ -f "$f" ]] || continue
	n=$((n + 1))
	echo "not ok $((9000 + n)) sanitizer report ${f##*/} outside any test's teardown"
	sed 's/^/# /' "$f"
done
nseen=$(find "$dir/seen" -type f 2>/dev/null | wc -l)
for f in "$dir"/seen/*; do
	[[ -f "$f" ]] || continue
	sum=$(grep -m1 -E '^SUMMARY|runtime error' "$f")
	echo "# $(head -n1 "$f"): ${sum:-(no summary line)}"
done
echo "# sanitizer reports: $((n + nseen)) ($nseen failed their test, $n found at the end)"
((n == 0)) || rc=1
exit "$rc"
