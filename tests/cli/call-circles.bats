#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# No two C files of libcore or cmds/ call into each other (a circle: A calls
# B and B calls A), read from the build's objects (tests/lib/call-circles.sh).
# A shared piece goes down into a file both call, or is passed in.

load helpers

# plant DIR: a scratch "build" whose layer folder holds two objects, a.c
# calling b.c's b() and, with a second argument, b.c calling a.c's a().
plant() {
	local d=$1/libcore/x/CMakeFiles/x.dir
	mkdir -p "$d"
	printf 'int b(void);\nint a(void) { return b(); }\n' >"$1/a.c"
	if [[ -n ${2:-} ]]; then
		printf 'int a(void);\nint b(void) { return a(); }\n' >"$1/b.c"
	else
		printf 'int b(void) { return 1; }\n' >"$1/b.c"
	fi
	cc -c -o "$d/a.c.o" "$1/a.c"
	cc -c -o "$d/b.c.o" "$1/b.c"
	mkdir -p "$1/cmds"
}

@test "the check names two files that call each other, and not a one-way call" {
	command -v cc >/dev/null || skip "no C compiler"
	command -v nm >/dev/null || skip "nm (binutils) is not installed"
	plant "$BATS_TEST_TMPDIR/circle" yes
	run "$ROOT/tests/lib/call-circles.sh" "$BATS_TEST_TMPDIR/circle"
	assert_success
	assert_output "x/a.c <-> x/b.c"
	plant "$BATS_TEST_TMPDIR/oneway"
	run "$ROOT/tests/lib/call-circles.sh" "$BATS_TEST_TMPDIR/oneway"
	assert_success
	assert_output ""
}

@test "no two files of libcore or cmds/ call into each other" {
	local build=${RDMACTL_BUILD_DIR:-$ROOT/build}
	command -v nm >/dev/null || skip "nm (binutils) is not installed"
	[[ -d $build/libcore && -d $build/cmds ]] || fail "no build at $build: build first"
	run "$ROOT/tests/lib/call-circles.sh" "$build"
	assert_success
	[[ -z $output ]] || fail "files that call into each other:
$output"
	# the check read the objects (a moved build layout must move this test)
	find "$build/libcore" "$build/cmds" -path '*/CMakeFiles/*.dir/*' -name '*.c.o' | grep -q .
}
