# SPDX-License-Identifier: MIT
# The counting of tests/run-all.sh, in a file of its own so that the cli
# tier can check it (tests/cli/harness.bats): the tiers' logs (bats TAP,
# tests/lib/bats-each.sh's TAP, ctest) added to the totals
#   passed failed skipped   numbers
#   failures                the failed tiers, with why
#   failed_tests            "TIER: [FILE: ]N NAME" of each failed test
#   skips_seen              each skip, allowed or not
# tests/expected-skips (or $SKIPS_FILE) lists the skips that are allowed.
passed=0 failed=0 skipped=0
failures=()
failed_tests=()
skips_seen=()

# skip_allowed TIER NAME: print the allow-list's reason when tests/expected-skips
# accepts a skip of test NAME in TIER; fail otherwise.
skip_allowed() {
	local tiers name why t
	while IFS='|' read -r tiers name why; do
		[[ "$tiers" =~ ^[[:space:]]*(#|$) ]] && continue
		name=${name#"${name%%[![:space:]]*}"}
		name=${name%"${name##*[![:space:]]}"}
		for t in ${tiers//,/ }; do
			if [[ "$t" == "$1" && "$name" == "$2" ]]; then
				echo "${why# }"
				return 0
			fi
		done
	done <"${SKIPS_FILE:-$repo/tests/expected-skips}"
	return 1
}

# count_tap NAME FILE: add a bats TAP log to the totals. A skip that
# tests/expected-skips does not list fails the tier.
count_tap() {
	local ok nok skip line test why bad=0
	ok=$(grep -cE '^ok [0-9]+' "$2" || true)
	skip=$(grep -cE '^ok [0-9]+ .*# skip' "$2" || true)
	nok=$(grep -cE '^not ok [0-9]+' "$2" || true)
	while IFS= read -r line; do
		# (bats --timing puts " in N ms" after the name)
		test=$(sed -E 's/^ok [0-9]+ (.*) # skip.*/\1/; s/ in [0-9]+ms$//' <<<"$line")
		if why=$(skip_allowed "$1" "$test"); then
			skips_seen+=("$1: $test (allowed: $why)")
		else
			skips_seen+=("$1: $test: NOT ALLOWED (${line##*# skip})")
			bad=$((bad + 1))
		fi
	done < <(grep -E '^ok [0-9]+ .*# skip' "$2")
	# the file of each failure, from tests/lib/bats-each.sh's "# file: PATH"
	local file=
	while IFS= read -r line; do
		case "$line" in
		"# file: "*) file="${line#"# file: "}: "; file=${file##*/} ;;
		"not ok "[0-9]*) failed_tests+=("$1: $file${line#not ok }") ;;
		esac
	done <"$2"
	passed=$((passed + ok - skip))
	skipped=$((skipped + skip))
	failed=$((failed + nok + bad))
	((nok == 0)) || failures+=("$1")
	((bad == 0)) || failures+=("$1 ($bad unexpected skip(s))")
}

# count_bats NAME LOG RC: count a bats tier's log; a runner that failed
# without a single 'not ok' (crash, harness) is a failure.
count_bats() {
	count_tap "$1" "$2"
	if (($3 != 0)) && ! grep -qE '^not ok' "$2"; then
		failed=$((failed + 1))
		failures+=("$1 (exit $3)")
	fi
}

# count_ctest NAME LOG
count_ctest() {
	local out=$2 n_fail n_total
	n_total=$(sed -nE 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\2/p' "$out")
	n_fail=$(sed -nE 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/p' "$out")
	if [[ -z "$n_total" ]]; then
		failed=$((failed + 1))
		failures+=("$1 (ctest did not run)")
		return
	fi
	passed=$((passed + n_total - n_fail))
	failed=$((failed + n_fail))
	while IFS= read -r line; do
		failed_tests+=("$1: $line")
	done < <(sed -n '/The following tests FAILED:/,$p' "$out" | sed -nE 's/^[[:space:]]+([0-9]+ - .*)/\1/p')
	((n_fail == 0)) || failures+=("$1")
}

