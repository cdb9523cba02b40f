#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The layers hold: the command line (cli/) and the commands (cmds/) reach
# verbs and rdma_cm only through libcore, never on their own.

load helpers

# verbs_uses DIR...: every line of C under DIR that names an ibv_* or rdma_*
# function, type or constant, or includes a verbs or rdma_cm header.
verbs_uses() {
	grep -rnE --include='*.c' --include='*.h' \
		'\b(ibv|rdma)_[A-Za-z0-9_]+|#[[:space:]]*include[[:space:]]*<(infiniband|rdma)/' "$@" || true
}

@test "the check finds a verbs call where there is one" {
	mkdir -p "$BATS_TEST_TMPDIR/planted"
	printf '#include <infiniband/verbs.h>\nint f(void) { return ibv_fork_init(); }\nvoid g(struct rdma_cm_id *id) { rdma_disconnect(id); }\n' \
		>"$BATS_TEST_TMPDIR/planted/x.c"
	run verbs_uses "$BATS_TEST_TMPDIR/planted"
	[ "${#lines[@]}" -eq 3 ]
}

@test "nothing under cmds/ or cli/ calls ibv_* or rdma_* or includes their headers" {
	run verbs_uses "$ROOT/cmds" "$ROOT/cli"
	[ -z "$output" ] || fail "verbs or rdma_cm used outside libcore:
$output"
	# The directories are really there (a moved tree must move this test too).
	ls "$ROOT"/cmds/*.c "$ROOT"/cli/*.c >/dev/null
}
