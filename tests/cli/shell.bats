#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl shell through tmux, with commands that need no RDMA device. The
# data-moving shell test is tests/rxe/shell.bats.

load helpers
load tmux

setup() {
	require_binary
}

teardown() {
	shell_stop
	common_teardown
}

@test "runs commands, survives errors, completes, keeps history" {
	shell_start
	type_line version
	wait_for "rdmactl 0.1.0"
	type_line write
	wait_for "rdmactl: write: in the shell, give --file FILE or --pattern PATTERN"
	type_line 'write 198.18.0.1:7471/kv --size'
	wait_for "rdmactl: write: option '--size' needs an argument"
	type_line 'help write'
	wait_for "Usage: rdmactl write [OPTIONS] TARGET"
	type_text 'wri'
	keys Tab
	wait_cursor_line "rdmactl> write "
	type_text '--pat'
	keys Tab
	wait_cursor_line "rdmactl> write --pattern "
	type_text 'se'
	keys Tab
	wait_cursor_line "rdmactl> write --pattern seq "
	keys C-u
	type_line version
	assert_equal "$(screen | grep -c '^rdmactl 0.1.0$')" 2
	type_text exit
	keys Enter
	wait_for "EXITED 0"
	run cat "$HIST"
	assert_line --index 0 version
	assert_line --index 1 write
	assert_line --index 2 'write 198.18.0.1:7471/kv --size'
	assert_line --index 3 'help write'
	assert_line --index 4 version
	assert_line --index 5 exit
}

@test "bad input: quotes, unknown commands, shell commands with nothing served" {
	shell_start
	type_line "help 'write"
	wait_for "rdmactl: unterminated single quote"
	type_line 'bogus --x'
	wait_for "rdmactl: unknown command 'bogus' (see 'help')"
	type_line regions
	wait_for "no regions served here"
	type_line 'unregister kv'
	wait_for "rdmactl: no region named 'kv' is served here (see 'regions')"
	type_line unregister
	wait_for "rdmactl: unregister: give region names or --all"
	type_line 'unregister --all'
	type_line shell
	wait_for "rdmactl: shell: already in the shell"
	type_line 'read 198.18.0.1/kv'
	wait_for "rdmactl: read: refusing to write binary data to a terminal"
	type_line '   '
	type_line '# just a comment'
	type_text 'help \'
	keys Enter
	wait_cursor_line '> ' # the continuation prompt, alone on the line
	type_text version
	keys Enter
	wait_for "Usage: rdmactl version"
	type_line help
	wait_for "unregister       stop serving regions"
	keys C-d
	wait_for "EXITED 0"
}

@test "Ctrl-C drops the typed line, the shell goes on" {
	shell_start
	type_text 'write --pattern'
	wait_for "rdmactl> write --pattern"
	keys C-c
	wait_prompts 2
	type_line version
	wait_for "rdmactl 0.1.0"
	type_text quit
	keys Enter
	wait_for "EXITED 0"
}

@test "history is read at start: Up recalls it" {
	HIST="$BATS_TEST_TMPDIR/old_history"
	printf '%s\n' 'help read' >"$HIST"
	shell_start
	keys Up
	wait_cursor_line "rdmactl> help read"
	keys Enter
	wait_for "Usage: rdmactl read [OPTIONS] TARGET"
	keys C-d
	wait_for "EXITED 0"
}

@test "-j: one document per command, errors included" {
	SHELL_GLOBALS=-j shell_start
	type_line version
	wait_for '{"schema_version":2,"version":"0.1.0"}'
	type_line regions
	wait_for '{"schema_version":2,"regions":[]}'
	type_line write
	wait_for '"code":"EINVAL"'
	keys C-d
	wait_for "EXITED 0"
}

@test "regions and unregister exist only in the shell" {
	run "$RDMACTL" regions
	assert_failure 2
	assert_output "rdmactl: 'regions' works only inside 'rdmactl shell'"
	run "$RDMACTL" unregister --all
	assert_failure 2
}

@test "commands piped in: no terminal, still one dispatcher, and the end of input ends it" {
	run timeout 10 bash -c "printf 'version\nwrite\nhelp \\\\\nversion\n' | RDMACTL_HISTORY= '$RDMACTL' shell"
	assert_success
	assert_line "rdmactl 0.1.0"
	assert_line "rdmactl: write: in the shell, give --file FILE or --pattern PATTERN"
	assert_line "Usage: rdmactl version"
}

@test "a history file that cannot be created is reported, the shell runs" {
	run timeout 10 bash -c "echo version | RDMACTL_HISTORY=/nonexistent/dir/h '$RDMACTL' shell"
	assert_success
	assert_line "rdmactl: cannot create the history file '/nonexistent/dir/h': No such file or directory"
	assert_line "rdmactl 0.1.0"
}

@test "a terminal gets a banner; help there lists no second shell" {
	shell_start
	wait_for "rdmactl shell: 'help' lists the commands"
	type_line help
	wait_for "exit, quit"
	run screen
	refute_line --regexp '^  shell '
	assert_line --regexp '^  regions '
	keys C-d
	wait_for "EXITED 0"
}

@test "piped into -j shell: the output is JSON only, no prompt, no echo" {
	run timeout 10 bash -c "printf 'version\nwrite\nregions\n' | RDMACTL_HISTORY= '$RDMACTL' -j shell 2>/dev/null"
	assert_success
	[ "${#lines[@]}" -eq 3 ] || fail "expected 3 documents, got: $output"
	for l in "${lines[@]}"; do
		jq -e . <<<"$l" >/dev/null || fail "not JSON: $l"
	done
	refute_output --partial "rdmactl>"
}

@test "exit N leaves with status N; a bad N is an error and the shell goes on" {
	run timeout 10 bash -c "printf 'version\nexit 3\nversion\n' | RDMACTL_HISTORY= '$RDMACTL' shell"
	assert_failure 3
	assert_output "rdmactl 0.1.0"
	run timeout 10 bash -c "printf 'exit 300\nquit x\nversion\n' | RDMACTL_HISTORY= '$RDMACTL' shell 2>&1"
	assert_success
	assert_line "rdmactl: exit: expected no argument or a status from 0 to 255"
	assert_line "rdmactl: quit: expected no argument or a status from 0 to 255"
	assert_line "rdmactl 0.1.0"
	run timeout 10 bash -c "printf 'exit 0\n' | RDMACTL_HISTORY= '$RDMACTL' shell"
	assert_success
}
