#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Every test tier, as CI runs it: installs what is missing, builds with
# warnings as errors (plus an ASan/UBSan build), then runs
#   unit  C tests under ctest, no device        (both builds)
# (a third build, -DRDMACTL_CUDA=OFF, only builds rdmactl for one cli test)
#   cli   bats on the binary, no device         (both builds)
#   rxe   bats inside the SoftRoCE guest: real rdma_rxe, five devices (rxe0, two veth pairs), each
#         file on its own and bounded in time (tests/lib/bats-each.sh);
#         once more on the sanitizer build, where a report fails, the tests
#         that together reach every line of rdmactl the tier reaches (the
#         others carry the bats tag plain-only: tests/lib/sanitizer-cover.sh
#         measured it), less the heavy siblings tests/expected-skips names
#   fuzz  libFuzzer targets (clang, ASan, UBSan) over the network decoders
#         and the parsers, 20 s each
# Once the plain build is done, the two rxe tiers run one after the other
# in the background; beside them, niced, the other builds, the unit tiers,
# both cli tiers (the sanitizer one less the files tagged source-only,
# which read the tree, not the binary) and fuzz; each tier's output is
# shown once all are done, and the whole ends with one line
# "rdmactl tests: N passed, N failed, N skipped".
#
# Usage: tests/run-all.sh [--no-sanitize] [--no-rxe] [--no-fuzz]
set -uo pipefail

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 1
sanitize=1
rxe=1
fuzz=1
for a in "$@"; do
	case "$a" in
	--no-sanitize) sanitize=0 ;;
	--no-rxe) rxe=0 ;;
	--no-fuzz) fuzz=0 ;;
	*) echo "usage: tests/run-all.sh [--no-sanitize] [--no-rxe] [--no-fuzz]" >&2; exit 2 ;;
	esac
done

log() { printf '\n=== %s (at %d s)\n' "$*" "$SECONDS"; }

logdir=$repo/build/test-logs
# the counting: skip_allowed, count_tap, count_bats, count_ctest and the totals
# shellcheck source=tests/lib/tap-count.bash
. "$repo/tests/lib/tap-count.bash"

# run_ctest NAME BUILD
run_ctest() {
	local out=$logdir/$1.log
	(cd "$2" && niced ctest --output-on-failure) 2>&1 | tee "$out"
	count_ctest "$1" "$out"
}

# to_log NAME LOG CMD...: CMD's output into LOG, its status in LOG.rc, when it
# started and ended in LOG.time
to_log() {
	local name=$1 out=$2
	shift 2
	printf '%s: started at %d s\n' "$name" "$SECONDS" >"$out.time"
	"$@" >"$out" 2>&1
	echo $? >"$out.rc"
	printf '%s: ended at %d s\n' "$name" "$SECONDS" >>"$out.time"
}

guest_pid= # the guest tiers, once they run
# niced: the command, niced once the guest tiers run beside it
niced() {
	if [[ -n "$guest_pid" ]]; then nice -n 10 "$@"; else "$@"; fi
}

build() { # build DIR CMAKE-ARGS...
	local dir=$1
	shift
	niced cmake -S . -B "$dir" -DRDMACTL_WERROR=ON "$@" >/dev/null &&
		niced cmake --build "$dir" -j "$(nproc)"
}

# stop_guest: the guest tiers end now (run.sh stops its qemu on TERM)
stop_guest() {
	local kids
	[[ -n "$guest_pid" ]] || return 0
	kids=$(pgrep -P "$guest_pid")
	kill -TERM "$guest_pid" 2>/dev/null
	# shellcheck disable=SC2086 # one pid a word
	[[ -z "$kids" ]] || kill -TERM $kids 2>/dev/null
	wait "$guest_pid" 2>/dev/null
}
# fail_early WHAT: a build failed; nothing else is counted
fail_early() {
	stop_guest
	echo "rdmactl tests: 0 passed, 1 failed ($1)"
	exit 1
}

