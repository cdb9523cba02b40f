#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# One unit convention (rdmactl(8), UNITS): rate keys spell their unit out
# (_gbit_per_s, _gbyte_per_s), a Gb/s value is 8 times its GB/s twin, no
# key ends in a bare _gbps or _bw, and rate options take a unit. What the
# cli tier can produce without a device: kvxfer plan, probe-topology on the
# fixtures, multicast's option checks.

load helpers

LLAMA=(--layers 32 --kv-heads 8 --head-dim 128 --dtype bf16 --tokens 2048)

setup_file() {
	export FX=$BATS_FILE_TMPDIR/fixtures
	bash "$BATS_TEST_DIRNAME/../fixtures/make-sysfs.sh" "$FX"
}

setup() {
	require_binary
	PEERS=$BATS_TEST_TMPDIR/peers
	printf '0 198.18.0.1:20000\n1 198.18.0.1:20001\n' >"$PEERS"
}

plan() { timeout 30 "$RDMACTL" -j kvxfer plan "${LLAMA[@]}" "$@"; }

# Every object key of the JSON document $1 that names no unit or names an
# ambiguous one.
bad_keys() {
	jq -r '[.. | objects | keys[]] | unique[]
		| select(test("(gbps|_bw|_rate|_kb|mib_per_s|_bw_bytes_per_s)$"))' <<<"$1"
}

@test "kvxfer plan: the rates spelled out, each Gb/s value 8 times its GB/s twin" {
	run plan --prefill-tokens-per-s 10000 --link-gbps 100 --pool-pages 4096
	assert_success
	jq -e '.schema_version == 2
		and (.prefill | has("need_gbps_per_link") or has("need_gbps_total") | not)
		and (.link | has("gbps") | not)' <<<"$output"
	# 2048 tokens x 131072 B in 0.2048 s: 10.48576 Gb/s, 1.31072 GB/s.
	jq -e '(.prefill.need_per_link_gbit_per_s - 10.48576 | fabs) < 1e-9
		and (.prefill.need_per_link_gbyte_per_s - 1.31072 | fabs) < 1e-9
		and (.prefill.need_per_link_gbit_per_s - 8 * .prefill.need_per_link_gbyte_per_s | fabs) < 1e-9
		and (.prefill.need_total_gbit_per_s - 8 * .prefill.need_total_gbyte_per_s | fabs) < 1e-9
		and .prefill.need_total_gbit_per_s >= .prefill.need_per_link_gbit_per_s
		and .link.gbit_per_s == 100 and .link.gbyte_per_s == 12.5' <<<"$output"
	assert_equal "$(bad_keys "$output")" ""
}

@test "kvxfer plan's text gives each rate with its unit, Gb/s and GB/s agreeing" {
	run timeout 30 "$RDMACTL" kvxfer plan "${LLAMA[@]}" --prefill-tokens-per-s 10000 --link-gbps 100
	assert_success
	assert_output --partial "the busiest source link needs 10.49 Gb/s (1.311 GB/s)"
	assert_output --partial "at 100 Gb/s (12.5 GB/s) per link: exposed transfer"
}

@test "--link-gbps: a bare number is Gbit/s, a unit is honoured, a bare prefix is refused" {
	ref=$(plan --link-gbps 100 | jq -c .link)
	for r in 100Gbit 100Gb 100Gbit/s 100Gbps 12.5GB 12.5GB/s 100000Mbit; do
		run plan --link-gbps "$r"
		assert_success
		assert_equal "$(jq -c .link <<<"$output")" "$ref"
	done
	run plan --link-gbps 25GB
	jq -e '.link.gbit_per_s == 200 and .link.gbyte_per_s == 25' <<<"$output"
	run timeout 30 "$RDMACTL" kvxfer plan "${LLAMA[@]}" --link-gbps 100G
	assert_failure 2
	assert_output --partial "invalid --link-gbps '100G': bits or bytes? say 100Gbit (bits per second) or 100GB (bytes per second)"
	for r in 100x -5 nan 100GBIT '' G; do
		run timeout 30 "$RDMACTL" kvxfer plan "${LLAMA[@]}" --link-gbps "$r"
		assert_failure 2
		assert_output --partial "invalid --link-gbps '$r'"
	done
}

@test "multicast --link-bw takes a rate with its unit, refuses a bare prefix before the group" {
	run timeout 30 "$RDMACTL" multicast -r 0 -w 2 -R "file:$PEERS" --pattern seq --size 1M --link-bw 100G
	assert_failure 2
	assert_output --partial "invalid --link-bw '100G': bits or bytes? say 100Gbit (bits per second) or 100GB (bytes per second)"
	run timeout 30 "$RDMACTL" -j multicast -r 0 -w 2 -R "file:$PEERS" --pattern seq --size 1M --link-bw 1.5x
	assert_failure 2
	jq -e '.schema_version == 2 and (.error.message | contains("invalid --link-bw \u00271.5x\u0027: expected a rate"))' <<<"$output"
	run "$RDMACTL" multicast --help
	assert_output --partial "100Gbit, 12.5GB"
}

@test "probe-topology on every fixture: the port rate in Gb/s, sizes in bytes, no ambiguous key" {
	n=0
	for d in "$FX"/*; do
		[[ $d == *.nvml ]] && continue
		run timeout 30 "$RDMACTL" -j probe-topology --sysfs "$d" --hugepages
		assert_success
		assert_equal "$(bad_keys "$output")" ""
		jq -e '.schema_version == 2 and ([.devices[].ports[]? | has("rate_gbps")] | any | not)
			and ([.host.hugepages[] | .size_bytes > 0 and .size_bytes % 4096 == 0] | all)' <<<"$output"
		n=$((n + 1))
	done
	[ "$n" -ge 4 ]
	run timeout 30 "$RDMACTL" -j probe-topology --sysfs "$FX/two-socket-8gpu" --hugepages
	jq -e '[.devices[].ports[].rate_gbit_per_s] | index(400) != null' <<<"$output"
	jq -e '.host.hugepages == [{"size_bytes": 2097152, "total": 1024, "free": 1024}]' <<<"$output"
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/two-socket-8gpu" --hugepages
	assert_output --partial "hugepages of 2MiB: 1024 (1024 free)"
}

@test "the man page states the convention, and no command's source emits an ambiguous key" {
	run man --warnings -l "$ROOT/man/rdmactl.8"
	assert_success
	grep -q '^\.SH UNITS' "$ROOT/man/rdmactl.8"
	# The keys a device would be needed to see: read them where they are written.
	run grep -rhoE 'out_(f64|u64|i64|null|str|bool|obj_begin|arr_begin)\([^,]+, "[a-z0-9_]+"' "$ROOT/cmds"
	assert_success
	keys=$(sed -E 's/.*"([a-z0-9_]+)"$/\1/' <<<"$output" | sort -u)
	grep -qx busbw_gbyte_per_s <<<"$keys"
	grep -qx gbyte_per_s <<<"$keys"
	assert_equal "$(grep -E '(gbps|_bw|_rate|_kb|mib_per_s)$' <<<"$keys")" ""
	grep -q 'schema_version' "$ROOT/CHANGES.md"
}
