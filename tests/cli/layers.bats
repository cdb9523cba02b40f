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
	ls "$ROOT"/cmds/*.c "$ROOT"/cmds/framework/*.c "$ROOT"/cli/*.c >/dev/null
}

# libcore_options DIR: each option written in a C string under DIR, as
# "FILE:LINE: --option", less other tools' own (tar's, in a capture's
# unpacking; srun's and docker's, in the locked-memory fixes). libcore
# names a parameter by its field and the program names it (rc_err_opt,
# rc_param_name): rdmactl's options live in cmds/.
libcore_options() {
	grep -rnoE --include='*.c' --include='*.h' '"([^"\\]|\\.)*"' "$@" |
		awk '{
			s = $0
			sub(/^[^:]*:[0-9]+:/, "", s)
			at = substr($0, 1, length($0) - length(s))
			while (match(s, /--[a-z][a-z0-9-]+/)) {
				o = substr(s, RSTART, RLENGTH)
				s = substr(s, RSTART + RLENGTH)
				if (o !~ /^--(no-same-owner|no-same-permissions|propagate|ulimit)$/)
					print at " " o
			}
		}'
}

@test "the check finds an option written in a string, and not another tool's" {
	mkdir -p "$BATS_TEST_TMPDIR/planted"
	printf '%s\n' 'const char *a = "give --land-pages or {land}";' \
		'const char *t[] = { "tar", "--no-same-owner", "-x" };' 'int b = x--y;' \
		'const char *c = "a \"quoted\" --max-ring";' >"$BATS_TEST_TMPDIR/planted/x.c"
	run libcore_options "$BATS_TEST_TMPDIR/planted"
	assert_output "$BATS_TEST_TMPDIR/planted/x.c:1: --land-pages
$BATS_TEST_TMPDIR/planted/x.c:4: --max-ring"
}

@test "libcore writes no option of rdmactl's: a message names the parameter by its field, the program names it" {
	run libcore_options "$ROOT/libcore"
	assert_output ""
	ls "$ROOT"/libcore/base/err.c >/dev/null
}

# The functions the public headers mark RC_EXPORT, one a line, sorted.
public_api() {
	grep -h 'RC_EXPORT' "$ROOT"/libcore/include/rdmactl/*.h | grep -v '#define' |
		sed -E 's/\(.*//; s/.*[^A-Za-z0-9_]//' | sort -u
}

@test "librdmacore exports the public API and nothing else" {
	local lib=${RDMACTL_BUILD_DIR:-$ROOT/build}/libcore/librdmacore.so
	[[ -e $lib ]] || fail "no library at $lib: build first"
	command -v nm >/dev/null || skip "nm (binutils) is not installed"
	public_api >"$BATS_TEST_TMPDIR/public"
	nm -D --defined-only "$lib" | awk 'NF == 3 { print $3 }' | sort -u >"$BATS_TEST_TMPDIR/exported"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/public")" -gt 50 ] || fail "the public API list looks wrong"
	run comm -3 "$BATS_TEST_TMPDIR/public" "$BATS_TEST_TMPDIR/exported"
	[ -z "$output" ] || fail "declared public but not exported (left), or exported but not public (right):
$output"
}

# The public headers a layer's sources and private headers include.
layer_includes() {
	grep -rhoE '#[[:space:]]*include[[:space:]]*<rdmactl/[a-z0-9_]+\.h>' "$ROOT/libcore/$1" |
		sed -E 's/.*<rdmactl\/([a-z0-9_]+)\.h>/\1/' | sort -u
}

