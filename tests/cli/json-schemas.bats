#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# schemas/ and its checker (tests/lib/schema-check.js, node-ajv): documents
# of the binary pass; a renamed key, a wrong type, a missing key, another
# schema_version fail, naming the path and the schema; each command of the
# table has a schema. zz-json-schemas.bats runs the checker over the tier.

load helpers
load '../lib/schemas'

setup() {
	require_binary
	need_ajv
	PLAN=(kvxfer plan --layers 4 --kv-heads 8 --head-dim 128 --tokens 64 --src-tp 2 --dst-tp 4
		--segments --prefill-tokens-per-s 10000 --link-gbps 100Gbit --pool-pages 4096)
}

# check CMD DOC: the checker on one document given as text
check() {
	schema_check --command "$1" - <<<"$2"
}

@test "documents of the binary pass: version, help, a usage error, kvxfer plan, probe-topology, a batch" {
	local fx=$BATS_TEST_TMPDIR/fx
	bash "$ROOT/tests/fixtures/make-sysfs.sh" "$fx" >/dev/null
	check version "$("$RDMACTL" -j version)"
	assert_success
	assert_output --partial "1 documents valid (1 schemas: version 1)"
	check help "$("$RDMACTL" -j help)"
	assert_success
	check help "$("$RDMACTL" -j help kvxfer plan)"
	assert_success
	check write "$("$RDMACTL" -j write --bogus 2>/dev/null)"
	assert_success
	assert_output --partial "error 1"
	check "kvxfer plan" "$("$RDMACTL" -j "${PLAN[@]}")"
	assert_success
	assert_output --partial "kvxfer-plan 1"
	check probe-topology "$("$RDMACTL" -p probe-topology --sysfs "$fx/two-socket-8gpu")"
	assert_success
	check probe-topology "$("$RDMACTL" -j probe-topology --sysfs "$fx/two-socket-8gpu" --export mooncake)"
	assert_success
	check probe-topology "$("$RDMACTL" -j probe-topology --fabrics)"
	assert_success
	check batch "$(printf 'version\nkvxfer plan --layers 2 --kv-heads 8 --head-dim 128 --tokens 16\nhelp version\n' |
		"$RDMACTL" -j -b -)"
	assert_success
	assert_output --partial "1 documents valid (1 schemas: batch 1)"
}

@test "a renamed key fails, naming the path, the key and the schema file" {
	local doc
	doc=$("$RDMACTL" -j "${PLAN[@]}" | jq -c '.pages.src.page_token = .pages.src.page_tokens | del(.pages.src.page_tokens)')
	check "kvxfer plan" "$doc"
	assert_failure 1
	assert_output --partial "schema $ROOT/schemas/kvxfer-plan.schema.json: at /pages/src: should have required property 'page_tokens'"
	assert_output --partial "should NOT have additional properties 'page_token'"
	assert_output --partial "schema-check: 1 of 1 documents not valid"
	# the key renamed back: valid again
	check "kvxfer plan" "$(jq -c '.pages.src.page_tokens = .pages.src.page_token | del(.pages.src.page_token)' <<<"$doc")"
	assert_success
}

@test "a wrong type, a missing key, another schema_version, an unknown command fail" {
	local fx=$BATS_TEST_TMPDIR/fx doc
	bash "$ROOT/tests/fixtures/make-sysfs.sh" "$fx" >/dev/null
	doc=$("$RDMACTL" -j probe-topology --sysfs "$fx/two-socket-8gpu")
	check probe-topology "$(jq -c '.summary.devices = "2"' <<<"$doc")"
	assert_failure 1
	assert_output --partial "at /summary/devices: should be integer"
	check probe-topology "$(jq -c '.devices[0].ports[0].rate_gbit_per_s = "400"' <<<"$doc")"
	assert_failure 1
	assert_output --partial "at /devices/0/ports/0/rate_gbit_per_s: should be number,null"
	check probe-topology "$(jq -c 'del(.rail_plan[1].nic)' <<<"$doc")"
	assert_failure 1
	assert_output --partial "at /rail_plan/1: should have required property 'nic'"
	doc=$("$RDMACTL" -j probe-topology --fabrics)
	check probe-topology "$(jq -c '.fabrics.list[0].endpoints = ["rc"]' <<<"$doc")"
	assert_failure 1
	assert_output --partial "at /fabrics/list/0/endpoints/0: should be equal to one of the allowed values"
	check version '{"schema_version":1,"version":"0.1.0"}'
	assert_failure 1
	assert_output --partial "at /schema_version: should be equal to constant (2)"
	check version '{"schema_version":2,"version":"0.1.0","extra":1}'
	assert_failure 1
	check frobnicate '{"schema_version":2}'
	assert_failure 1
	assert_output --partial "no schema frobnicate.schema.json for command 'frobnicate'"
	check version 'not json'
	assert_failure 1
	assert_output --partial "not JSON"
}