log "skips accepted (tests/expected-skips); any other skip fails its tier"
grep -vE '^[[:space:]]*(#|$)' tests/expected-skips | sed 's/^/  /'

log "dependencies"
tests/deps.sh || { echo "cannot install the dependencies" >&2; exit 1; }

log "build (warnings are errors)"
build build || { echo "rdmactl tests: 0 passed, 1 failed (build)"; exit 1; }
rm -rf "$logdir" # no tier's log from an earlier run is counted
mkdir -p "$logdir"

# The guest tiers start as soon as the plain build is there: the other two
# builds and the unit tier run beside the guest's boot and first files,
# niced (in ci8 the guest started at 115 s, 78 s after the plain build).
# A build that fails stops the guest and the run.
# One guest after the other, two vCPUs each, the host tiers below beside
# them: 1819 s for the suite (1139 s plain, 618 s sanitized). Two one-vCPU
# guests side by side (run.sh --cpus 1) made migrate's and kvxfer's timing
# checks fail now and then (a destination that did not answer in 40 s, a
# heartbeat missed for 400 ms); two two-vCPU guests side by side, the
# sanitizer one niced, were no faster: the two cores are the limit, not
# the guests.
# Each file runs on its own, bounded (tests/lib/bats-each.sh): a hang costs
# that file, counted as a failure that names it, and the tier goes on with
# the next file. The bound, 900 s (1200 s on the sanitizer build), leaves
# room to the longest file (kvxfer.bats, 30 tests), and a hang plus the
# rest of the tier still fits in the guest's 2700 s.
# The sanitizer tier waits for build-asan to be complete ($asan_ready).
asan_ready=$logdir/.asan-built
if ((rxe)); then
	log "in the background: rxe tests in the SoftRoCE guest (five devices: rxe0 and two veth pairs), then on the sanitizer build"
	(
		to_log rxe "$logdir/rxe.tap" tests/vm/run.sh --four-nics --timeout 2700 -- \
			env RDMACTL_BUILD_DIR="$repo/build" RDMACTL="$repo/build/cli/rdmactl" BATS_TEST_TIMEOUT=180 \
			tests/lib/bats-each.sh --file-timeout 900 --timing -- tests/rxe
		if ((sanitize)); then
			until [[ -f "$asan_ready" ]]; do sleep 1; done # fail_early stops us if it never comes
			to_log rxe-asan "$logdir/rxe-asan.tap" tests/vm/run.sh --four-nics --timeout 2700 -- \
				env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
				tests/rxe/sanitized.sh env RDMACTL_BUILD_DIR="$repo/build-asan" RDMACTL="$repo/build-asan/cli/rdmactl" \
				BATS_TEST_TIMEOUT=240 tests/lib/bats-each.sh --file-timeout 1200 --timing --filter-tags '!plain-only' -- tests/rxe
		fi
	) </dev/null &
	guest_pid=$!
fi

# A build without CUDA must still build and refuse --mem cuda plainly (the
# cli tier checks it through RDMACTL_NOCUDA); the binary alone is enough.
log "build without CUDA (-DRDMACTL_CUDA=OFF, rdmactl only)"
if ! { niced cmake -S . -B build-nocuda -DRDMACTL_WERROR=ON -DRDMACTL_CUDA=OFF -DRDMACTL_TESTS=OFF >/dev/null &&
	niced cmake --build build-nocuda -j "$(nproc)" --target rdmactl; }; then
	fail_early "build without CUDA"
fi
if ((sanitize)); then
	log "build with AddressSanitizer and UndefinedBehaviorSanitizer (-O1)"
	# -O1, as the sanitizers' documentation advises for speed: at -O0 their
	# checks made sha256 of 64 MiB take 5.2 s on the host (0.37 s plain,
	# 2.6 s at -O1), and the sanitizer tier's hashing and multicast tests 5
	# to 17 times slower in the guest than on the plain build.
	build build-asan -DRDMACTL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -O1" ||
		fail_early "sanitizer build"
	touch "$asan_ready"
