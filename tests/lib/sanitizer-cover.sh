#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/lib/sanitizer-cover.sh [--reuse DIR] [--apply]: which rxe tests the sanitizer
# tier needs to run so that every line of rdmactl the whole rxe tier reaches
# is still reached under ASan and UBSan.
#
# 1. Builds rdmactl with gcov (build-cov/) and runs every rxe test in the
#    SoftRoCE guest, each test's processes writing their coverage into a
#    folder of the test's own (RDMACTL_COVERAGE_DIR: tests/lib/common.bash).
#    The folders come back as build-cov/cover/, with each test's time.
#    (--reuse DIR: analyse an earlier run's folder instead.)
#    The unit and cli tests run on the host with the same build: the lines
#    they reach are checked by their sanitizer tiers (unit-asan, cli-asan),
#    so the rxe tests need not reach them again (build-cov/cover/host.lines).
# 2. Reads, per test, the lines of libcore/, cmds/ and cli/ it ran (gcov's
#    JSON, with jq), and picks tests greedily, the most new lines per second
#    first, until the picked ones reach every line any test reached and no
#    sanitized host tier does. Tests
#    that call heavy_sibling are not candidates (the sanitizer tier skips
#    them anyway); a line only they reach is listed. A test whose body says
#    "# sanitizer tier: always (WHY)" is picked first, whatever its lines:
#    a hostile or state-machine sequence (a region moved back, forged
#    migration steps) is where a memory error hides on lines other tests
#    also reach.
# 3. Prints the tests it left out, one "FILE | NAME" line each, and the
#    figures: lines reached, tests and seconds, all and picked. With
#    --apply, rewrites the plain-only tags of tests/rxe/*.bats to match.
#
# The rxe files carry the result as a bats tag: a test left out says
# "# bats test_tags=plain-only" above its @test line, and the sanitizer
# tier runs with --filter-tags '!plain-only' (tests/run-all.sh). Run this
# again after adding rxe tests; a new test runs on both tiers until then.
set -uo pipefail

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo" || exit 1
cov=$repo/build-cov
out=$cov/cover
apply=0 reuse=
usage() {
	echo "usage: tests/lib/sanitizer-cover.sh [--reuse DIR] [--apply]" >&2
	exit 2
}
while (($#)); do
	case "$1" in
	--apply) apply=1; shift ;;
	--reuse) (($# > 1)) || usage; reuse=$2; shift 2 ;;
	*) usage ;;
	esac
done
# lines_of: gcov's JSON on stdin, "FILE:LINE" out for each line of
# libcore/, cmds/ and cli/ that ran, once each.
lines_of() {
	jq -r '.files[] | select((.file | test("^(/[^ ]*/)?(libcore|cmds|cli)/")) and (.file | test("/tests/") | not)) |
		.file as $f | .lines[] | select(.count > 0) | "\($f | sub("^.*/(?<p>(libcore|cmds|cli)/)"; "\(.p)")):\(.line_number)"' |
		sort -u
}
if [[ -n "$reuse" ]]; then
	out=$(cd -- "$reuse" && pwd) || exit 1
else
	if ! { cmake -S . -B "$cov" -DCMAKE_C_FLAGS=--coverage -DCMAKE_EXE_LINKER_FLAGS=--coverage \
		-DCMAKE_SHARED_LINKER_FLAGS=--coverage >/dev/null && cmake --build "$cov" -j "$(nproc)" >/dev/null; }; then
		echo "sanitizer-cover.sh: the coverage build failed" >&2
		exit 1
	fi
	find "$cov" -name '*.gcda' -delete
	rm -rf "$out"
	mkdir -p "$out"
	# The guest's root is the host's, read-only with a tmpfs on top: the
	# coverage is gathered in the guest's /tmp and comes back through the
	# job folder, the one the guest can write to.
	RDMACTL_VM_KEEP=1 tests/vm/run.sh --four-nics --timeout 3600 -- \
		env RDMACTL_COVERAGE_DIR=/tmp/cover RDMACTL_BUILD_DIR="$cov" RDMACTL="$cov/cli/rdmactl" \
		BATS_TEST_TIMEOUT=300 bash -c '
		tests/lib/bats-each.sh --file-timeout 1200 --timing -- tests/rxe | tee /tmp/rxe.tap
		cp /tmp/rxe.tap "$RDMACTL_VM_JOB/rxe.tap"
		tar -C /tmp -cf "$RDMACTL_VM_JOB/cover.tar" cover' \
		>"$cov/run.log" 2>&1
	job=$(grep -o 'job folder kept: [^ ]*' "$cov/run.log" | tail -n1)
	job=${job#job folder kept: }
	[[ -f "$job/cover.tar" ]] || { echo "sanitizer-cover.sh: no coverage came back (see $cov/run.log)" >&2; exit 1; }
	tar -C "$out/.." -xf "$job/cover.tar"
	cp "$job/rxe.tap" "$out/rxe.tap"
	rm -rf -- "$job"
	# The host tiers on the same build; their .gcda land beside the .gcno.
	(cd "$cov" && ctest >"$out/host-unit.log" 2>&1)
	RDMACTL_BUILD_DIR="$cov" RDMACTL="$cov/cli/rdmactl" RDMACTL_NOCUDA="$cov/cli/rdmactl" \
		bats --tap tests/cli >"$out/host-cli.tap" 2>&1
	find "$cov" -path "$out" -prune -o -name '*.gcda' -print0 |
		(cd "$out" && xargs -0 -r gcov --json-format --stdout 2>/dev/null) | lines_of >"$out/host.lines"
fi
[[ -s "$out/host.lines" ]] ||
	echo "sanitizer-cover.sh: no host.lines in $out: every line the rxe tests reach is wanted" >&2

# Per test: "FILE<TAB>NAME<TAB>SECONDS<TAB>HEAVY" in tests.tsv, and the lines
# it ran, "FILE:LINE" one a line, in lines/N.
work=$out/.pick
rm -rf "$work"
mkdir -p "$work/lines"
n=0
for d in "$out"/*.bats/*/; do
	[[ -f "$d/name" ]] || continue
	file=$(basename "$(dirname "$d")")
	name=$(cat "$d/name")
	ms=$(grep -F " $name in " "$out/rxe.tap" | grep -E '^ok ' | sed -E 's/.* in ([0-9]+)ms$/\1/' | head -n1)
	[[ -n "$ms" ]] || continue # failed or not run: not a candidate
	# "HEAVY ALWAYS": 0 or 1 each
	flags=$(awk -v n="$name" '
		/^@test / { t = $0; sub(/^@test "/, "", t); sub(/" \{$/, "", t); inside = (t == n); next }
		inside && /heavy_sibling/ { heavy = 1 }
		inside && /^[[:space:]]*# sanitizer tier: always/ { always = 1 }
		END { print heavy + 0, always + 0 }' "tests/rxe/$file")
	n=$((n + 1))
	printf '%s\t%s\t%s\t%s\t%s\n' "$file" "$name" "$ms" "${flags% *}" "${flags#* }" >>"$work/tests.tsv"
	# gcov wants each .gcda beside its .gcno: copy the notes in
	(cd "$cov" && find . -path ./cover -prune -o -name '*.gcno' -exec cp --parents -t "$d$cov" {} + 2>/dev/null)
	find "$d" -name '*.gcda' -print0 | (cd "$work" && xargs -0 -r gcov --json-format --stdout 2>/dev/null) |
		lines_of >"$work/lines/$n"
	find "$d" -name '*.gcno' -delete # the copies: some 90 MiB a test
done
((n)) || { echo "sanitizer-cover.sh: no test's coverage under $out" >&2; exit 1; }

# Greedy weighted set cover, in awk: every line reached by a candidate must
# be reached by a picked test.
awk -F '\t' -v host="$out/host.lines" '
	BEGIN { while ((getline l <host) > 0) onhost[l] = 1 }
	# new(i): the wanted lines test i reaches that no picked test does
	function new(i,   k, c) {
		c = 0
		for (k = 1; k <= nl[i]; k++)
			if ((L[i, k] in want) && !(L[i, k] in got)) c++
		return c
	}
	# pick(i, why): test i joins the picked ones; a line of picked.tsv says it
	function pick(i, why,   k, c) {
		picked[i] = 1
		c = new(i)
		for (k = 1; k <= nl[i]; k++) got[L[i, k]] = 1
		left -= c
		sum += ms[i]
		printf "%d\t%d\t%.1f\t%s\t%s%s\n", c, need - left, sum / 1000, file[i], name[i], why > (work "/picked.tsv")
	}
	FNR == NR { file[FNR] = $1; name[FNR] = $2; ms[FNR] = $3 < 100 ? 100 : $3; heavy[FNR] = $4; always[FNR] = $5; n = FNR; next }
	{
		i = FILENAME
		sub(/.*\//, "", i)
		L[i, ++nl[i]] = $0
		if ($0 in onhost) hostline[$0] = 1
		else if (heavy[i]) heavyline[$0] = 1
		else want[$0] = 1
		all[$0] = 1
	}
	END {
		for (l in all) total++
		for (l in want) need++
		left = need
		for (i = 1; i <= n; i++)
			if (always[i] && !heavy[i])
				pick(i, " (always)")
		while (left > 0) {
			best = 0; bestv = 0
			for (i = 1; i <= n; i++) {
				if (heavy[i] || picked[i]) continue
				c = new(i)
				if (c > 0 && c / ms[i] > bestv) { bestv = c / ms[i]; best = i }
			}
			if (!best) break
			pick(best, "")
		}
		for (l in heavyline) if (!(l in want)) only_heavy++
		for (l in hostline) on_host++
		for (i = 1; i <= n; i++) {
			alltime += ms[i]
			if (picked[i]) { pt += ms[i]; pn++ }
			else if (!heavy[i]) print "plain-only\t" file[i] "\t" name[i] > (work "/left-out.tsv")
		}
		printf "lines reached by the rxe tier: %d (%d also by the sanitized unit and cli tiers, %d only by heavy siblings)\n", total, on_host, only_heavy
		printf "tests: %d, %.0f s; picked for the sanitizer tier: %d, %.0f s, reaching all %d lines the candidates reach\n", n, alltime / 1000, pn, pt / 1000, need
	}' work="$work" "$work/tests.tsv" "$work"/lines/*

echo "left out of the sanitizer tier ($work/left-out.tsv):"
cut -f2,3 "$work/left-out.tsv" | sed 's/\t/ | /'

# --apply: the rxe files' tags follow the result: every plain-only tag goes,
# then each test left out gets one, on the line above its @test.
if ((apply)); then
	for f in tests/rxe/*.bats; do
		awk -F '\t' -v file="${f##*/}" '
			FNR == NR { if ($2 == file) out[$3] = 1; next }
			/^# bats test_tags=plain-only$/ { next }
			/^@test "/ {
				t = $0; sub(/^@test "/, "", t); sub(/" \{$/, "", t)
				if (t in out) print "# bats test_tags=plain-only"
			}
			{ print }' "$work/left-out.tsv" "$f" >"$f.new" && mv "$f.new" "$f"
	done
	echo "tags written: $(grep -c . "$work/left-out.tsv") tests carry plain-only"
fi