@test "error documents: message, errno and code are checked; a failure keeps the keys printed before it" {
	check write '{"schema_version":2,"error":{"message":"no route","errno":113,"code":"EHOSTUNREACH"}}'
	assert_success
	check write '{"schema_version":2,"error":{"message":"x","errno":"113"}}'
	assert_failure 1
	assert_output --partial "at /error/errno: should be integer"
	check write '{"schema_version":2,"error":{"msg":"x"}}'
	assert_failure 1
	assert_output --partial "should have required property 'message'"
	check multicast '{"schema_version":2,"ok_count":1,"error":{"message":"a"},"errors":[{"message":"b"},{"message":"a"}]}'
	assert_success
}

@test "multicast, schema_version 3: digest_value as --digest says, sha256 null unless sha256; its error document carries 3" {
	local doc sha
	sha=$(printf '%064d' 7)
	doc='{"schema_version":3,"algo":"flat","root":0,"ranks":2,"rank_source":"flags","rendezvous":"file",
		"device":"rxe0","size_bytes":0,"chunk_bytes":1,"chunks":0,"ring_chunks":1,"mem":"host","depth":1,
		"width":1,"digest":"xxh64","digest_value":"ef46db3751d8e999","sha256":null,
		"receivers":[{"rank":1,"first_chunk_ms":1,"last_chunk_ms":1,"bytes":0,"ok":true,
		"digest_value":"ef46db3751d8e999","sha256":null,"children_lost":0,"device":"rxe0","error":null}],
		"ok_count":1,"receivers_count":1,"seconds":0.1,"link_gbyte_per_s":1,"link_gbit_per_s":8,
		"ideal_seconds":0.1,"ratio":1,"group":{"rendezvous_s":0,"connect_s":0,"first_barrier_s":0,
		"tree_depth":1,"qps":1,"cqs":1,"ring_bytes":1,"max_rss_bytes":1}}'
	check multicast "$doc"
	assert_success
	check multicast "$(jq -c --arg s "$sha" '.digest = "sha256" | .digest_value = $s | .sha256 = $s
		| .receivers[0].digest_value = $s | .receivers[0].sha256 = $s' <<<"$doc")"
	assert_success
	# a SHA-256 under xxh64, a 16-digit value under sha256, version 2: each fails
	check multicast "$(jq -c --arg s "$sha" '.sha256 = $s' <<<"$doc")"
	assert_failure 1
	assert_output --partial "at /sha256: should be null"
	check multicast "$(jq -c '.digest = "sha256"' <<<"$doc")"
	assert_failure 1
	assert_output --partial "at /digest_value: should match pattern"
	check multicast "$(jq -c '.schema_version = 2' <<<"$doc")"
	assert_failure 1
	assert_output --partial "at /schema_version: should be equal to constant (3)"
	check multicast "$(jq -c '.ok_count = 0 | .error = {message: "rank 1 did not get the whole blob"}' <<<"$doc")"
	assert_success
}