fi

log "unit tests"
run_ctest unit build

# From here on each tier runs into its own log, shown and counted once all
# are done: the tiers that need no guest one after the other, niced, in the
# background beside the guest tiers, which leave much of the two cores idle.
host_tiers=(cli)
((sanitize)) && host_tiers=(unit-asan cli cli-asan)
((fuzz)) && host_tiers+=(fuzz)
log "in the background: ${host_tiers[*]} (their output follows the guest tiers')"
(
	renice -n 10 -p "$BASHPID" >/dev/null # the guests' timing checks come first
	if ((sanitize)); then
		to_log unit-asan "$logdir/unit-asan.log" bash -c 'cd build-asan && ctest --output-on-failure'
	fi
	to_log cli "$logdir/cli.tap" env RDMACTL_BUILD_DIR="$repo/build" RDMACTL="$repo/build/cli/rdmactl" \
		RDMACTL_NOCUDA="$repo/build-nocuda/cli/rdmactl" bats --tap --timing tests/cli
	if ((sanitize)); then
		to_log cli-asan "$logdir/cli-asan.tap" env RDMACTL_BUILD_DIR="$repo/build-asan" \
			RDMACTL="$repo/build-asan/cli/rdmactl" RDMACTL_NOCUDA="$repo/build-nocuda/cli/rdmactl" \
			ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			bats --tap --timing --filter-tags '!source-only' tests/cli
	fi
	if ((fuzz)); then
		# 20 s a target, under SCHED_IDLE: a fuzzer burns all the CPU it
		# gets, and the host tiers beside the guest slow it down even niced
		# (alltoall's 72 ranks: 55 s beside the cli tier, 29 s alone); idle,
		# the fuzzers take only what the guest leaves. They check no timing;
		# the cli tiers, which do, stay niced only.
		to_log fuzz "$logdir/fuzz.tap" chrt --idle 0 tests/fuzz/run.sh 20
	fi
) </dev/null &
host_pid=$!

wait "$host_pid"
[[ -z "$guest_pid" ]] || wait "$guest_pid"
# show_tier NAME LOG TITLE: show and count a tier that ran into its log
# (nothing when it was not asked for; a failure when it started
# and left no exit status).
show_tier() {
	local rc
	[[ -f "$2.time" ]] || return 0
	log "$3 ($(tr '\n' ' ' <"$2.time"))"
	cat "$2" 2>/dev/null
	rc=$(cat "$2.rc" 2>/dev/null) || rc=125
	if [[ "$1" == unit-asan ]]; then
		count_ctest "$1" "$2" # no summary line (crash, no run) fails it
	else
		count_bats "$1" "$2" "$rc"
	fi
}
show_tier rxe "$logdir/rxe.tap" "rxe tests in the SoftRoCE guest (five devices: rxe0 and two veth pairs)"
show_tier rxe-asan "$logdir/rxe-asan.tap" "the rxe tests of every line on the sanitizer build, in the guest (a sanitizer report fails it)"
show_tier unit-asan "$logdir/unit-asan.log" "unit tests on the sanitizer build"
show_tier cli "$logdir/cli.tap" "cli tests"
show_tier cli-asan "$logdir/cli-asan.tap" "cli tests on the sanitizer build"
show_tier fuzz "$logdir/fuzz.tap" "fuzz targets (libFuzzer, ASan, UBSan)"

echo
if ((${#skips_seen[@]})); then
	echo "skipped tests (the accepted ones are listed in tests/expected-skips):"
	printf '  %s\n' "${skips_seen[@]}"
fi
if ((${#failed_tests[@]})); then
	echo "failed tests:"
	printf '  %s\n' "${failed_tests[@]}"
fi
((${#failures[@]} == 0)) || echo "failed tiers: ${failures[*]}"
echo "suite time: $SECONDS s"
echo "rdmactl tests: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
