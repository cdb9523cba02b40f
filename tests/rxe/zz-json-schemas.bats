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

@test "every -j document the tier printed in the guest matches its command's schema" {
	need_guest
	need_ajv
	local docs
	docs=$(json_docs)
	if ! compgen -G "$docs/*/*.jsonl" >/dev/null; then
		skip "no -j document recorded in $docs: run this file after the tier's others (tests/lib/bats-each.sh)"
	fi
	schema_check --log "$docs"
	assert_success
	assert_output --regexp '^schema-check: [0-9]+ documents valid'
}

@test "the whole tier was recorded: the documents of every command that moves data" {
	need_guest
	need_ajv
	local n s
	n=$(json_docs_files)
	((n >= 10)) || skip "documents from $n test files only: the whole tier did not run"
	schema_check --min 300 --log "$(json_docs)"
	assert_success
	for s in register write read atomic kvxfer-serve kvxfer-send alltoall multicast migrate; do
		assert_output --regexp "[:,] $s [0-9]+"
	done
}
