#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# The cli tier's last file (bats runs a folder's files in name order): each
# -j document that the tier's tests made rdmactl print was recorded
# (tests/lib/assert.bash) and is checked here against schemas/, all in one
# node process (tests/lib/schema-check.js). With the tier, or after files:
#   bats tests/cli/kvxfer.bats tests/cli/zz-json-schemas.bats
# The checker's own tests: tests/cli/json-schemas.bats.

load helpers
load '../lib/schemas'

# One checker run for the file (schema_check_tier, tests/lib/schemas.bash).
setup_file() {
	schema_check_tier
}

setup() {
	need_ajv
}

@test "every -j document the tier printed matches its command's schema" {
	schema_tier_result
	if ((SCHEMA_FILES == 0)); then
		skip "no -j document recorded in $(json_docs): run this file after the tier's others (bats tests/cli)"
	fi
	refute_output --partial "not valid"
	assert_equal "$status" 0
	assert_output --regexp '^schema-check: [0-9]+ documents valid'
}

@test "the whole tier was recorded: hundreds of documents, of each kind the cli tests print" {
	local s n
	schema_tier_result
	((SCHEMA_FILES >= 15)) || skip "documents from $SCHEMA_FILES test files only: the whole tier did not run"
	assert_equal "$status" 0
	n=$(schema_tier_count)
	((n >= 150)) || fail "only $n documents recorded by $SCHEMA_FILES test files (fewer than 150)"
	for s in error help version batch kvxfer-plan probe-topology regions; do
		assert_output --regexp "[:,] $s [0-9]+"
	done
}
