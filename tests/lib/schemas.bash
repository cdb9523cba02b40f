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
