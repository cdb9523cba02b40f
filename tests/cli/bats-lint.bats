#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The tests' own lint (tests/lib/bats-lint.awk): no assertion that cannot
# fail its test, in any bats file; and the lint itself is shown a bad file
# and a good one.

load helpers
# bats file_tags=source-only

LINT=$ROOT/tests/lib/bats-lint.awk

# lint FILE...: run the lint
lint() {
	run awk -f "$LINT" "$@"
}

@test "every bats file under tests/ passes the lint" {
	local files=()
	mapfile -t files < <(find "$ROOT/tests" -name '*.bats' | sort)
	((${#files[@]} > 20)) || fail "found only ${#files[@]} bats files"
	lint "${files[@]}"
	assert_success
	assert_output ""
}

@test "the lint flags an assertion before && that is not the last command, in a test, a loop and a helper" {
	local f=$BATS_TEST_TMPDIR/bad.bats
	cat >"$f" <<'EOF'
#!/usr/bin/env bats
helper() {
	[ "$1" = 1 ] && [ "$2" = 1 ]
	echo done
}

TEST "bad" {
	run true
	[ "${rcs[0]}" -eq 1 ] && [ "${rcs[1]}" -eq 1 ]
	for i in 1 2; do
		grep -q x "$f" && jq -e . "$f"
	done
	[ -s "$a" ] &&
		cmp "$a" "$b"
	! grep -q '"event":"stopped"' "$out"
	if true; then
		[[ $x == 1 ]] && ((y > 2))
	fi
	echo last
}
EOF
	sed -i "s/^TEST /@test /" "$f" # (bats would read an @test line here as its own)
	lint "$f"
	assert_failure 1
	assert_line --index 0 --regexp "^$f:3: a failure before \"&&\" does not fail the test here"
	assert_line --index 1 --regexp "^$f:9: a failure before \"&&\".*: 	\[ \"\\$\{rcs\[0\]\}\" -eq 1 \] && "
	assert_line --index 2 --regexp "^$f:11: a failure before \"&&\""
	assert_line --index 3 --regexp "^$f:13: a failure before \"&&\""
	assert_line --index 4 --regexp "^$f:15: a check negated with \"!\" does not fail the test here"
	assert_line --index 5 --regexp "^$f:17: a failure before \"&&\""
	[ "${#lines[@]}" -eq 6 ]
}

@test "the lint passes lists that can fail their test, conditions, and && that is no list" {
	local f=$BATS_TEST_TMPDIR/good.bats
	cat >"$f" <<'EOF'
#!/usr/bin/env bats
helper() {
	[ -n "$1" ] && return 0
	[ "$1" = 1 ] && [ "$2" = 1 ]
}

TEST "good" {
	[ "$a" = 1 ] && [ "$b" = 1 ] || fail "a or b"
	[ "$a" = 1 ] || [ "$b" = 1 ]
	wait "$p0" && wait "$p1" || { cat err; false; }
	[ -s "$out" ] && fail "printed on stdout"
	for ((i = 0; i < 10; i++)); do
		grep -q x "$f" && break
		[[ -e $f ]] && continue
		[ -z "$x" ] && x=1
	done
	if [ "$a" = 1 ] && [ "$b" = 1 ]; then echo both; fi
	while [ -e "$f" ] && ! grep -q y "$f"; do sleep 0.1; done
	[[ $a == 1 && $b == 2 ]]
	(( a > 1 && b > 1 ))
	x=$( [ a ] && echo b )
	echo "[ a ] && [ b ]" '[ c ] && [ d ]' >&2
	jq -e '.a == 1
		&& .b == 2' "$f" # a jq program over two lines && more
	cat <<EOT
[ "$a" = 1 ] && [ "$b" = 1 ]
EOT
	[ -s "$a" ] && [ -s "$b" ] # lint: not an assertion
	run ! grep -q x "$f"
	[ "$a" = 1 ] && [ "$b" = 1 ]
}
EOF
	sed -i "s/^TEST /@test /" "$f" # (bats would read an @test line here as its own)
	lint "$f"
	assert_success
	assert_output ""
}

@test "the lint flags a teardown that does not call common_teardown, and passes one that does" {
	local f=$BATS_TEST_TMPDIR/t.bats
	printf '%s\n' 'teardown() {' '	kill "$pid" || true' '}' >"$f"
	lint "$f"
	assert_failure 1
	assert_output --regexp "^$f:1: teardown does not call common_teardown \(tests/lib/teardown.bash\)"
	printf '%s\n' 'teardown() {' '	kill "$pid" || true' '	common_teardown' '}' >"$f"
	lint "$f"
	assert_success
	assert_output ""
}

@test "every bats file under tests/ parses as bats reads it (a broken merge fails here, not in the guest)" {
	local pre=/usr/libexec/bats-core/bats-preprocess f bad=()
	[[ -x $pre ]] || skip "no $pre"
	while IFS= read -r f; do
		"$pre" "$f" | bash -n 2>/dev/null || bad+=("$f")
	done < <(find "$ROOT/tests" -name '*.bats' | sort)
	((${#bad[@]} == 0)) || fail "do not parse: ${bad[*]}"
	# and the check can fail: a test whose closing brace was lost
	printf '@test "a" {\n\ttrue\n@test "b" {\n\ttrue\n}\n' >"$BATS_TEST_TMPDIR/broken.bats"
	run bash -c '"$1" "$2" | bash -n' _ "$pre" "$BATS_TEST_TMPDIR/broken.bats"
	assert_failure
}
