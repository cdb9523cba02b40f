#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Does the SoftRoCE test bed carry real RDMA traffic? These run inside the
# guest that tests/vm/run.sh boots (the host kernel has no RDMA):
#   tests/vm/run.sh -- bats tests/rxe/00-testbed.bats
#   tests/vm/run.sh --two-nics -- bats tests/rxe/00-testbed.bats
#   tests/vm/run.sh --four-nics -- bats tests/rxe/00-testbed.bats
# Outside the guest every test skips and says why.

bats_load_library bats-support
bats_load_library bats-assert
load '../lib/teardown'

setup() {
	[[ "${RDMACTL_VM:-}" == 1 ]] ||
		skip "needs the SoftRoCE guest: tests/vm/run.sh -- bats ${BATS_TEST_FILENAME#"$PWD/"}"
	server_pid=
}

teardown() {
	[[ -z "${server_pid:-}" ]] || kill "$server_pid" 2>/dev/null || true
	common_teardown
}

# The index of the RoCE v2 GID of device $1 for IPv4 address $2, read from
# ibv_devinfo (not from the harness, whose work this checks).
roce_v2_gid_index() {
	ibv_devinfo -v -d "$1" |
		sed -n "s/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:$2, RoCE v2\$/\1/p" |
		head -n 1
}

# Start a server in the background with its output in file $1; bounded so
# that a client that never comes cannot hang the run. Fd 3 is bats' own.
start_server() {
	local log=$1
	shift
	timeout 120 "$@" >"$log" 2>&1 3>&- &
	server_pid=$!
}

# Wait until something listens on TCP port $1: bounded tries, so that the
# client starts only once the server is ready.
wait_listening() {
	local try
	for ((try = 0; try < 300; try++)); do
		[[ -n "$(ss -Hltn "sport = :$1")" ]] && return 0
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "nothing listens on port $1" >&2
	return 1
}

# Reap the server and check its exit status; show its output on failure.
wait_server() {
	local log=$1 status=0
	wait "$server_pid" || status=$?
	server_pid=
	if ((status != 0)); then
		echo "server exited with status $status:" >&2
		cat -- "$log" >&2
		return 1
	fi
}

counter() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"; }

@test "rxe0 on d0 is ACTIVE with a RoCE v2 GID for 198.18.0.1" {
	run ibv_devices
	assert_success
	assert_output --regexp '(^|[[:space:]])rxe0[[:space:]]'

	run rdma link show rxe0/1
	assert_success
	assert_output --partial 'state ACTIVE'
	assert_output --partial 'netdev d0'

	run ibv_devinfo -v -d rxe0
	assert_success
	assert_output --regexp 'state:[[:space:]]+PORT_ACTIVE'
	assert_output --regexp 'active_mtu:[[:space:]]+4096'
	assert_output --regexp 'GID\[ *[0-9]+\]:[[:space:]]+::ffff:198\.18\.0\.1, RoCE v2'

	assert_equal "$RDMACTL_VM_DEV" rxe0
	assert_equal "$RDMACTL_VM_ADDR" 198.18.0.1
	assert_equal "$RDMACTL_VM_GID_INDEX" "$(roce_v2_gid_index rxe0 198.18.0.1)"
}

@test "ib_write_bw over rxe0 (64 KiB x 200, RC)" {
	local gid log=$BATS_TEST_TMPDIR/server.log port=18601
	gid=$(roce_v2_gid_index rxe0 198.18.0.1)
	[[ -n "$gid" ]] || fail "rxe0 has no RoCE v2 GID for 198.18.0.1"
	local args=(-d rxe0 -x "$gid" -F -s 65536 -n 200 -p "$port")

	start_server "$log" ib_write_bw "${args[@]}"
	wait_listening "$port"
	run timeout 120 ib_write_bw "${args[@]}" 127.0.0.1
	assert_success
	# The result row: bytes, iterations, peak and average MB/s.
	assert_output --regexp '(^|[[:space:]])65536[[:space:]]+200[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+'
	wait_server "$log"
}

