#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# The example scripts, where no RDMA device is needed: health-check.sh on
# the fixture trees of tests/fixtures/make-sysfs.sh (and on trees broken on
# purpose), every example's syntax and header, and the usage and failure
# paths of kv-migrate.sh and orchestrate.sh, whose data paths run in the
# SoftRoCE guest (tests/rxe/examples.bats).
#   bats tests/cli/examples.bats

load helpers

setup_file() {
	export RDMACTL=${RDMACTL:-$BATS_TEST_DIRNAME/../../build/cli/rdmactl}
	export EX=$BATS_TEST_DIRNAME/../../examples
	export FX=$BATS_FILE_TMPDIR/fixtures
	bash "$BATS_TEST_DIRNAME/../fixtures/make-sysfs.sh" "$FX"
}

setup() {
	require_binary
}

# health CHECK-ARGS...: run health-check.sh, stdout (the JSON) in $output,
# stderr (the findings) in $stderr.
health() {
	run --separate-stderr timeout 60 "$EX/health-check.sh" "$@"
}

# A copy of fixture $2 named $1 to break; prints its path.
copy_fixture() {
	rm -rf -- "${BATS_TEST_TMPDIR:?}/$1"
	cp -a -- "$FX/$2" "$BATS_TEST_TMPDIR/$1"
	printf '%s\n' "$BATS_TEST_TMPDIR/$1"
}

