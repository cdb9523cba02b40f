#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Code that reads in one sitting (issue #24): no function over 80 lines and
# no file over 600 lines in libcore/, cmds/ and cli/ (tests/lib/sizes.awk).

load helpers
# bats file_tags=source-only

@test "no function over 80 lines and no file over 600 lines outside the tests" {
	local files
	mapfile -t files < <(cd "$ROOT" && git ls-files 'libcore/*.[ch]' 'cmds/*.[ch]' 'cli/*.[ch]' 2>/dev/null ||
		find libcore cmds cli -name '*.[ch]')
	[ "${#files[@]}" -gt 50 ]
	cd "$ROOT"
	run awk -f tests/lib/sizes.awk "${files[@]}"
	assert_success
	assert_output ""
}

@test "the check names a function of 81 lines and a file of 601, and passes 80 and 600" {
	local t=$BATS_TEST_TMPDIR
	{ printf 'static int long_one(void)\n{\n'; for ((i = 0; i < 81; i++)); do printf '\tx();\n'; done; printf '}\n'; } >"$t/a.c"
	{ printf 'static int fits(void)\n{\n'; for ((i = 0; i < 80; i++)); do printf '\tx();\n'; done; printf '}\n'; } >"$t/b.c"
	for ((i = 0; i < 601; i++)); do echo "/* $i */"; done >"$t/c.c"
	head -n 600 "$t/c.c" >"$t/d.c"
	run awk -f "$ROOT/tests/lib/sizes.awk" "$t/a.c" "$t/b.c" "$t/c.c" "$t/d.c"
	assert_failure 1
	assert_line "$t/a.c:2: function static int long_one: 81 lines (at most 80)"
	assert_line "$t/c.c: 601 lines (at most 600)"
	refute_output --partial "b.c"
	refute_output --partial "d.c"
	run awk -f "$ROOT/tests/lib/sizes.awk" "$t/b.c" "$t/d.c"
	assert_success
	assert_output ""
}
