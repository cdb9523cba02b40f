#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The build lists its files by name (no globs): every source, unit test, man
# page and schema in the tree is named in its folder's CMakeLists.txt, so a
# file added without it fails here instead of being left out of the build or
# the install.

load helpers
# bats file_tags=source-only

# unlisted ROOT: "PATH" for each file under ROOT that its CMakeLists.txt
# does not name (libcore's layers, cmds/, cli/, tests/unit/test_*.c, man/,
# schemas/).
unlisted() {
	local root=$1 f dir name list
	for f in "$root"/libcore/*/*.c "$root"/cmds/*.c "$root"/cmds/*/*.c "$root"/cli/*.c \
		"$root"/tests/unit/test_*.c "$root"/man/*.8 "$root"/schemas/*.schema.json; do
		[[ -f $f ]] || continue
		dir=${f%/*} name=${f##*/}
		# cmds/ lists its subfolders' files from cmds/CMakeLists.txt
		list=$dir/CMakeLists.txt
		if [[ ! -f $list && -f ${dir%/*}/CMakeLists.txt ]]; then
			list=${dir%/*}/CMakeLists.txt name=${dir##*/}/$name
		fi
		[[ $name == test_*.c ]] && name=${name%.c}
		grep -qE "(^|[[:space:](])${name//./\\.}([[:space:])]|$)" "$list" 2>/dev/null || echo "${f#"$root"/}"
	done
}

@test "every source, unit test, man page and schema is named in its CMakeLists.txt" {
	run unlisted "$ROOT"
	assert_success
	assert_output ""
}

@test "the check names a file its CMakeLists.txt does not list" {
	local t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t/cmds/kvxfer" "$t/tests/unit" "$t/man"
	printf 'set(RDMACTL_CMD_SOURCES\n  a.c kvxfer/b.c)\n' >"$t/cmds/CMakeLists.txt"
	printf 'set(RDMACTL_UNIT_TESTS test_a)\n' >"$t/tests/unit/CMakeLists.txt"
	printf 'set(RDMACTL_MAN_PAGES x.8)\n' >"$t/man/CMakeLists.txt"
	touch "$t/cmds/a.c" "$t/cmds/kvxfer/b.c" "$t/tests/unit/test_a.c" "$t/man/x.8"
	run unlisted "$t"
	assert_output ""
	touch "$t/cmds/c.c" "$t/cmds/kvxfer/d.c" "$t/tests/unit/test_ab.c" "$t/man/y.8" "$t/cmds/a.cc.c"
	run unlisted "$t"
	assert_equal "$(sort <<<"$output")" "$(printf '%s\n' cmds/a.cc.c cmds/c.c cmds/kvxfer/d.c man/y.8 tests/unit/test_ab.c | sort)"
}
