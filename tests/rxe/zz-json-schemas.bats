#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# The rxe tier's last file (tests/lib/bats-each.sh runs the files in name
# order, and gives them one folder of documents): each -j document that the
# tier's tests made rdmactl print in the guest, events and all, was recorded
# (tests/lib/assert.bash) and is checked here against schemas/, in one node
# process (tests/lib/schema-check.js; the guest runs the host's node).

load helpers
load '../lib/schemas'

# One checker run for the file: node takes half a minute to start under
# the guest's emulation.
setup_file() {
	[ -z "${RDMACTL_VM:-}" ] || schema_check_tier
}

setup() {
	need_guest
	need_ajv
}

# bats test_tags=plain-only
@test "every -j document the tier printed in the guest matches its command's schema" {
	schema_tier_result
	if ((SCHEMA_FILES == 0)); then
		skip "no -j document recorded in $(json_docs): run this file after the tier's others (tests/lib/bats-each.sh)"
	fi
	refute_output --partial "not valid"
	assert_equal "$status" 0
	assert_output --regexp '^schema-check: [0-9]+ documents valid'
}

# bats test_tags=plain-only
@test "the whole tier was recorded: the documents of every command that moves data" {
	local s n
	schema_tier_result
	((SCHEMA_FILES >= 10)) || skip "documents from $SCHEMA_FILES test files only: the whole tier did not run"
	assert_equal "$status" 0
	n=$(schema_tier_count)
	((n >= 300)) || fail "only $n documents recorded by $SCHEMA_FILES test files (fewer than 300)"
	for s in register write read atomic kvxfer-serve kvxfer-send alltoall multicast migrate; do
		assert_output --regexp "[:,] $s [0-9]+"
	done
}
