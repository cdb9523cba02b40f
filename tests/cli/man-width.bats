#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The man pages as a reader sees them: every rendered line within 80
# columns, and no example line that ends in a bare backslash (roff joins
# it to the next: the example renders as one run-on command).
#   bats tests/cli/man-width.bats

# bats file_tags=source-only

load helpers

@test "every man page renders within 80 columns" {
	command -v man >/dev/null || skip "man (man-db) is not installed"
	local f w n=0 wide
	for f in "$BATS_TEST_DIRNAME"/../../man/*.8; do
		w=$(MANWIDTH=80 MAN_KEEP_FORMATTING= man -l "$f" 2>/dev/null | LC_ALL=C.UTF-8 wc -L)
		if ((w > 80)); then
			wide=$(MANWIDTH=80 man -l "$f" 2>/dev/null | LC_ALL=C.UTF-8 awk 'length($0) > 80')
			fail "${f##*/} renders lines of $w columns:
$wide"
		fi
		n=$((n + 1))
	done
	((n >= 12))
	# the check can fail: a page of one long example line
	printf '.TH X 8\n.SH EXAMPLES\n.nf\n%s\n.fi\n' "$(printf 'x%.0s' {1..100})" >"$BATS_TEST_TMPDIR/x.8"
	w=$(MANWIDTH=80 man -l "$BATS_TEST_TMPDIR/x.8" 2>/dev/null | LC_ALL=C.UTF-8 wc -L)
	((w > 80))
}

@test "no man page example line ends in a bare backslash" {
	local f bad
	for f in "$BATS_TEST_DIRNAME"/../../man/*.8; do
		bad=$(awk '/^\.(nf|EX)/ { on = 1 } /^\.(fi|EE)/ { on = 0 }
			on && /(^|[^\\])(\\\\)*\\$/ { print FILENAME ":" FNR ": " $0 }' "$f")
		[[ -z $bad ]] || fail "a line that roff joins to the next (write \\e for a backslash):
$bad"
	done
	printf '.nf\na \\\n.fi\n' >"$BATS_TEST_TMPDIR/y.8"
	run awk '/^\.(nf|EX)/ { on = 1 } /^\.(fi|EE)/ { on = 0 }
		on && /(^|[^\\])(\\\\)*\\$/ { print }' "$BATS_TEST_TMPDIR/y.8"
	assert_output 'a \'
}