@test "event streams: one document a line, each event's keys by its name, the command's events only" {
	local region='{"schema_version":2,"event":"region","name":"kv","addr":94000,"addr_hex":"0x16f30","rkey":7,"rkey_hex":"0x7","length":4096,"access":"rw","mem":"host","gpu":null,"registration":"host","registration_notes":null,"device":"rxe0","port":1,"gid":"::ffff:198.18.0.1","gid_index":1,"gid_type":"RoCE v2","listen":{"address":"198.18.0.1","port":7471}}'
	check register "$region"$'\n''{"schema_version":2,"event":"connected","peer":"198.18.0.1:5000"}'$'\n''{"schema_version":2,"event":"stopped"}'
	assert_success
	assert_output --partial "3 documents valid"
	check register "$(jq -c 'del(.rkey)' <<<"$region")"
	assert_failure 1
	assert_output --partial "should have required property 'rkey'"
	check register "$(jq -c '.access = "readwrite"' <<<"$region")"
	assert_failure 1
	assert_output --partial "at /access: should be equal to one of the allowed values"
	# a kvxfer event is not register's
	check register '{"schema_version":2,"event":"listening","rank":0,"address":"a","port":1,"device":"d","pool_bytes":1,"land_bytes":1}'
	assert_failure 1
	check "kvxfer serve" '{"schema_version":2,"event":"listening","rank":0,"address":"a","port":1,"device":"d","pool_bytes":1,"land_bytes":1}'
	assert_success
	check register '{"schema_version":2,"event":"imm","peer":"p"}'
	assert_failure 1
	assert_output --partial "should have required property 'imm'"
}

@test "a batch: each entry's output is checked against its own command's schema" {
	local doc
	doc=$(printf 'version\nkvxfer plan --layers 2 --kv-heads 8 --head-dim 128 --tokens 16\n' | "$RDMACTL" -j -b -)
	check batch "$(jq -c '.[1].output.tokens = "16"' <<<"$doc")"
	assert_failure 1
	assert_output --partial "kvxfer-plan.schema.json: at /1/output/tokens: should be integer"
	check batch "$(jq -c '.[0].line = 0' <<<"$doc")"
	assert_failure 1
	assert_output --partial "batch.schema.json: at /0/line"
}

@test "--log: a recorded document that fails names its command line and the schema file; --min counts" {
	local log=$BATS_TEST_TMPDIR/log
	RDMACTL_TEST_JSON_LOG=$log/a "$RDMACTL" -j version >/dev/null
	RDMACTL_TEST_JSON_LOG=$log/a "$RDMACTL" -j "${PLAN[@]}" >/dev/null
	RDMACTL_TEST_JSON_LOG=$log/b "$RDMACTL" -j kvxfer plan --tokens 1 >/dev/null || true
	schema_check --log "$log"
	assert_success
	assert_output --partial "3 documents valid (3 schemas: error 1, kvxfer-plan 1, version 1)"
	schema_check --min 4 --log "$log"
	assert_failure 1
	assert_output --partial "only 3 documents"
	# one record spoilt: its command line and the schema are named
	sed -i 's/"bytes_per_token":/"bytes_per_tok":/' "$log"/a/*.jsonl
	schema_check --log "$log"
	assert_failure 1
	assert_output --partial "not valid: $RDMACTL -j kvxfer plan --layers 4"
	assert_output --partial "schema $ROOT/schemas/kvxfer-plan.schema.json: at /: should have required property 'bytes_per_token'"
	# a folder that cannot be written changes nothing of the command's own
	RDMACTL_TEST_JSON_LOG=/proc/none run "$RDMACTL" -j version
	assert_success
	assert_output --regexp '^\{"schema_version":2,"version":"[0-9.]+"\}$'
}

@test "each command of the table has a schema; each schema is draft-07, named by its \$id" {
	local name sub f
	"$RDMACTL" -j help >"$BATS_TEST_TMPDIR/help.json"
	while read -r name; do
		if [[ $name == kvxfer ]]; then
			for sub in plan serve send; do
				[[ -f $SCHEMAS/kvxfer-$sub.schema.json ]] || fail "no schema for kvxfer $sub"
			done
		else
			[[ -f $SCHEMAS/$name.schema.json ]] || fail "no schema for $name ($SCHEMAS/$name.schema.json)"
		fi
	done < <(jq -r '.commands[] | select(.hidden | not) | .name' "$BATS_TEST_TMPDIR/help.json")
	for f in "$SCHEMAS"/*.schema.json; do
		jq -e --arg f "${f##*/}" '."$schema" == "http://json-schema.org/draft-07/schema#" and (."$id" | endswith("/" + $f))' "$f" >/dev/null ||
			fail "$f: not draft-07, or its \$id does not end in its file name"
	done
}
