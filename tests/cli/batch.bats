#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl -b FILE: commands that need no RDMA device.

load helpers

setup() {
	require_binary
	F="$BATS_TEST_TMPDIR/cmds"
}

@test "runs every line: comments, blank lines, quotes, escapes, continuations" {
	cat >"$F" <<'CMDS'
# a comment line
version   # and a trailing comment

help "wr"'ite'
help \
    re\ad
   help 'atomic' \
# ends the continued command above
CMDS
	run --separate-stderr "$RDMACTL" -b "$F"
	assert_success
	assert_equal "$stderr" ""
	assert_line "rdmactl 0.1.0"
	assert_line "Usage: rdmactl write [OPTIONS] TARGET"
	assert_line "Usage: rdmactl read [OPTIONS] TARGET"
	assert_line "Usage: rdmactl atomic [OPTIONS] TARGET"
}

@test "a quoted word keeps its blanks" {
	printf '%s\n' 'help "no such"' >"$F"
	run --separate-stderr "$RDMACTL" -b "$F"
	assert_failure 1
	assert_equal "$stderr" "rdmactl: $F:1: unknown command 'no such' (see 'rdmactl help')"
}

@test "the first failure stops the batch with FILE:LINE before the error" {
	printf '%s\n' version '' write version >"$F"
	run --separate-stderr "$RDMACTL" -b "$F"
	assert_failure 1
	assert_output "rdmactl 0.1.0"
	assert_equal "$stderr" "rdmactl: $F:3: write: give exactly one target, HOST:PORT/REGION (see 'rdmactl write --help')"
}

@test "a continued command is reported at its first line" {
	printf '%s\n' version 'write \' '  --size 4K' >"$F"
	run --separate-stderr "$RDMACTL" -b "$F"
	assert_failure 1
	assert_equal "$stderr" "rdmactl: $F:2: write: give exactly one target, HOST:PORT/REGION (see 'rdmactl write --help')"
}

@test "--force goes on after failures and exits 1 at the end" {
	printf '%s\n' write version 'bogus' version >"$F"
	run --separate-stderr "$RDMACTL" --force -b "$F"
	assert_failure 1
	assert_equal "$output" "$(printf 'rdmactl 0.1.0\nrdmactl 0.1.0')"
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[1]}" "rdmactl: $F:3: unknown command 'bogus' (see 'rdmactl help')"
}

@test "a clean batch exits 0, an empty one too" {
	printf '%s\n' version version >"$F"
	run "$RDMACTL" -b "$F"
	assert_success
	: >"$F"
	run "$RDMACTL" -b "$F"
	assert_success
	assert_output ""
}

@test "syntax errors are failures: unterminated quote, continuation at the end" {
	printf '%s\n' 'help "write' >"$F"
	run --separate-stderr "$RDMACTL" -b "$F"
	assert_failure 1
	assert_equal "$stderr" "rdmactl: $F:1: unterminated double quote"
	printf '%s\n' version 'version \' >"$F"
	run --separate-stderr "$RDMACTL" -b "$F"
	assert_failure 1
	assert_equal "$stderr" "rdmactl: $F:2: a backslash continues the last line past the end of the file"
}

@test "-j prints one JSON array of {command, line, output}" {
	printf '%s\n' '# head' version 'help write' write version >"$F"
	run --separate-stderr "$RDMACTL" -j --force -b "$F"
	assert_failure 1
	assert_equal "$stderr" ""
	echo "$output" | jq -e '
		type == "array" and length == 4
		and .[0] == {"command": ["version"], "line": 2,
			     "output": {"schema_version": 2, "version": "0.1.0"}}
		and .[1].command == ["help", "write"]
		and (.[1].output.command.options | map(.name) | index("pattern")) != null
		and .[2].command == ["write"] and .[2].line == 4
		and .[2].output.error.code == "EINVAL" and .[2].output.error.errno == 22
		and .[3].output.version == "0.1.0"'
}

@test "-j without --force stops at the failure, still one array" {
	printf '%s\n' version write version >"$F"
	run --separate-stderr "$RDMACTL" -p -b "$F"
	assert_failure 1
	echo "$output" | jq -e 'length == 2 and .[1].output.error.message != null'
}

@test "-b - reads the commands from stdin" {
	run --separate-stderr bash -c "printf 'version\nwrite\n' | '$RDMACTL' -b -"
	assert_failure 1
	assert_output "rdmactl 0.1.0"
	assert_equal "$stderr" "rdmactl: stdin:2: write: give exactly one target, HOST:PORT/REGION (see 'rdmactl write --help')"
}

@test "usage: a command line beside -b, --force alone, the shell in a batch" {
	printf '%s\n' version >"$F"
	run "$RDMACTL" -b "$F" version
	assert_failure 2
	run "$RDMACTL" --force version
	assert_failure 2
	assert_output "rdmactl: --force goes with --batch FILE"
	printf '%s\n' shell >"$F"
	run --separate-stderr "$RDMACTL" -b "$F"
	assert_failure 1
	assert_equal "$stderr" "rdmactl: $F:1: shell: not available here (in a batch?)"
}

@test "a missing batch file is a failure" {
	run "$RDMACTL" -b "$BATS_TEST_TMPDIR/none"
	assert_failure 1
	assert_output "rdmactl: --batch '$BATS_TEST_TMPDIR/none': No such file or directory"
	run "$RDMACTL" -j -b "$BATS_TEST_TMPDIR/none"
	assert_failure 1
	echo "$output" | jq -e '.error.code == "ENOENT"'
}
