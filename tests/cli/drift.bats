#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The man pages and the completion against the binary's own command table
# (rdmactl -j help): an option added, renamed or dropped in one place only
# fails here.

load helpers

setup() {
	require_binary
	MAN="$ROOT/man"
	TABLE="$BATS_TEST_TMPDIR/table.json"
	"$RDMACTL" -j help >"$TABLE"
}

# The page a command is documented in: shell-only commands in the shell's.
page_of() {
	jq -r --arg c "$1" '.commands[] | select(.name == $c)
		| "rdmactl-" + (if .shell_only then "shell" else .name end) + ".8"' "$TABLE"
}

# Commands that must have a page: every visible one but help and version.
paged_commands() {
	jq -r '.commands[] | select((.hidden or .shell_only) | not)
		| select(.name != "help" and .name != "version") | .name' "$TABLE"
}

# Long options the binary has for one page, sorted.
binary_opts() {
	if [[ $1 == rdmactl.8 ]]; then
		jq -r '.global_options[].name' "$TABLE"
	else
		jq -r --arg p "$1" '.commands[]
			| select("rdmactl-" + (if .shell_only then "shell" else .name end) + ".8" == $p)
			| .options[].name' "$TABLE"
	fi | sort -u
}

# Long options a page documents: every \-\-NAME in its OPTIONS, GLOBAL
# OPTIONS and SHELL COMMANDS sections.
page_opts() {
	awk '/^\.SH/ { on = ($0 ~ /^\.SH "?(GLOBAL )?OPTIONS"?$/ || $0 ~ /^\.SH "?SHELL COMMANDS"?$/); next }
	     on' "$MAN/$1" |
		grep -oE '\\-\\-[a-z0-9]+(\\-[a-z0-9]+)*' | sed 's/\\-/-/g; s/^--//' | sort -u
}

@test "every visible command but help and version has a man page" {
	local missing=()
	for c in $(paged_commands); do
		[[ -f $MAN/rdmactl-$c.8 ]] || missing+=("man/rdmactl-$c.8")
	done
	(( ${#missing[@]} == 0 )) || fail "missing: ${missing[*]}"
}

@test "every man page belongs to a command of the binary" {
	for f in "$MAN"/rdmactl-*.8; do
		local c=${f##*/rdmactl-}
		c=${c%.8}
		jq -e --arg c "$c" 'any(.commands[]; .name == $c and (.hidden | not))' "$TABLE" >/dev/null ||
			fail "man/${f##*/} documents no command of the binary"
	done
}

@test "every option of the binary is in its man page, and no other" {
	local pages=(rdmactl.8) errors=()
	for c in $(jq -r '.commands[] | select(.hidden | not) | .name' "$TABLE"); do
		[[ -f $MAN/$(page_of "$c") ]] && pages+=("$(page_of "$c")")
	done
	for p in $(printf '%s\n' "${pages[@]}" | sort -u); do
		local want got
		want=$(binary_opts "$p")
		got=$(page_opts "$p")
		for o in $want; do
			grep -qF -- "\\-\\-${o//-/\\-}" "$MAN/$p" || errors+=("$p lacks --$o")
		done
		for o in $(comm -13 <(echo "$want") <(echo "$got")); do
			errors+=("$p documents --$o, which the binary lacks")
		done
	done
	(( ${#errors[@]} == 0 )) || fail "$(printf '%s\n' "${errors[@]}")"
}

@test "__complete CMD -- lists exactly the command's options" {
	for c in $(jq -r '.commands[] | select((.hidden or .shell_only) | not) | .name' "$TABLE"); do
		local want got
		want=$(jq -r --arg c "$c" '.commands[] | select(.name == $c) | .options[] | "--" + .name' "$TABLE" | sort)
		got=$("$RDMACTL" __complete "$c" -- | sort)
		[[ $want == "$got" ]] || fail "$c: table says '$want', __complete says '$got'"
	done
	want=$(jq -r '.global_options[] | "--" + .name' "$TABLE" | sort)
	assert_equal "$("$RDMACTL" __complete -- | sort)" "$want"
}

@test "every man page renders without a warning" {
	command -v groff >/dev/null || skip "groff is not installed (apt-get install groff-base)"
	for f in "$MAN"/*.8; do
		run groff -man -ww -z "$f"
		assert_success
		assert_output ""
		if command -v man >/dev/null; then
			run bash -c "MANWIDTH=80 man -l '$f' 2>&1 >/dev/null"
			assert_output ""
		fi
	done
}

@test "every page starts with its SPDX line and names itself" {
	for f in "$MAN"/*.8; do
		assert_equal "$(head -1 "$f")" '.\" SPDX-License-Identifier: MIT'
		local name=${f##*/}
		name=${name%.8}
		grep -q "^\.TH $(echo "${name^^}" | sed 's/-/\\\\-/g') 8 " "$f" ||
			fail "${f##*/}: .TH does not name ${name^^}"
	done
}
