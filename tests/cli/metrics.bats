#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# --metrics FILE without a device: the local file's errors come before any
# device is opened, a failed run still writes its file (rdmactl_success 0),
# and the check the rxe tests rely on (promtool, the EOF line) refuses a
# broken file. The figures themselves are in tests/rxe/metrics.bats.

load helpers
load '../lib/metrics'

setup() {
	require_binary
	d=$BATS_TEST_TMPDIR
}

teardown() {
	common_teardown
}

# Each command that takes --metrics, as argv words; each needs a device
# (192.0.2.1 is no address of this host) after its local checks.
commands=(
	"write --bench 192.0.2.1/r"
	"read --lat 192.0.2.1/r"
	"atomic --bench --faa 1 192.0.2.1/r"
	"write --pattern zero --size 4K 192.0.2.1/r"
	"read --out /dev/null 192.0.2.1/r"
	"register -N r -S 4K --listen 192.0.2.1"
	"kvxfer serve --listen 192.0.2.1:7500 --layers 1 --kv-heads 1 --head-dim 8 --pool-pages 4"
	"kvxfer send --connect 192.0.2.1:7500 --layers 1 --kv-heads 1 --head-dim 8 --tokens 4"
	"alltoall -r 0 -w 2 -R file:/dev/null"
	"multicast -r 0 -w 2 -R file:/dev/null --pattern zero --size 4K"
	"preflight -r 0 -w 2 -R file:/dev/null"
)

@test "--metrics: a file in a folder that does not exist fails (exit 1) before any device" {
	for c in "${commands[@]}"; do
		read -ra words <<<"$c"
		run "$RDMACTL" -d rdmactl_no_such_dev "${words[@]}" --metrics "$d/none/m.prom"
		[ "$status" -eq 1 ] || fail "$c: exit $status: $output"
		[[ $output == *"--metrics '$d/none/m.prom': its folder '$d/none': No such file or directory"* ]] ||
			fail "$c: $output"
	done
}

@test "--metrics: a folder fails (exit 1) before any device, in JSON too" {
	for c in "${commands[@]}"; do
		read -ra words <<<"$c"
		run "$RDMACTL" -d rdmactl_no_such_dev "${words[@]}" --metrics "$d"
		[ "$status" -eq 1 ] || fail "$c: exit $status: $output"
		[[ $output == *"--metrics '$d' is a directory: name a file"* ]] || fail "$c: $output"
	done
	run "$RDMACTL" -j write --bench --metrics "$d" 192.0.2.1/r
	assert_failure 1
	assert_equal "$(jq -r .error.code <<<"$output")" EISDIR
	# and nothing was written beside it
	run ls -A "$d"
	assert_output ""
}

@test "--metrics: usage errors (exit 2)" {
	run "$RDMACTL" atomic --faa 1 --metrics "$d/m.prom" 192.0.2.1/r
	assert_failure 2
	assert_output --partial "atomic: --metrics goes with --bench or --lat"
	run "$RDMACTL" register -S 4K --listen 192.0.2.1 --metrics-interval 5
	assert_failure 2
	assert_output --partial "--metrics-interval goes with --metrics FILE"
	run "$RDMACTL" register -S 4K --listen 192.0.2.1 --metrics "$d/m.prom" --metrics-interval 0
	assert_failure 2
	assert_output --partial "metrics-interval"
	run "$RDMACTL" alltoall -r 0 -w 2 -R file:/dev/null --metrics ""
	assert_failure 2
	assert_output --partial "--metrics: the file name is empty"
	run "$RDMACTL" kvxfer plan --layers 1 --kv-heads 1 --head-dim 8 --tokens 4 --metrics "$d/m.prom"
	assert_failure 2
	assert_output --partial "kvxfer plan: --metrics does not apply here"
	[[ ! -e $d/m.prom ]] || fail "a usage error wrote $d/m.prom"
}

@test "--metrics: a run that fails still writes its file: rdmactl_success 0, mode 0644" {
	require_promtool
	umask 077
	run "$RDMACTL" write --bench --metrics "$d/w.prom" 192.0.2.1/r
	assert_failure 1
	metrics_check "$d/w.prom"
	assert_equal "$(metrics_value "$d/w.prom" rdmactl_success 'command="write"')" 0
	assert_equal "$(stat -c %a "$d/w.prom")" 644
	[[ ! -e $d/w.prom.tmp ]] || fail "the temporary file was left behind"
	run "$RDMACTL" register -S 4K --listen 192.0.2.1 --metrics "$d/r.prom"
	assert_failure 1
	metrics_check "$d/r.prom"
	assert_equal "$(metrics_value "$d/r.prom" rdmactl_success 'command="register"')" 0
}

@test "the metrics check refuses a broken file (a counter without _total, no EOF, a bad label)" {
	require_promtool
	local good='# HELP rdmactl_x_bytes_total x
# TYPE rdmactl_x_bytes_total counter
rdmactl_x_bytes_total{peer="a\"b\\c\nd"} 5
# EOF'
	printf '%s\n' "$good" >"$d/good.prom"
	metrics_check "$d/good.prom"
	assert_equal "$(metrics_value "$d/good.prom" rdmactl_x_bytes_total)" 5
	# each wrong answer is refused
	printf '%s\n' "${good//_total/}" >"$d/no-total.prom"
	run metrics_check "$d/no-total.prom"
	assert_failure
	assert_output --partial 'counter metrics should have "_total" suffix'
	printf '%s\n' "$good" | head -n 3 >"$d/no-eof.prom"
	run metrics_check "$d/no-eof.prom"
	assert_failure
	assert_output --partial "does not end with '# EOF'"
	printf '%s\n' "${good//\\\"/\"}" >"$d/quote.prom"
	run metrics_check "$d/quote.prom"
	assert_failure
	assert_output --partial "promtool refuses"
}

@test "--metrics of a transfer (write, read without --bench): taken, and a run that never connected writes no rail" {
	require_promtool
	run "$RDMACTL" write --pattern zero --size 4K --metrics "$d/w.prom" 192.0.2.1/r
	assert_failure 1
	metrics_check "$d/w.prom"
	assert_equal "$(metrics_value "$d/w.prom" rdmactl_success 'command="write"')" 0
	# nothing moved on any rail: no rail series, not a rail of 0 bytes
	assert_equal "$(metrics_value "$d/w.prom" rdmactl_transfer_rail_bytes_total)" ""
	run "$RDMACTL" -d rxe_a,rxe_c read --out "$d/out" --metrics "$d/r.prom" 192.0.2.1,192.0.2.2/r
	assert_failure 1
	metrics_check "$d/r.prom"
	assert_equal "$(metrics_value "$d/r.prom" rdmactl_success 'command="read"')" 0
}
