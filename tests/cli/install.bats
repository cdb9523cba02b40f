#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# cmake --install into a staging prefix: the program, the library with its
# pkg-config file and headers, the man pages and both completions.

load helpers

setup() {
	# The build under test: run-all sets RDMACTL_BUILD_DIR (the plain or the
	# sanitizer build), as every other tier reads it.
	BUILD="${RDMACTL_BUILD_DIR:-$ROOT/build}"
	[[ -f $BUILD/CMakeCache.txt ]] || skip "no configured build tree at $BUILD (set RDMACTL_BUILD_DIR)"
	command -v cmake >/dev/null || skip "cmake is not installed"
	STAGE="$BATS_TEST_TMPDIR/stage"
	LIBDIR=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$BUILD/CMakeCache.txt")
	run cmake --install "$BUILD" --prefix "$STAGE"
	assert_success
}

@test "the program and the library" {
	[[ -x $STAGE/bin/rdmactl ]] || fail "no bin/rdmactl"
	compgen -G "$STAGE/$LIBDIR/librdmacore.so*" >/dev/null || fail "no $LIBDIR/librdmacore.so*"
	[[ -L $STAGE/$LIBDIR/librdmacore.so ]] || fail "no librdmacore.so development link"
	# No LD_LIBRARY_PATH: the program finds its library by its own run path.
	run "$STAGE/bin/rdmactl" version
	assert_success
	assert_output --regexp '^rdmactl [0-9]+\.[0-9]+\.[0-9]+$'
	# The staged program is the one of this build: linked with the
	# sanitizer runtime exactly when the build has RDMACTL_SANITIZE on.
	run readelf -d "$STAGE/bin/rdmactl"
	assert_success
	if grep -qE '^RDMACTL_SANITIZE:BOOL=ON$' "$BUILD/CMakeCache.txt"; then
		assert_output --partial libasan
	else
		refute_output --partial libasan
	fi
}

@test "headers and pkg-config: a program builds against the staged library" {
	command -v pkg-config >/dev/null || skip "pkg-config is not installed"
	for h in "$ROOT"/libcore/include/rdmactl/*.h; do
		[[ -f $STAGE/include/rdmactl/${h##*/} ]] || fail "no include/rdmactl/${h##*/}"
	done
	export PKG_CONFIG_PATH="$STAGE/$LIBDIR/pkgconfig"
	run pkg-config --cflags --libs rdmacore
	assert_success
	assert_output --partial -lrdmacore
	# No --define-prefix: the .pc file names the staged tree by itself, and
	# only our own flags (none of libibverbs' libnl).
	run pkg-config --cflags rdmacore
	assert_success
	# one flag, naming the staged include folder
	[[ $output =~ ^-I([^[:space:]]+)[[:space:]]*$ ]] || fail "cflags: $output"
	[[ $(realpath "${BASH_REMATCH[1]}") == "$(realpath "$STAGE/include")" ]] || fail "cflags name ${BASH_REMATCH[1]}, not $STAGE/include"
	flags=$(pkg-config --cflags --libs rdmacore)
	libdir=$(pkg-config --variable=libdir rdmacore)
	[[ $(realpath "$libdir") == "$(realpath "$STAGE/$LIBDIR")" ]] || fail "libdir $libdir is not the staged $STAGE/$LIBDIR"
	cat >"$BATS_TEST_TMPDIR/t.c" <<'C'
#include <stdio.h>
#include <rdmactl/rdmactl.h>
int main(void) { uint64_t n; puts(rc_version()); return rc_parse_size("4K", &n) || n != 4096; }
C
	# A library built with the sanitizers needs their runtime first in the
	# program that loads it: the program is built with them too.
	san=()
	if ldd "$STAGE/$LIBDIR/librdmacore.so" | grep -q libasan; then
		san=(-fsanitize=address,undefined)
	fi
	# shellcheck disable=SC2086
	run cc "${san[@]}" -o "$BATS_TEST_TMPDIR/t" "$BATS_TEST_TMPDIR/t.c" $flags -Wl,-rpath,"$libdir"
	assert_success
	run "$BATS_TEST_TMPDIR/t"
	assert_success
	# the umbrella header holds the whole API; rc_version() is the package's
	assert_output "$(pkg-config --modversion rdmacore)"
}