# layer_tables: owner[HEADER], the layer that owns each public header and
# each internal one (LAYER/NAME_core.h); may[LAYER], the layers (and headers)
# whose headers LAYER may include.
layer_tables() {
	local f
	# Which layer owns each public header.
	declare -gA owner=([err]=base [parse]=base [export]=base [sha256]=base [etcd]=base [version]=base [config]=base [fabric]=ofi [dev]=verbs [mem]=verbs
		[conn]=verbs [ops]=verbs [ctrl]=region [server]=region [client]=region
		[kv]=kv [topo]=topo [group]=group [a2a]=a2a [mcast]=mcast [migrate]=migrate [sweep]=sweep
		[preflight]=sweep
		[rdmactl]=umbrella)
	# An internal header belongs to the layer whose folder holds it.
	for f in "$ROOT"/libcore/*/*_core.h; do
		f=${f#"$ROOT"/libcore/}
		owner[$(basename "$f" .h)]=${f%%/*}
	done
	# but the control protocol (region/ctrl.c) is a layer of its own, ctrl,
	# that region and kv both link
	owner[ctrl]=ctrl
	owner[ctrl_core]=ctrl
	declare -gA may=([base]="base" [ofi]="base verbs ofi" [verbs]="base verbs" [ctrl]="base verbs ctrl"
		[region]="base verbs ctrl region"
		[kv]="base verbs ctrl kv" [topo]="base verbs topo" [group]="base verbs ofi group"
		[a2a]="base verbs ofi group a2a" [mcast]="base verbs ofi group mcast"
		[migrate]="base verbs ctrl region migrate"
		[sweep]="base verbs ofi topo group sweep"
		[umbrella]="base ofi verbs ctrl region kv topo group a2a mcast migrate sweep")
}

@test "libcore's layers depend one way: base <- verbs <- ofi, ctrl, topo; ofi <- group; ctrl <- region, kv; group <- a2a, mcast; topo, group <- sweep; region <- migrate" {
	local layer h allowed bad=
	layer_tables
	# rdmactl/rdmactl.h, the umbrella, includes every public header; no
	# layer includes it.
	# kv frames its control messages with the region protocol (ctrl, in
	# region/): rdmactl/ctrl.h (and its inside face, ctrl_core.h) alone, not
	# the region server or client.
	for layer in base ofi verbs region kv topo group a2a mcast migrate sweep; do
		[[ -d $ROOT/libcore/$layer ]] || fail "no libcore/$layer"
		for h in $(layer_includes "$layer"); do
			[[ -n ${owner[$h]:-} ]] || { bad+="$layer includes rdmactl/$h.h, which no layer owns"$'\n'; continue; }
			allowed=" ${may[$layer]} "
			[[ $allowed == *" ${owner[$h]} "* || $allowed == *" $h "* ]] || bad+="$layer includes rdmactl/$h.h (${owner[$h]})"$'\n'
		done
	done
	# Private headers stay in their folder.
	bad+=$(grep -rnE '#[[:space:]]*include[[:space:]]*"\.\./' "$ROOT/libcore" || true)
	# And the public headers follow the same order.
	for h in "$ROOT"/libcore/include/rdmactl/*.h; do
		local me=$(basename "$h" .h) dep
		for dep in $(grep -oE '<rdmactl/[a-z0-9_]+\.h>' "$h" | sed -E 's/<rdmactl\/([a-z0-9_]+)\.h>/\1/'); do
			allowed=" ${may[${owner[$me]}]} "
			[[ $allowed == *" ${owner[$dep]:-none} "* ]] || bad+="rdmactl/$me.h includes rdmactl/$dep.h"$'\n'
		done
	done
	[ -z "$bad" ] || fail "$bad"
}

# layer_flags BUILD LAYER: the include folders LAYER's sources compile
# against, as -I flags (its target's flags.make: its own include-LAYER/ and
# those of the layers it links, libcore/CMakeLists.txt).
layer_flags() {
	grep -ohE -- '-I[^ ]+' "$1"/libcore/*/CMakeFiles/rdmacore_"$2".dir/flags.make | sort -u
}

