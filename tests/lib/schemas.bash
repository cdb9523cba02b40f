# SPDX-License-Identifier: MIT
# The JSON Schema checker of the bats tiers: tests/lib/schema-check.js over
# schemas/, with Debian's node-ajv (tests/deps.sh installs nodejs and it).

SCHEMA_CHECK=${BATS_TEST_DIRNAME%/tests/*}/tests/lib/schema-check.js
SCHEMAS=${BATS_TEST_DIRNAME%/tests/*}/schemas

# need_ajv: fail, naming the fix, where node or ajv is missing.
need_ajv() {
	command -v node >/dev/null || fail "no node: tests/deps.sh installs nodejs and node-ajv"
	NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH} node -e "require('ajv')" 2>/dev/null ||
		fail "node cannot load ajv: tests/deps.sh installs node-ajv (NODE_PATH=/usr/share/nodejs)"
}

# schema_check ARGS...: the checker under bats' run (stdin passes through)
schema_check() {
	run env NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}" node "$SCHEMA_CHECK" "$@"
}

# json_docs: the folder of the documents this tier's files recorded
# (tests/lib/assert.bash), one folder per test file
json_docs() {
	echo "${RDMACTL_TEST_JSON_DOCS:-$BATS_RUN_TMPDIR/json-docs}"
}

# json_docs_files: how many test files recorded documents
json_docs_files() {
	local d n=0
	for d in "$(json_docs)"/*/; do
		compgen -G "$d*.jsonl" >/dev/null && n=$((n + 1))
	done
	echo "$n"
}

# schema_check_tier (from setup_file): check the tier's documents once, keeping
# the checker's status and output for schema_tier_result
schema_check_tier() {
	local n out rc=0
	n=$(json_docs_files)
	if ((n > 0)); then
		out=$(NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}" node "$SCHEMA_CHECK" --log "$(json_docs)" 2>&1) || rc=$?
	fi
	printf '%s\n' "$n" >"$BATS_FILE_TMPDIR/schema-files"
	printf '%s\n' "$rc" >"$BATS_FILE_TMPDIR/schema-status"
	printf '%s\n' "${out:-}" >"$BATS_FILE_TMPDIR/schema-output"
}

# schema_tier_result: the tier's check as bats' run leaves a result: $status,
# $output, and SCHEMA_FILES, how many test files recorded documents
schema_tier_result() {
	[[ -f $BATS_FILE_TMPDIR/schema-status ]] || fail "no checker result: setup_file did not run schema_check_tier"
	SCHEMA_FILES=$(<"$BATS_FILE_TMPDIR/schema-files")
	status=$(<"$BATS_FILE_TMPDIR/schema-status")
	output=$(<"$BATS_FILE_TMPDIR/schema-output")
}

# schema_tier_count: how many documents the tier's check found valid (0: none,
# or not all valid)
schema_tier_count() {
	local re='schema-check: ([0-9]+) documents valid'
	[[ $output =~ $re ]] && echo "${BASH_REMATCH[1]}" || echo 0
}
