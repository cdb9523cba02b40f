# SPDX-License-Identifier: MIT
# Every test stops what it started in teardown, so that a failed assertion
# leaves nothing running: a process left behind holds bats' fd 3, and bats
# (the whole tier with it) waits for it to end. tests/lib/bats-lint.awk
# checks that a bats file's own teardown calls common_teardown.
#   started PID...   a process the test started in the background: teardown
#                    stops it (a test that reaps it itself may leave it)
#   common_teardown  stops them, then what the loaded helpers started (the
#                    rxe helpers' server, the etcd of tests/lib/etcd.bash),
#                    and fails on the sanitizer's reports (tests/lib/common.bash)
# No forks: bats runs this for every test.

STARTED=()

started() {
	STARTED+=("$@")
}

# stop_started: SIGTERM to each process in STARTED (the rdmactl wrapper's
# timeout passes it on, where a SIGKILL would leave its rdmactl running),
# SIGKILL to those left after 10 s, and reap them.
stop_started() {
	local p i alive
	((${#STARTED[@]})) || return 0
	for p in "${STARTED[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for ((i = 0; i < 100; i++)); do
		alive=0
		for p in "${STARTED[@]}"; do
			if kill -0 "$p" 2>/dev/null; then
				alive=1
				break
			fi
		done
		((alive)) || break
		sleep 0.1
	done
	for p in "${STARTED[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	# only these: a bare `wait` would also wait for bats' BATS_TEST_TIMEOUT watchdog
	for p in "${STARTED[@]}"; do wait "$p" 2>/dev/null || true; done
	STARTED=()
}

# common_teardown: call it from every teardown, last. Its status is the
# sanitizer check's.
common_teardown() {
	stop_started
	if declare -F stop_server >/dev/null; then stop_server TERM; fi
	if declare -F stop_etcd >/dev/null; then stop_etcd; fi
	if [[ -n "${GCOV_PREFIX:-}" ]]; then mkdir -p "$GCOV_PREFIX" && printf '%s\n' "$BATS_TEST_DESCRIPTION" >"$GCOV_PREFIX/name"; fi
	if declare -F sanitizer_reports >/dev/null; then sanitizer_reports; fi
}
