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
			| .options[] | select(.hidden | not) | .name' "$TABLE"
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

# Long options a page's OPTIONS section (or GLOBAL OPTIONS, $2 = global)
# documents, sorted, as "--NAME": written by hand, so independent of the table.
page_section_opts() {
	local sect=OPTIONS
	[[ ${2:-} == global ]] && sect='GLOBAL OPTIONS'
	awk -v s="$sect" '/^\.SH/ { t = $0; sub(/^\.SH "?/, "", t); sub(/"?$/, "", t); on = (t == s); next } on' "$MAN/$1" |
		grep -oE '\\-\\-[a-z0-9]+(\\-[a-z0-9]+)*' | sed 's/\\-/-/g' | sort -u
}

@test "__complete CMD -- lists exactly the options its man page documents" {
	local c want got n=0
	for c in $(jq -r '.commands[] | select((.hidden or .shell_only) | not) | .name' "$TABLE"); do
		got=$("$RDMACTL" __complete "$c" -- | sort)
		if [[ -f $MAN/rdmactl-$c.8 ]]; then
			want=$(page_section_opts "rdmactl-$c.8")
			n=$((n + 1))
		else
			# help and version have no page, and no options.
			want=
		fi
		[[ $want == "$got" ]] || fail "$c: man/rdmactl-$c.8 documents '$want', __complete says '$got'"
	done
	((n >= 7)) || fail "only $n commands compared with a man page"
	assert_equal "$("$RDMACTL" __complete -- | sort)" "$(page_section_opts rdmactl.8 global)"
	# And the commands completion offers are the ones rdmactl(8) and the
	# pages name: each has a page or is help or version (aliases aside).
	for c in $("$RDMACTL" __complete ""); do
		[[ -f $MAN/rdmactl-$c.8 || $c == help || $c == version ]] && continue
		jq -e --arg c "$c" 'any(.commands[]; (.aliases // []) | index($c))' "$TABLE" >/dev/null ||
			fail "completion offers '$c', which has no man page and is no alias"
	done
}

@test "every man page renders without a warning" {
	command -v groff >/dev/null || skip "groff is not installed (apt-get install groff-base)"
	for f in "$MAN"/*.8; do
		run groff -man -ww -z "$f"
		assert_success
		assert_output ""
		if command -v man >/dev/null; then
			run bash -c "MANWIDTH=80 man --warnings -l '$f' 2>&1 >/dev/null"
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

@test "every test hook (a hidden option) is documented under TEST HOOKS of its page" {
	local c o errors=() n=0
	while read -r c o; do
		n=$((n + 1))
		awk '/^\.SH/ { on = ($0 ~ /^\.SH "?TEST HOOKS"?$/); next } on' "$MAN/$(page_of "$c")" |
			grep -qF -- "\\-\\-${o//-/\\-}" || errors+=("$(page_of "$c") has no TEST HOOKS entry for --$o")
	done < <(jq -r '.commands[] | .name as $c | .options[] | select(.hidden) | "\($c) \(.name)"' "$TABLE")
	((n >= 2)) || fail "only $n hidden options: the table lost the hidden flag"
	(( ${#errors[@]} == 0 )) || fail "$(printf '%s\n' "${errors[@]}")"
}

@test "rdmactl(8) names every command with a page, in COMMANDS and in SEE ALSO" {
	local c errors=()
	for c in $(paged_commands); do
		awk '/^\.SH/ { on = ($0 ~ /^\.SH "?COMMANDS"?$/); next } on' "$MAN/rdmactl.8" |
			grep -qxF ".B ${c//-/\\-}" || errors+=("COMMANDS lacks $c")
		awk '/^\.SH/ { on = ($0 ~ /^\.SH "?SEE ALSO"?$/); next } on' "$MAN/rdmactl.8" |
			grep -qF "rdmactl\\-${c//-/\\-} (8)" || errors+=("SEE ALSO lacks rdmactl-$c(8)")
	done
	(( ${#errors[@]} == 0 )) || fail "$(printf '%s\n' "${errors[@]}")"
}

@test "man pages: every quoted macro argument is closed (no 'land\",and' run-ins)" {
	local bad
	bad=$(awk '/^\.(B|I|R)(R|B|I)? / { l = $0; gsub(/\\"/, "", l); if (gsub(/"/, "", l) % 2) print FILENAME ":" FNR ": " $0 }' "$MAN"/*.8)
	[[ -z $bad ]] || fail "$bad"
	# and the check can fail
	printf '.BR a ", " b", c\n' >"$BATS_TEST_TMPDIR/bad.8"
	bad=$(awk '/^\.(B|I|R)(R|B|I)? / { l = $0; gsub(/\\"/, "", l); if (gsub(/"/, "", l) % 2) print FILENAME }' "$BATS_TEST_TMPDIR/bad.8")
	[[ -n $bad ]] || fail "the quote check passed an unclosed quote"
}

# "-X --long" for each short form a page gives in its OPTIONS (or, $2 =
# global, GLOBAL OPTIONS, or SHORT OPTIONS) section, sorted.
page_shorts() {
	local sect=OPTIONS
	[[ ${2:-} == global ]] && sect='GLOBAL OPTIONS'
	[[ ${2:-} == table ]] && sect='SHORT OPTIONS'
	awk -v s="$sect" '/^\.SH/ { t = $0; sub(/^\.SH "?/, "", t); sub(/"?$/, "", t); on = (t == s); next } on' "$MAN/$1" |
		sed -nE 's/^\\fB\\-([A-Za-z])\\fR, \\fB\\-\\-([a-z0-9]+(\\-[a-z0-9]+)*)\\fR.*/-\1 --\2/p
			s/^\.BR \\-([A-Za-z]) ", " \\-\\-([a-z0-9]+(\\-[a-z0-9]+)*)$/-\1 --\2/p' |
		sed 's/\\-/-/g' | sort -u
}