@test "the handles are opaque: a program reads them through their calls and cannot look inside" {
	command -v pkg-config >/dev/null || skip "pkg-config is not installed"
	export PKG_CONFIG_PATH="$STAGE/$LIBDIR/pkgconfig"
	flags=$(pkg-config --cflags --libs rdmacore)
	# Linked, not run: every accessor the commands use is there to call.
	cat >"$BATS_TEST_TMPDIR/use.c" <<'C'
#include <stdio.h>
#include <rdmactl/rdmactl.h>
int main(int argc, char **argv)
{
	const struct rc_listener *l = NULL;
	struct rc_client *cl = NULL;
	struct rc_rails *r = NULL;
	int n = 0;
	(void)argv;
	if (argc > 99) {
		printf("%s %u %s %u\n", rc_listener_addr(l), rc_listener_port(l),
		       rc_listener_device(l), rc_listener_port_num(l));
		printf("%s %s\n", rc_client_region(cl)->name, rc_client_regions(cl, &n)->name);
		printf("%d %s\n", rc_rails_count(r), rc_client_peer(rc_rails_client(r, 0)));
	}
	return n;
}
C
	# shellcheck disable=SC2086
	run cc -Wall -Werror -o "$BATS_TEST_TMPDIR/use" "$BATS_TEST_TMPDIR/use.c" $flags
	assert_success
	local t
	for t in rc_conn rc_listener rc_client rc_rails; do
		printf '#include <rdmactl/rdmactl.h>\nint main(void) { return (int)sizeof(struct %s); }\n' "$t" >"$BATS_TEST_TMPDIR/$t.c"
		# shellcheck disable=SC2086
		run cc -c -o "$BATS_TEST_TMPDIR/$t.o" "$BATS_TEST_TMPDIR/$t.c" $flags
		assert_failure
		assert_output --partial "struct $t"
	done
}

@test "man pages and completions" {
	for f in "$ROOT"/man/*.8; do
		[[ -f $STAGE/share/man/man8/${f##*/} ]] || fail "no share/man/man8/${f##*/}"
	done
	[[ -f $STAGE/share/man/man8/rdmactl.8 ]]
	[[ -f $STAGE/share/bash-completion/completions/rdmactl ]] || fail "no bash completion"
	[[ -f $STAGE/share/zsh/vendor-completions/_rdmactl ]] || fail "no zsh completion"
}

@test "the JSON schemas, each one that the sources hold" {
	local f n=0
	for f in "$ROOT"/schemas/*.schema.json; do
		cmp -s "$f" "$STAGE/share/rdmactl/schemas/${f##*/}" || fail "no share/rdmactl/schemas/${f##*/} as in the sources"
		n=$((n + 1))
	done
	((n > 15)) || fail "only $n schemas in $ROOT/schemas"
	[[ -f $STAGE/share/rdmactl/schemas/README.md ]] || fail "no share/rdmactl/schemas/README.md"
}

@test "a relocated tree: the program and pkg-config follow the copy, not the prefix" {
	command -v pkg-config >/dev/null || skip "pkg-config is not installed"
	cp -a "$STAGE" "$BATS_TEST_TMPDIR/moved"
	rm -rf "$STAGE"
	run "$BATS_TEST_TMPDIR/moved/bin/rdmactl" version
	assert_success
	assert_output --regexp '^rdmactl [0-9]+\.[0-9]+\.[0-9]+$'
	run env PKG_CONFIG_PATH="$BATS_TEST_TMPDIR/moved/$LIBDIR/pkgconfig" pkg-config --variable=libdir rdmacore
	assert_success
	[[ $(realpath "$output") == "$(realpath "$BATS_TEST_TMPDIR/moved/$LIBDIR")" ]] || fail "libdir $output is not the moved tree's"
}
