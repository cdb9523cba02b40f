#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/lib/bats-each.sh [--file-timeout SECONDS] [BATS-OPTION...] -- PATH...
#
# Run bats once per file, each bounded in time, so that a hang costs that
# file and not the tier: a test that never ends, or a process left holding
# bats' fd 3, for which bats waits. PATH is a .bats file or a folder (its
# *.bats, in name order). The file's bats runs under `timeout`, which ends
# it and every process of its group (SIGTERM, SIGKILL 10 s later).
#
# Output: one TAP stream, numbered across the files, with the plan at the
# end; before each file "# file: PATH", after it "# PATH: N results in S s".
# A file cut off by its timeout gets a "not ok" line naming it (the tests
# it did not reach are not counted); so does a bats that exited non-zero
# without a failing test (a syntax error, a crash), and, on the sanitizer
# tier (tests/rxe/sanitized.sh), a report no test's teardown took up.
# Exit status: 0 when every file passed, 1 otherwise, 2 on bad usage.
#
# SECONDS defaults to $RDMACTL_BATS_FILE_TIMEOUT, else 900.
set -uo pipefail

usage() {
	echo "usage: tests/lib/bats-each.sh [--file-timeout SECONDS] [BATS-OPTION...] -- PATH..." >&2
	exit 2
}

limit=${RDMACTL_BATS_FILE_TIMEOUT:-900}
opts=()
while (($#)); do
	case "$1" in
	--file-timeout) (($# > 1)) || usage; limit=$2; shift 2 ;;
	--file-timeout=*) limit=${1#*=}; shift ;;
	--) shift; break ;;
	*) opts+=("$1"); shift ;;
	esac
done
(($#)) || usage
[[ "$limit" =~ ^[1-9][0-9]*$ ]] || { echo "bats-each.sh: --file-timeout wants whole seconds, not '$limit'" >&2; exit 2; }

files=()
for p; do
	if [[ -d "$p" ]]; then
		for f in "${p%/}"/*.bats; do
			[[ -f "$f" ]] && files+=("$f")
		done
	elif [[ -f "$p" ]]; then
		files+=("$p")
	else
		echo "bats-each.sh: no such file or folder: $p" >&2
		exit 2
	fi
done
((${#files[@]})) || { echo "bats-each.sh: no .bats files in $*" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bats-each.XXXXXX") || exit 1
# One folder for the -j documents of every file (tests/lib/assert.bash): the
# tier's last file, zz-json-schemas.bats, checks them all against schemas/.
export RDMACTL_TEST_JSON_DOCS=${RDMACTL_TEST_JSON_DOCS:-$tmp/json-docs}
pid=
# shellcheck disable=SC2317 # from the trap
cleanup() {
	[[ -z "$pid" ]] || kill -TERM "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

n=0 bad=0
for f in "${files[@]}"; do
	log=$tmp/out
	: >"$log"
	echo "# file: $f"
	start=$SECONDS
	timeout -k 10 "$limit" bats --tap "${opts[@]}" "$f" </dev/null >"$log" 2>&1 &
	pid=$!
	# Stream it as it comes, numbered on from the files before; each
	# file's own plan ("1..N") is dropped for the one at the end.
	tail -n +1 -s 0.1 -f --pid="$pid" "$log" | awk -v n="$n" '
		/^ok [0-9]+/ || /^not ok [0-9]+/ {
			s = $0
			sub(/^(not )?ok [0-9]+/, "", s)
			print (/^not/ ? "not ok " : "ok ") (++n) s
			fflush()
			next
		}
		/^[0-9]+\.\.[0-9]+$/ { next }
		{ print; fflush() }'
	rc=0
	wait "$pid" || rc=$?
	pid=
	results=$(grep -cE '^(not )?ok [0-9]+' "$log")
	n=$((n + results))
	if ((rc == 124 || rc == 137)); then
		n=$((n + 1))
		echo "not ok $n $f: cut off after $limit s (--file-timeout): a test or a process it left behind hung; the tests after the last result above (if any) did not run"
		bad=1
	elif ((rc != 0)) && ! grep -qE '^not ok [0-9]+' "$log"; then
		n=$((n + 1))
		echo "not ok $n $f: bats exited $rc without a failing test"
		bad=1
	elif ((rc != 0)); then
		bad=1
	fi
	# A sanitizer report that no teardown of this file took up is this
	# file's (tests/rxe/sanitized.sh, tests/lib/common.bash).
	sd=${RDMACTL_SANITIZER_DIR:-}
	if [[ -n "$sd" ]]; then
		for r in "$sd"/*; do
			[[ -f "$r" ]] || continue
			n=$((n + 1))
			echo "not ok $n $f: sanitizer report ${r##*/} outside any test's teardown"
			sed 's/^/# /' "$r"
			mkdir -p "$sd/seen"
			{ echo "file: $f, outside any test's teardown"; cat "$r"; } >"$sd/seen/file-$n-${r##*/}"
			rm -f "$r"
			bad=1
		done
	fi
	echo "# $f: $results results in $((SECONDS - start)) s"
done
echo "1..$n"
exit "$bad"