@test "man pages give each option's short form as the binary has it, and rdmactl(8) tables them all" {
	local c p want got errors=()
	for c in $(jq -r '.commands[] | select((.hidden or .shell_only) | not) | .name' "$TABLE"); do
		p=rdmactl-$c.8
		[[ -f $MAN/$p ]] || continue
		want=$(jq -r --arg c "$c" '.commands[] | select(.name == $c) | .options[]
			| select(.short and (.hidden | not)) | "-\(.short) --\(.name)"' "$TABLE" | sort -u)
		got=$(page_shorts "$p")
		[[ $want == "$got" ]] || errors+=("$p: the binary has '${want//$'\n'/, }', the page '${got//$'\n'/, }'")
	done
	want=$(jq -r '.global_options[] | select(.short) | "-\(.short) --\(.name)"' "$TABLE" | sort -u)
	[[ $want == "$(page_shorts rdmactl.8 global)" ]] || errors+=("rdmactl.8 GLOBAL OPTIONS: want '$want'")
	want=$(jq -r '.commands[] | .options[] | select(.short and (.hidden | not)) | "-\(.short) --\(.name)"' "$TABLE" | sort -u)
	got=$(page_shorts rdmactl.8 table)
	[[ $want == "$got" ]] || errors+=("rdmactl.8 SHORT OPTIONS: the binary has '${want//$'\n'/, }', the table '${got//$'\n'/, }'")
	(( ${#errors[@]} == 0 )) || fail "$(printf '%s\n' "${errors[@]}")"
	# The comparison can fail: a page with an old short form.
	sed 's/^\\fB\\-P\\fR, \\fB\\-\\-pattern/\\fB\\-p\\fR, \\fB\\-\\-pattern/' "$MAN/rdmactl-multicast.8" >"$BATS_TEST_TMPDIR/m.8"
	MAN=$BATS_TEST_TMPDIR page_shorts m.8 | grep -qx -- '-p --pattern' || fail "page_shorts missed an old short form"
}

@test "every man page passes mandoc -T lint, style warnings included" {
	command -v mandoc >/dev/null || skip "mandoc is not installed (tests/deps.sh installs it: apt-get install mandoc)"
	run mandoc -T lint -W style "$MAN"/*.8
	assert_success
	assert_output ""
	# The lint can fail: a page with an unknown macro and a line too long.
	{
		head -5 "$MAN/rdmactl-write.8"
		printf '.XY unknown macro\n%s\n' "$(printf 'word %.0s' {1..20})"
	} >"$BATS_TEST_TMPDIR/bad.8"
	run mandoc -T lint -W style "$BATS_TEST_TMPDIR/bad.8"
	assert_failure
	assert_output --partial "unknown macro"
	assert_output --partial "longer than 80 bytes"
}