@test "every example parses, and names its licence, its user and how to run it" {
	local f n=0
	for f in "$EX"/*.sh; do
		bash -n "$f"
		grep -q '^# SPDX-License-Identifier: MIT$' "$f" || fail "$f: no SPDX line"
		grep -q '^set -euo pipefail$' "$f" || fail "$f: no set -euo pipefail"
		[[ -x "$f" ]] || fail "$f is not executable"
		n=$((n + 1))
	done
	((n >= 3))
	for f in health-check kv-migrate orchestrate moe-dispatch push-weights sweep-mpirun preflight-slurm; do
		grep -q "^# For " "$EX/$f.sh" || fail "$f.sh: the header does not say whom it serves"
		run "$EX/$f.sh" --help
		assert_success
		assert_output --partial "examples/$f.sh"
		grep -q "examples/$f.sh" "$EX/README.md" || fail "examples/README.md does not show $f.sh"
	done
}

@test "health-check: the healthy fixture passes, its info finding noted" {
	health --sysfs "$FX/two-socket-8gpu"
	assert_success
	jq -e '.healthy and .exit_status == 0 and .failing_findings == []
		and .summary.ports_active == 9 and (.ports | length) == 9 and .ports_not_ok == []' <<<"$output"
	jq -e '[.info_findings[].check] == ["mtu"] and .source.kind == "sysfs"' <<<"$output"
	[[ "$stderr" == *"healthy: 9 of 9 ports ACTIVE on 9 devices"* ]]
}

@test "health-check: the shared-nic fixture fails with its warnings, printed" {
	health --sysfs "$FX/shared-nic"
	assert_failure 1
	jq -e '(.healthy | not) and .exit_status == 1 and .summary.warnings == 8' <<<"$output"
	run jq -r '[.failing_findings[].check] | sort | join(" ")' <<<"$output"
	assert_output "gpudirect memlock mtu pcie_link port_down rail_cross_socket rail_shared roce_v2_gid"
	[[ "$stderr" == *UNHEALTHY* ]]
	[[ "$stderr" == *"warning [port_down] mlx5_1 port 1 is DOWN"* ]]
	[[ "$stderr" == *"fix: "* ]]
}

@test "health-check: a port going down in a healthy tree fails the check" {
	local t
	t=$(copy_fixture one-down two-socket-8gpu)
	printf '1: DOWN\n' >"$t/class/infiniband/mlx5_3/ports/1/state"
	printf '3: Disabled\n' >"$t/class/infiniband/mlx5_3/ports/1/phys_state"
	health --sysfs "$t"
	assert_failure 1
	jq -e '.summary.ports_active == 8
		and ([.failing_findings[] | select(.check == "port_down") | .message]
		     == ["mlx5_3 port 1 is DOWN (physical state Disabled)"])' <<<"$output"
	[[ "$stderr" == *"[port_down] mlx5_3 port 1 is DOWN"* ]]
}

@test "health-check: --ignore waives checks; what is left decides" {
	local all=(--ignore gpudirect --ignore memlock --ignore mtu --ignore pcie_link
		--ignore port_down --ignore rail_cross_socket --ignore rail_shared --ignore roce_v2_gid)
	health --sysfs "$FX/shared-nic" "${all[@]}"
	assert_success
	jq -e '.healthy and (.ignored_findings | length) == 8 and .failing_findings == []' <<<"$output"
	health --sysfs "$FX/shared-nic" "${all[@]:2}"
	assert_failure 1
	jq -e '[.failing_findings[].check] == ["gpudirect"]' <<<"$output"
}

@test "health-check: a captured tarball is judged like the tree" {
	timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/two-socket-8gpu" \
		--capture "$BATS_TEST_TMPDIR/node.tar.gz" >/dev/null
	health --sysfs "$BATS_TEST_TMPDIR/node.tar.gz"
	assert_success
	jq -e '.healthy and .summary.devices == 9' <<<"$output"
}

@test "health-check: a tree that cannot be read is unhealthy, with rdmactl's reason" {
	health --sysfs "$BATS_TEST_TMPDIR/nonexistent"
	assert_failure 1
	jq -e '(.healthy | not) and (.error | contains("cannot read the sysfs tree"))' <<<"$output"
	local t
	t=$(copy_fixture noports shared-nic)
	rm -rf -- "$t"/devices/virtual/infiniband/rxe0/ports
	health --sysfs "$t"
	assert_failure 1
	jq -e '.error | test("port")' <<<"$output"
}

@test "health-check: usage errors exit 2, --verify refuses a captured tree" {
	health --sysfs "$FX/shared-nic" --verify
	assert_failure 2
	jq -e '.exit_status == 2 and (.error | contains("--sysfs"))' <<<"$output"
	health --bogus
	assert_failure 2
	health --verify-size 1M
	assert_failure 2
	health --timeout soon
	assert_failure 2
}

@test "kv-migrate: a plan that cannot work is refused before anything starts" {
	local args
	for args in "--blocks 8" "--blocks 1,1" "--dst-used 0,1,2,3,4,5,6,7,8,9" "--block-size 12" \
		"--seed x" "--src 198.18.0.1:7471 --dst 198.18.0.1:7471" "--nope"; do
		# shellcheck disable=SC2086 # the words of one case
		run --separate-stderr timeout 10 "$EX/kv-migrate.sh" $args
		assert_failure 2
		jq -e '(.ok | not) and .exit_status == 2 and (.error | length) > 0' <<<"$output"
	done
	run --separate-stderr timeout 10 "$EX/kv-migrate.sh" --blocks 9 --src-blocks 8
	assert_failure 2
	assert_equal "$(jq -r .error <<<"$output")" "--blocks: the source has blocks 0 to 7"
}

@test "kv-migrate and orchestrate: a server that cannot start fails with a JSON summary" {
	# 192.0.2.1 (TEST-NET-1) is nobody's address: register fails at once.
	run --separate-stderr timeout 60 "$EX/kv-migrate.sh" --src 192.0.2.1:7471 --dst 192.0.2.1:7472
	assert_failure 1
	jq -e '(.ok | not) and .exit_status == 1 and (.error | startswith("the source server did not start"))
		and .blocks_done == []' <<<"$output"
	run --separate-stderr timeout 60 "$EX/orchestrate.sh" --listen 192.0.2.1:7471
	assert_failure 1
	jq -e '(.ok | not) and .exit_status == 1 and (.error | startswith("the server"))' <<<"$output"
	run --separate-stderr timeout 10 "$EX/orchestrate.sh" --timeout 0
	assert_failure 2
}

# A folder of stand-ins, $BIN, for every program an example could start
# (each notes its name and arguments in $STARTED and fails), to put first
# on PATH and in $RDMACTL.
stand_ins() {
	local d=$BATS_TEST_TMPDIR/bin p
	mkdir -p "$d"
	BIN=$d
	STARTED=$BATS_TEST_TMPDIR/started
	: >"$STARTED"
	for p in rdmactl apt-get apt dpkg sudo cmake make cc gcc qemu-system-x86_64 mpirun \
		curl wget etcd rdma ip modprobe ibv_devinfo tc; do
		printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit 1\n' "$p" "$STARTED" >"$d/$p"
		chmod +x "$d/$p"
	done
}

@test "every example: --help prints its usage and exits 0, having started nothing" {
	local f bin n=0 left
	stand_ins
	bin=$BIN
	for f in "$EX"/*.sh; do
		mkdir -p "$BATS_TEST_TMPDIR/tmp.${f##*/}"
		run --separate-stderr env PATH="$bin:$PATH" RDMACTL="$bin/rdmactl" \
			TMPDIR="$BATS_TEST_TMPDIR/tmp.${f##*/}" timeout 10 "$f" --help
		((status == 0)) || fail "${f##*/} --help exited $status: $stderr"
		[[ $output == *"examples/${f##*/}"* ]] || fail "${f##*/} --help does not show its usage: $output"
		[[ -z $stderr ]] || fail "${f##*/} --help said on stderr: $stderr"
		[[ ! -s $STARTED ]] || fail "${f##*/} --help started: $(cat "$STARTED")"
		left=$(ls -A "$BATS_TEST_TMPDIR/tmp.${f##*/}")
		[[ -z $left ]] || fail "${f##*/} --help left files behind: $left"
		n=$((n + 1))
	done
	((n >= 10)) || fail "only $n examples"
	# the stand-ins do note what starts them: the check can fail
	run env PATH="$bin:$PATH" RDMACTL="$bin/rdmactl" timeout 10 "$EX/roundtrip.sh" 192.0.2.1
	assert_failure
	grep -q '^rdmactl -j register --listen 192.0.2.1:' "$STARTED"
	# -h too, and an unknown option is a usage error, still starting nothing
	: >"$STARTED"
	for f in demo roundtrip kvxfer-demo; do
		run env PATH="$bin:$PATH" RDMACTL="$bin/rdmactl" timeout 10 "$EX/$f.sh" -h
		assert_success
		assert_output --partial "Usage: examples/$f.sh"
		run --separate-stderr env PATH="$bin:$PATH" RDMACTL="$bin/rdmactl" timeout 10 "$EX/$f.sh" --bogus
		assert_failure 2
		[[ $stderr == *"unknown option '--bogus'"* ]] || fail "$f.sh --bogus: $stderr"
	done
	[[ ! -s $STARTED ]] || fail "started: $(cat "$STARTED")"
}