# layer_sees BUILD LAYER: the headers LAYER compiles against (the links in
# the include-*/rdmactl/ folders of its flags).
layer_sees() {
	local d f
	for d in $(layer_flags "$1" "$2"); do
		for f in "${d#-I}/rdmactl/"*.h; do
			[[ -e $f ]] || continue
			f=${f##*/}
			echo "${f%.h}"
		done
	done
}

@test "the build gives each layer only its own headers and those below: what it sees is what it may include" {
	local b=${RDMACTL_BUILD_DIR:-$ROOT/build} layer h bad= flags
	layer_tables
	for layer in base ofi verbs ctrl region kv topo group a2a mcast migrate sweep; do
		[[ -d $b/libcore/include-$layer/rdmactl ]] || { bad+="no $b/libcore/include-$layer"$'\n'; continue; }
		# it sees every header of its own
		for h in "${!owner[@]}"; do
			[[ ${owner[$h]} != "$layer" || -e $b/libcore/include-$layer/rdmactl/$h.h ]] ||
				bad+="$layer does not see its own rdmactl/$h.h"$'\n'
		done
		for h in $(layer_sees "$b" "$layer"); do
			[[ " ${may[$layer]} " == *" ${owner[$h]:-none} "* || " ${may[$layer]} " == *" $h "* ]] ||
				bad+="$layer sees rdmactl/$h.h (${owner[$h]:-owned by no layer})"$'\n'
		done
		# and its sources compile against that folder, not the whole API
		flags=$(echo "$b"/libcore/*/CMakeFiles/rdmacore_"$layer".dir/flags.make)
		[[ -f $flags ]] || { bad+="no flags.make for $layer (the cli tier reads a Makefile build)"$'\n'; continue; }
		if [[ -f $flags ]]; then
			grep -qE -- "-I$b/libcore/include-$layer( |$)" "$flags" || bad+="$layer is not compiled against include-$layer"$'\n'
			! grep -qE -- "-I$ROOT/libcore/include( |$)" "$flags" || bad+="$layer is compiled against the whole include/"$'\n'
		fi
	done
	[ -z "$bad" ] || fail "$bad"
}

@test "an upward include fails to compile in a layer, with the flags its target gives it; a downward one compiles" {
	local b=${RDMACTL_BUILD_DIR:-$ROOT/build}
	command -v cc >/dev/null || fail "no C compiler"
	[[ -d $b/libcore/include-verbs ]] || fail "no $b/libcore/include-verbs: configure first"
	local verbs kv
	verbs=$(layer_flags "$b" verbs)
	kv=$(layer_flags "$b" kv)
	[[ -n $verbs && -n $kv ]] || fail "no include flags for verbs or kv in $b"
	printf '#include <rdmactl/mem.h>\n#include <rdmactl/err.h>\nint f(void);\n' >"$BATS_TEST_TMPDIR/down.c"
	printf '#include <rdmactl/group.h>\nint f(void);\n' >"$BATS_TEST_TMPDIR/up.c"
	run cc -fsyntax-only $(pkg-config --cflags libibverbs 2>/dev/null) $verbs \
		"$BATS_TEST_TMPDIR/down.c"
	assert_success
	run cc -fsyntax-only $verbs "$BATS_TEST_TMPDIR/up.c"
	assert_failure
	assert_output --partial "rdmactl/group.h"
	# kv sees region's protocol header, not its server
	printf '#include <rdmactl/ctrl.h>\nint f(void);\n' >"$BATS_TEST_TMPDIR/kv_ctrl.c"
	printf '#include <rdmactl/server.h>\nint f(void);\n' >"$BATS_TEST_TMPDIR/kv_server.c"
	run cc -fsyntax-only $kv "$BATS_TEST_TMPDIR/kv_ctrl.c"
	assert_success
	run cc -fsyntax-only $kv "$BATS_TEST_TMPDIR/kv_server.c"
	assert_failure
	assert_output --partial "rdmactl/server.h"
	# The internal headers follow the same order: kv sees ctrl_core.h and
	# verbs' own, not the region server's inside face.
	printf '#include <rdmactl/ctrl_core.h>\n#include <rdmactl/ops_core.h>\nint f(void);\n' >"$BATS_TEST_TMPDIR/kv_in.c"
	printf '#include <rdmactl/server_core.h>\nint f(void);\n' >"$BATS_TEST_TMPDIR/kv_srv_in.c"
	run cc -fsyntax-only $(pkg-config --cflags libibverbs librdmacm 2>/dev/null) $kv \
		"$BATS_TEST_TMPDIR/kv_in.c"
	assert_success
	run cc -fsyntax-only $kv "$BATS_TEST_TMPDIR/kv_srv_in.c"
	assert_failure
	assert_output --partial "rdmactl/server_core.h"
	printf '#include <rdmactl/group_core.h>\nint f(void);\n' >"$BATS_TEST_TMPDIR/up_in.c"
	run cc -fsyntax-only $verbs "$BATS_TEST_TMPDIR/up_in.c"
	assert_failure
	assert_output --partial "rdmactl/group_core.h"
	# and the commands, which compile against the public headers only, see none
	printf '#include <rdmactl/ops_core.h>\nint f(void);\n' >"$BATS_TEST_TMPDIR/cmd_in.c"
	run cc -fsyntax-only -I "$ROOT/libcore/include" "$BATS_TEST_TMPDIR/cmd_in.c"
	assert_failure
	assert_output --partial "rdmactl/ops_core.h"
}

# internal_decls HEADER...: each function declared without RC_EXPORT (a
# declaration at the start of a line that is neither exported, nor static
# inline, nor a typedef).
internal_decls() {
	grep -HnE '^[A-Za-z_][^#]*\(' "$@" | grep -vE '^[^:]*:[0-9]+:(RC_EXPORT |static inline |typedef )' || true
}

@test "the check finds a function declared without RC_EXPORT in a header" {
	cat >"$BATS_TEST_TMPDIR/x.h" <<'H'
#define RC_TWICE(x) ((x) * 2)
RC_EXPORT int rc_outside(int a,
			 int b);
int rc_inside(int a);
static inline int rc_inline(int a) { return a; }
typedef int (*rc_fn)(int a);
struct rc_s {
	int (*cb)(void *arg);
};
H
	run internal_decls "$BATS_TEST_TMPDIR/x.h"
	[ "${#lines[@]}" -eq 1 ] || fail "found: $output"
	assert_output --partial "rc_inside"
}

@test "the public headers declare only what librdmacore exports; the internal headers (LAYER/NAME_core.h) export nothing" {
	local pub=("$ROOT"/libcore/include/rdmactl/*.h) in=("$ROOT"/libcore/*/*_core.h)
	((${#pub[@]} > 15)) || fail "only ${#pub[@]} public headers"
	((${#in[@]} > 10)) || fail "only ${#in[@]} internal headers"
	run internal_decls "${pub[@]}"
	[ -z "$output" ] || fail "a public header declares a function without RC_EXPORT (internal: move it to its layer's NAME_core.h):
$output"
	run grep -n 'RC_EXPORT' "${in[@]}"
	[ -z "$output" ] || fail "an internal header exports:
$output"
}

# headers_under DIR: the headers below DIR, by their path there, one a line.
headers_under() {
	(cd "$1" && find . -name '*.h' | sed 's|^\./||' | sort)
}

# headers_differ WANT GOT: each header one folder has and the other not.
headers_differ() {
	headers_under "$1" >"$BATS_TEST_TMPDIR/want"
	headers_under "$2" >"$BATS_TEST_TMPDIR/got"
	comm -3 "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
}

@test "the check finds an internal header among the installed ones" {
	mkdir -p "$BATS_TEST_TMPDIR/planted"
	cp -r "$ROOT/libcore/include/rdmactl" "$BATS_TEST_TMPDIR/planted/"
	cp "$ROOT/libcore/verbs/ops_core.h" "$BATS_TEST_TMPDIR/planted/rdmactl/"
	run headers_differ "$ROOT/libcore/include" "$BATS_TEST_TMPDIR/planted"
	assert_output --partial "rdmactl/ops_core.h"
	[ "${#lines[@]}" -eq 1 ]
}

@test "cmake --install puts the public headers under include/ and no internal one" {
	local b=${RDMACTL_BUILD_DIR:-$ROOT/build}
	[[ -f $b/CMakeCache.txt ]] || fail "no configured build tree at $b: build first"
	command -v cmake >/dev/null || skip "cmake is not installed"
	run cmake --install "$b" --prefix "$BATS_TEST_TMPDIR/stage"
	assert_success
	[[ -f $BATS_TEST_TMPDIR/stage/include/rdmactl/rdmactl.h ]] || fail "no include/rdmactl/rdmactl.h installed"
	run headers_differ "$ROOT/libcore/include" "$BATS_TEST_TMPDIR/stage/include"
	[ -z "$output" ] || fail "installed headers differ from the public ones (left: public, not installed; right: installed, not public):
$output"
}

# alone_fails INCLUDE-DIR HEADER...: each header that does not compile on its
# own (included first and alone) against INCLUDE-DIR, with its error.
alone_fails() {
	local dir=$1 h
	shift
	for h in "$@"; do
		printf '#include <rdmactl/%s>\n' "${h##*/}" >"$BATS_TEST_TMPDIR/alone.c"
		# shellcheck disable=SC2046
		cc -fsyntax-only -Wall -Werror $(pkg-config --cflags libibverbs librdmacm 2>/dev/null) \
			-I "$dir" "$BATS_TEST_TMPDIR/alone.c" >"$BATS_TEST_TMPDIR/alone.err" 2>&1 ||
			printf '%s: %s\n' "${h##*/}" "$(grep -m1 error "$BATS_TEST_TMPDIR/alone.err")"
	done
}

@test "the check finds a header that does not compile on its own" {
	command -v cc >/dev/null || fail "no C compiler"
	mkdir -p "$BATS_TEST_TMPDIR/planted/rdmactl"
	printf 'int rc_f(size_t n);\n' >"$BATS_TEST_TMPDIR/planted/rdmactl/x.h"
	printf '#include <stddef.h>\nint rc_f(size_t n);\n' >"$BATS_TEST_TMPDIR/planted/rdmactl/y.h"
	run alone_fails "$BATS_TEST_TMPDIR/planted" "$BATS_TEST_TMPDIR"/planted/rdmactl/{x,y}.h
	assert_output --partial "x.h:"
	[ "${#lines[@]}" -eq 1 ]
}

@test "every header compiles on its own: a public one against the public headers, an internal one against all" {
	local b=${RDMACTL_BUILD_DIR:-$ROOT/build}
	command -v cc >/dev/null || fail "no C compiler"
	[[ -d $b/libcore/include-tests/rdmactl ]] || fail "no $b/libcore/include-tests: configure first"
	run alone_fails "$ROOT/libcore/include" "$ROOT"/libcore/include/rdmactl/*.h
	[ -z "$output" ] || fail "$output"
	mkdir -p "$BATS_TEST_TMPDIR/all/rdmactl"
	cp "$ROOT"/libcore/include/rdmactl/*.h "$ROOT"/libcore/*/*_core.h "$BATS_TEST_TMPDIR/all/rdmactl/"
	run alone_fails "$BATS_TEST_TMPDIR/all" "$ROOT"/libcore/*/*_core.h
	[ -z "$output" ] || fail "$output"
}

@test "libfabric is opened only by the ofi transport: no rdmactl object links it, and a command that does not use it loads none of it" {
	# Debian's libfabric links PSM, whose constructor sleeps some 800 times
	# to measure the CPU's clock: linked, every rdmactl process paid 200 ms.
	run readelf -d "$RDMACTL" "$RDMACTL_BUILD_DIR/libcore/librdmacore.so"
	assert_success
	assert_output --partial librdmacore.so
	refute_output --partial libfabric
	run env LD_DEBUG=files "$RDMACTL" --version
	assert_success
	assert_output --partial "file=librdmacore.so"
	refute_output --regexp "file=[^ ]*(libfabric|libpsm|libinfinipath)"
}
