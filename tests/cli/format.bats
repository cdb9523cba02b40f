#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Every C file of the tree is as the root .clang-format makes it
# (clang-format 14, Debian 12's; tests/deps.sh installs it). After a change:
#   git ls-files '*.c' '*.h' | xargs clang-format -i

load helpers
# bats file_tags=source-only

setup() {
	command -v clang-format >/dev/null ||
		fail "clang-format is not installed: tests/deps.sh installs it"
}

teardown() {
	common_teardown
}

# c_files: the C sources and headers of the tree, build folders left out.
c_files() {
	find "$ROOT/cli" "$ROOT/cmds" "$ROOT/libcore" "$ROOT/tests" "$ROOT/examples" \
		-name '*.[ch]' -type f | sort
}

@test "every C file is as the root .clang-format formats it" {
	local files
	mapfile -t files < <(c_files)
	((${#files[@]} > 150)) || fail "only ${#files[@]} C files found under $ROOT"
	run clang-format --style=file --dry-run --Werror "${files[@]}"
	assert_success
	assert_output ""
}

@test "the check fails a file that is not formatted, and names it" {
	local d=$BATS_TEST_TMPDIR/tree
	mkdir -p "$d"
	cp "$ROOT/.clang-format" "$d/"
	printf 'int f(int a)\n{\n\treturn a;\n}\n' >"$d/good.c"
	printf 'int f(int a) {  return a; }\n' >"$d/bad.c"
	run clang-format --style=file --dry-run --Werror "$d/good.c"
	assert_success
	run clang-format --style=file --dry-run --Werror "$d/good.c" "$d/bad.c"
	assert_failure
	assert_output --partial "bad.c:1:"
	refute_output --partial "good.c"
}
