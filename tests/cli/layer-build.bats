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

@test "every layer of libcore, and the commands, have a link check in the build" {
	local b=${RDMACTL_BUILD_DIR:-$ROOT/build} layer missing=
	[[ -d $b/libcore/layer-links ]] || fail "no $b/libcore/layer-links: build first"
	for layer in "$ROOT"/libcore/*/CMakeLists.txt; do
		layer=$(basename "$(dirname "$layer")")
		[[ -x $b/libcore/layer-links/rdmacore_${layer}_links ]] || missing+=" $layer"
	done
	[[ -x $b/libcore/layer-links/rdmacmds_links ]] || missing+=" cmds"
	[ -z "$missing" ] || fail "no link check for:$missing"
}
