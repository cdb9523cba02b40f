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

setup() {
	need_ajv
}

@test "every -j document the tier printed matches its command's schema" {
	local docs
	docs=$(json_docs)
	if ! compgen -G "$docs/*/*.jsonl" >/dev/null; then
		skip "no -j document recorded in $docs: run this file after the tier's others (bats tests/cli)"
	fi
	schema_check --log "$docs"
	assert_success
	assert_output --regexp '^schema-check: [0-9]+ documents valid'
}

@test "the whole tier was recorded: hundreds of documents, of each kind the cli tests print" {
	local n s
	n=$(json_docs_files)
	((n >= 15)) || skip "documents from $n test files only: the whole tier did not run"
	schema_check --min 150 --log "$(json_docs)"
	assert_success
	for s in error help version batch kvxfer-plan probe-topology regions; do
		assert_output --regexp "[:,] $s [0-9]+"
	done
}
