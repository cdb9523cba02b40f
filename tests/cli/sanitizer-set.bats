#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The sanitizer tier's share of the rxe tests: those tagged plain-only
# (tests/lib/sanitizer-cover.sh measured that the others reach every line
# they reach) run on the plain tier only. Here: every tag stands where bats
# reads it, no heavy sibling carries one (those skip there anyway), nor a
# test marked "# sanitizer tier: always", and the tier's filter leaves out
# exactly the tagged tests.

load helpers

# tag_check FILE...: print each plain-only tag that is not on the line just
# above an @test, and each tagged test that calls heavy_sibling or is
# marked for the sanitizer tier always.
tag_check() {
	run awk '
		FNR == 1 { tagged = 0 }
		tagged && !/^@test / { print FILENAME ":" FNR - 1 ": a plain-only tag not above an @test"; tagged = 0 }
		/^# bats test_tags=plain-only$/ { tagged = 1; next }
		/^@test / { intag = tagged; name = $0; tagged = 0; next }
		/^}/ { intag = 0 }
		intag && /heavy_sibling/ { print FILENAME ": " name ": a heavy sibling tagged plain-only"; intag = 0 }
		intag && /^[[:space:]]*# sanitizer tier: always/ { print FILENAME ": " name ": marked always, tagged plain-only"; intag = 0 }' "$@"
}

@test "every plain-only tag of the rxe tests stands above an @test, and no heavy sibling or always-marked test carries one" {
	local n
	n=$(cat "$ROOT"/tests/rxe/*.bats | grep -c '^# bats test_tags=plain-only$' || true)
	((n > 0)) || fail "no rxe test is tagged plain-only"
	tag_check "$ROOT"/tests/rxe/*.bats
	assert_success
	assert_output ""
}

@test "the tag check finds a tag astray, a tagged heavy sibling and a tagged always-marked test" {
	local f=$BATS_TEST_TMPDIR/t.bats
	printf '%s\n' '# bats test_tags=plain-only' '' '@test "a" {' '	true' '}' \
		'# bats test_tags=plain-only' '@test "b" {' '	heavy_sibling "a"' '}' \
		'# bats test_tags=plain-only' '@test "c" {' '	# sanitizer tier: always (why)' '}' >"$f"
	tag_check "$f"
	assert_output --partial "$f:1: a plain-only tag not above an @test"
	assert_output --partial "$f: @test \"b\" {: a heavy sibling tagged plain-only"
	assert_output --partial "$f: @test \"c\" {: marked always, tagged plain-only"
}

@test "the sanitizer tier runs the rxe tests less exactly the tagged ones" {
	local f=$BATS_TEST_TMPDIR/t.bats all some tagged
	run grep -c -- "--filter-tags '!plain-only' -- tests/rxe" "$ROOT/tests/run-all.sh"
	assert_output 1
	printf '%s\n' '@test "a" {' '	true' '}' '# bats test_tags=plain-only' '@test "b" {' '	true' '}' >"$f"
	run bats --count --filter-tags '!plain-only' "$f"
	assert_output 1
	all=$(cat "$ROOT"/tests/rxe/*.bats | grep -c '^@test ')
	tagged=$(cat "$ROOT"/tests/rxe/*.bats | grep -c '^# bats test_tags=plain-only$' || true)
	some=$(bats --count --filter-tags '!plain-only' "$ROOT"/tests/rxe/*.bats)
	[ "$some" -eq $((all - tagged)) ]
}

# binary_runs FILE...: each line of a file that runs the binary under test
# ($RDMACTL or $RDMACTL_NOCUDA, or the require_binary helper)
binary_runs() {
	run grep -nE '\$\{?RDMACTL(_NOCUDA)?\b|require_binary' "$@"
}

@test "the sanitizer cli tier leaves out only the files tagged source-only, and none of them runs the binary" {
	local f=$BATS_TEST_TMPDIR/t.bats tagged=() g
	run grep -c -- "--filter-tags '!source-only' tests/cli" "$ROOT/tests/run-all.sh"
	assert_output 1
	for g in "$ROOT"/tests/cli/*.bats; do
		grep -q '^# bats file_tags=source-only$' "$g" && tagged+=("$g")
	done
	((${#tagged[@]} > 0)) || fail "no cli file is tagged source-only"
	binary_runs "${tagged[@]}"
	assert_output ""
	# the check sees a tagged file that runs the binary
	printf '%s\n' '# bats file_tags=source-only' '@test "a" {' '	run "$RDMACTL" --version' '}' >"$f"
	binary_runs "$f"
	assert_output --partial 'run "$RDMACTL" --version'
	# and bats leaves a tagged file's tests out under the filter
	run bats --count --filter-tags '!source-only' "$f"
	assert_output 0
}
