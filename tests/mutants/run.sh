#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/mutants/run.sh [--no-clean] [NAME...]
#
# A mutation check, run by hand (not in CI): each patch of tests/mutants/LIST
# plants one bug that the suite once let through; the tests named beside it
# must fail with it. It runs on HEAD (commit the tests first), in a
# temporary git worktree (build-mutants/wt.XXXXXX in this checkout: the
# SoftRoCE guest cannot see the host's /tmp), built once with warnings as
# errors; for each patch: apply, rebuild what changed, run its tests, put
# the tree back as it was (a fresh build a patch would cost minutes on two
# cores). The worktree goes at the end. Before the patches, the same tests
# run on the tree as it is (--no-clean skips that): a test that fails there
# would kill every mutant for the wrong reason.
#
# LIST: one mutant a line, "PATCH TARGET...", # comments. A TARGET is
#   unit:NAME            the ctest test NAME
#   cli:FILE[:REGEX]     bats FILE on the host (REGEX: --filter, '.' for a space)
#   rxe:FILE[:REGEX]     bats FILE in the SoftRoCE guest (tests/vm/run.sh
#                        --four-nics; $MUTANTS_GUEST names another launcher)
#
# NAME: only these patches (file names less .patch). Prints, per mutant,
# "killed NAME", "survived NAME" or "error NAME: why" (the patch does not
# apply, the build fails, or a test gave no result); the tests' output goes
# to build-mutants/log. Exit status: 0 every mutant killed, 1 one survived
# or an error, 2 bad usage or a test failing on the tree as it is.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel) || exit 2
clean=1
case "${1:-}" in
--no-clean) clean=0; shift ;;
-h | --help) sed -n '3,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
-*) echo "usage: tests/mutants/run.sh [--no-clean] [NAME...]" >&2; exit 2 ;;
esac

# The manifest, less comments and blank lines, less the names not asked for.
rows=()
while read -r line; do
	line=${line%%#*}
	read -ra f <<<"$line"
	((${#f[@]})) || continue
	((${#f[@]} > 1)) || { echo "run.sh: LIST: no test beside ${f[0]}" >&2; exit 2; }
	[[ -f "$here/${f[0]}" ]] || { echo "run.sh: LIST: no patch ${f[0]}" >&2; exit 2; }
	if (($#)) && ! printf '%s\n' "$@" | grep -qxF "${f[0]%.patch}"; then continue; fi
	rows+=("$line")
done <"$here/LIST"
((${#rows[@]})) || { echo "run.sh: no mutant of LIST matches: $*" >&2; exit 2; }

mkdir -p "$root/build-mutants" || exit 2
log=$root/build-mutants/log
wt=$(mktemp -d "$root/build-mutants/wt.XXXXXX") || exit 2
: >"$log"
# shellcheck disable=SC2317 # from the trap
cleanup() {
	git -C "$root" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
	git -C "$root" worktree prune
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

git -C "$root" worktree add --detach "$wt" HEAD >/dev/null 2>>"$log" || { echo "run.sh: git worktree add failed (see $log)" >&2; exit 2; }
export RDMACTL_VM_CACHE=${RDMACTL_VM_CACHE:-$root/.cache/vm}
guest=${MUTANTS_GUEST:-tests/vm/run.sh}

build() {
	{ nice cmake -S "$wt" -B "$wt/build" -DRDMACTL_WERROR=ON >/dev/null &&
		nice cmake --build "$wt/build" -j2 >/dev/null; } 2>>"$log"
}

# verdict KIND STATUS: of the output in $wt/out, 0 passed, 1 a test failed,
# 2 no result (no test ran, or a tool gave up without a failing test).
verdict() {
	if [[ $1 == unit ]]; then
		if grep -q 'No tests were found' "$wt/out"; then echo 2; elif (($2)); then echo 1; else echo 0; fi
	elif grep -q '^not ok' "$wt/out"; then
		echo 1
	elif (($2)) || ! grep -q '^ok ' "$wt/out"; then
		echo 2
	else
		echo 0
	fi
}

# run_targets TARGET...: 0 every test passed, 1 one failed, 2 no result.
run_targets() {
	local t kind file re rc worst=0 rxe=()
	for t; do
		kind=${t%%:*} file=${t#*:} re=
		if [[ $kind != unit && $file == *:* ]]; then
			re=${file#*:} file=${file%%:*}
		fi
		case $kind in
		unit) (cd "$wt/build" && ctest -R "^($file)\$" --output-on-failure) >"$wt/out" 2>&1
			rc=$?
			cat "$wt/out" >>"$log" ;;
		cli) (cd "$wt" && RDMACTL_BUILD_DIR=$wt/build RDMACTL=$wt/build/cli/rdmactl \
			bats --tap ${re:+--filter "$re"} "$file") >"$wt/out" 2>&1
			rc=$?
			cat "$wt/out" >>"$log" ;;
		rxe)
			# shellcheck disable=SC2016 # the quotes are the guest job's
			rxe+=("bats --tap ${re:+--filter '$re'} $file")
			continue
			;;
		*) echo "run.sh: LIST: unknown tier in '$t'" >&2; return 2 ;;
		esac
		rc=$(verdict "$kind" "$rc")
		((rc > worst)) && worst=$rc
	done
	if ((${#rxe[@]})); then
		# one guest for all of them; every file's TAP to out
		# shellcheck disable=SC2016 # $rc is the guest job's
		printf '%s\n' "cd '$wt'" "export RDMACTL_BUILD_DIR='$wt/build' RDMACTL='$wt/build/cli/rdmactl' BATS_TEST_TIMEOUT=300" \
			"rc=0" "${rxe[@]/%/ || rc=1}" 'exit $rc' >"$wt/guest-job.sh"
		(cd "$wt" && $guest --four-nics --timeout 1500 -- bash "$wt/guest-job.sh") >"$wt/out" 2>&1
		rc=$?
		cat "$wt/out" >>"$log"
		rc=$(verdict rxe "$rc")
		((rc > worst)) && worst=$rc
	fi
	return "$worst"
}

if ! build; then
	echo "run.sh: the tree as it is does not build (see $log)" >&2
	exit 2
fi
if ((clean)); then
	all=()
	for r in "${rows[@]}"; do
		read -ra f <<<"$r"
		all+=("${f[@]:1}")
	done
	echo "== the tree as it is" >>"$log"
	run_targets "${all[@]}"
	case $? in
	0) echo "clean: every test passes" ;;
	*) echo "run.sh: a test fails, or gives no result, on the tree as it is (see $log)" >&2; exit 2 ;;
	esac
fi

bad=0
for r in "${rows[@]}"; do
	read -ra f <<<"$r"
	name=${f[0]%.patch}
	echo "== $name" >>"$log"
	if ! git -C "$wt" apply "$here/${f[0]}" 2>>"$log"; then
		echo "error $name: the patch does not apply to HEAD"
		bad=1
		continue
	fi
	if ! build; then
		echo "error $name: the build fails with it"
		bad=1
	else
		run_targets "${f[@]:1}"
		case $? in
		1) echo "killed $name" ;;
		0) echo "survived $name"; bad=1 ;;
		*) echo "error $name: a test gave no result"; bad=1 ;;
		esac
	fi
	git -C "$wt" checkout -- . 2>>"$log"
	git -C "$wt" diff --quiet || { echo "run.sh: the worktree is not clean again" >&2; exit 2; }
done
exit "$bad"
