#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Two rxe devices joined by a veth pair: two "hosts" in one guest.

load helpers

@test "a client bound to one device writes into a server on the other" {
	need_two_nics
	PORT=$(next_port)
	start_server 1 --listen "$RDMACTL_VM_ADDR_B:$PORT" --name kv --size 4M
	[ "$(jq -r .device <<<"$(descriptor kv)")" = "$RDMACTL_VM_DEV_B" ]
	head -c 4M /dev/urandom >"$BATS_TEST_TMPDIR/in"
	run rdmactl -j write "$RDMACTL_VM_ADDR_B:$PORT/kv" --bind "$RDMACTL_VM_ADDR_A" \
		--file "$BATS_TEST_TMPDIR/in"
	assert_success
	[ "$(jq -r .device <<<"$output")" = "$RDMACTL_VM_DEV_A" ]
	# The server saw the client arrive from the other device's address.
	jq -s -e --arg a "$RDMACTL_VM_ADDR_A" \
		'any(.[]; .event == "connected" and (.peer | startswith($a + ":")))' "$SERVER_OUT"
	run rdmactl -d "$RDMACTL_VM_DEV_A" read "$RDMACTL_VM_ADDR_B:$PORT/kv" \
		--bind "$RDMACTL_VM_ADDR_A" --out "$BATS_TEST_TMPDIR/out"
	assert_success
	cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
	# Naming the wrong device is refused rather than silently ignored.
	run rdmactl -d "$RDMACTL_VM_DEV_B" read "$RDMACTL_VM_ADDR_B:$PORT/kv" \
		--bind "$RDMACTL_VM_ADDR_A" --out "$BATS_TEST_TMPDIR/out"
	assert_failure 1
	assert_output --partial "through device $RDMACTL_VM_DEV_A"
}