@test "RC traffic between rxe_a and rxe_b (veth pair)" {
	[[ -n "${RDMACTL_VM_ADDR_A:-}" ]] || skip "needs --two-nics"
	local log=$BATS_TEST_TMPDIR/server.log port=18602 gid_a gid_b
	gid_a=$(roce_v2_gid_index rxe_a "$RDMACTL_VM_ADDR_A")
	gid_b=$(roce_v2_gid_index rxe_b "$RDMACTL_VM_ADDR_B")
	[[ -n "$gid_a" && -n "$gid_b" ]] || fail "no RoCE v2 GIDs: rxe_a '$gid_a', rxe_b '$gid_b'"
	local sent_a rcvd_b
	sent_a=$(counter rxe_a sent_pkts)
	rcvd_b=$(counter rxe_b rcvd_pkts)

	start_server "$log" ibv_rc_pingpong -d rxe_a -g "$gid_a" -p "$port" -n 500
	wait_listening "$port"
	run timeout 120 ibv_rc_pingpong -d rxe_b -g "$gid_b" -p "$port" -n 500 "$RDMACTL_VM_ADDR_A"
	assert_success
	assert_line --regexp "^ *local address: .*GID ::ffff:${RDMACTL_VM_ADDR_B//./\\.}\$"
	assert_line --regexp "^ *remote address: .*GID ::ffff:${RDMACTL_VM_ADDR_A//./\\.}\$"
	assert_output --regexp '500 iters in'
	wait_server "$log"

	# The packets really crossed the pair: rxe_a sent, rxe_b received.
	(($(counter rxe_a sent_pkts) >= sent_a + 500)) || fail "rxe_a sent too few packets"
	(($(counter rxe_b rcvd_pkts) >= rcvd_b + 500)) || fail "rxe_b received too few packets"
}

@test "RC traffic between rxe_c and rxe_d (the second veth pair)" {
	[[ -n "${RDMACTL_VM_ADDR_C:-}" ]] || skip "needs --four-nics"
	local log=$BATS_TEST_TMPDIR/server.log port=18603 gid_c gid_d
	assert_equal "$RDMACTL_VM_DEV_C" rxe_c
	assert_equal "$RDMACTL_VM_DEV_D" rxe_d
	gid_c=$(roce_v2_gid_index rxe_c "$RDMACTL_VM_ADDR_C")
	gid_d=$(roce_v2_gid_index rxe_d "$RDMACTL_VM_ADDR_D")
	assert_equal "$RDMACTL_VM_GID_INDEX_C" "$gid_c"
	assert_equal "$RDMACTL_VM_GID_INDEX_D" "$gid_d"
	local sent_c rcvd_d sent_a
	sent_c=$(counter rxe_c sent_pkts)
	rcvd_d=$(counter rxe_d rcvd_pkts)
	sent_a=$(counter rxe_a sent_pkts)

	start_server "$log" ibv_rc_pingpong -d rxe_d -g "$gid_d" -p "$port" -n 500
	wait_listening "$port"
	run timeout 120 ibv_rc_pingpong -d rxe_c -g "$gid_c" -p "$port" -n 500 "$RDMACTL_VM_ADDR_D"
	assert_success
	assert_line --regexp "^ *local address: .*GID ::ffff:${RDMACTL_VM_ADDR_C//./\\.}\$"
	assert_line --regexp "^ *remote address: .*GID ::ffff:${RDMACTL_VM_ADDR_D//./\\.}\$"
	wait_server "$log"

	# The packets crossed the second pair, not the first.
	(($(counter rxe_c sent_pkts) >= sent_c + 500)) || fail "rxe_c sent too few packets"
	(($(counter rxe_d rcvd_pkts) >= rcvd_d + 500)) || fail "rxe_d received too few packets"
	(($(counter rxe_a sent_pkts) < sent_a + 500)) || fail "the first pair carried the traffic"
}
