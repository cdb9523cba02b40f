#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# libcore's layers are CMake targets that link only the layers below them
# (libcore/CMakeLists.txt): a file planted in a layer (RDMACTL_PLANT, in a
# scratch build of the tree) that includes a header of a layer above it, or
# calls a function of one, fails the build; the tree as it is, and a planted
# file that includes and calls downward, build. The layer is base, the
# cheapest to build (its link check, rdmacore_base_links, links base's
# objects alone).

load helpers
# bats file_tags=source-only

setup_file() {
	export SCRATCH=$BATS_FILE_TMPDIR/build
}

teardown() {
	common_teardown
}

# plant_build FILE: the scratch build with FILE planted in base (none when
# FILE is empty), built up to base's link check.
plant_build() {
	cmake -S "$ROOT" -B "$SCRATCH" -DRDMACTL_TESTS=OFF -DRDMACTL_CUDA=OFF \
		-DRDMACTL_PLANT="$1" -DRDMACTL_PLANT_LAYER=base >/dev/null &&
		cmake --build "$SCRATCH" --target rdmacore_base_links -j 2 2>&1
}

@test "the tree as it is builds base's link check" {
	command -v cmake >/dev/null || fail "cmake is not installed"
	run plant_build ""
	assert_success
	[[ -x $SCRATCH/libcore/layer-links/rdmacore_base_links ]] || fail "no link check was built: $output"
}

@test "a file planted in base that includes and calls within base builds" {
	printf '#include <rdmactl/parse.h>\nint rc_plant(void);\nint rc_plant(void)\n{\n\tuint64_t v;\n\treturn rc_parse_size("4K", &v);\n}\n' \
		>"$BATS_TEST_TMPDIR/down.c"
	run plant_build "$BATS_TEST_TMPDIR/down.c"
	assert_success
}

@test "a planted upward include (base including verbs' rdmactl/ops.h) fails the build" {
	printf '#include <rdmactl/ops.h>\nint rc_plant(void);\nint rc_plant(void)\n{\n\treturn 0;\n}\n' \
		>"$BATS_TEST_TMPDIR/up_include.c"
	run plant_build "$BATS_TEST_TMPDIR/up_include.c"
	assert_failure
	assert_output --partial "rdmactl/ops.h"
}

@test "a planted upward call (base calling verbs' rc_wr_build, declared by hand) fails the build" {
	printf 'void rc_wr_build(void);\nint rc_plant(void);\nint rc_plant(void)\n{\n\trc_wr_build();\n\treturn 0;\n}\n' \
		>"$BATS_TEST_TMPDIR/up_call.c"
	run plant_build "$BATS_TEST_TMPDIR/up_call.c"
	assert_failure
	assert_output --regexp "undefined reference to .rc_wr_build"
}

@test "every layer of libcore, the commands and their framework have a link check in the build" {
	local b=${RDMACTL_BUILD_DIR:-$ROOT/build} layer missing=
	[[ -d $b/libcore/layer-links ]] || fail "no $b/libcore/layer-links: build first"
	for layer in "$ROOT"/libcore/*/CMakeLists.txt; do
		layer=$(basename "$(dirname "$layer")")
		[[ -x $b/libcore/layer-links/rdmacore_${layer}_links ]] || missing+=" $layer"
	done
	[[ -x $b/libcore/layer-links/rdmacmds_links ]] || missing+=" cmds"
	[[ -x $b/libcore/layer-links/rdmacmds_framework_links ]] || missing+=" cmds/framework"
	[ -z "$missing" ] || fail "no link check for:$missing"
}

# The framework (cmds/framework/) is a target of its own below the commands
# (cmds/CMakeLists.txt). These two read the build as it is (cheap: no
# scratch build of libcore): the flags its target compiles with, and its
# objects with the link check's main and tables.

# framework_cc BUILD ARGS...: cc with the framework target's include flags.
framework_cc() {
	local b=$1 flags
	shift
	flags=$b/cmds/CMakeFiles/rdmacmds_framework.dir/flags.make
	[[ -f $flags ]] || fail "no $flags (the cli tier reads a Makefile build)"
	# shellcheck disable=SC2046 # the flags are words
	cc $(sed -n 's/^C_INCLUDES = //p' "$flags") "$@"
}

@test "the framework compiles against its own headers and libcore's: a command's header included from it fails" {
	local b=${RDMACTL_BUILD_DIR:-$ROOT/build} t=$BATS_TEST_TMPDIR
	printf '#include <rdmactl/parse.h>\n#include "cmd.h"\nint f(void);\n' >"$t/down.c"
	printf '#include "client_cmds.h"\nint f(void);\n' >"$t/up.c"
	run framework_cc "$b" -fsyntax-only "$t/down.c"
	assert_success
	run framework_cc "$b" -fsyntax-only "$t/up.c"
	assert_failure
	assert_output --partial "client_cmds.h"
}

@test "the framework's objects link alone with its tables; a call up into a command fails to link" {
	local b=${RDMACTL_BUILD_DIR:-$ROOT/build} t=$BATS_TEST_TMPDIR objs lib
	objs=("$b"/cmds/CMakeFiles/rdmacmds_framework.dir/framework/*.c.o
		"$b"/cmds/CMakeFiles/rdmacmds_framework_links.dir/framework_links.c.o)
	lib=$b/libcore/librdmacore.so
	[[ -f ${objs[-1]} && -e $lib ]] || fail "no framework link check or library in $b: build first"
	printf 'void client_args_parse(void);\nint f(void);\nint f(void)\n{\n\tclient_args_parse();\n\treturn 0;\n}\n' >"$t/up_call.c"
	run framework_cc "$b" -c -o "$t/up_call.o" "$t/up_call.c"
	assert_success
	# shellcheck disable=SC2046 # pkg-config's words
	run cc -o "$t/alone" "${objs[@]}" "$lib" -Wl,--allow-shlib-undefined $(pkg-config --libs jansson) -lpthread -lm
	assert_success
	# shellcheck disable=SC2046
	run cc -o "$t/up" "${objs[@]}" "$t/up_call.o" "$lib" -Wl,--allow-shlib-undefined $(pkg-config --libs jansson) -lpthread -lm
	assert_failure
	assert_output --regexp "undefined reference to .client_args_parse"
}
