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

# Last in this file: it drops every packet the client side sends for a while.
@test "register: peers whose host vanished are dropped within 30 s and their slots served again" {
	need_two_nics
	local pids=() i d t0
	command -v tc >/dev/null || skip "tc (iproute2) is not installed"
	PORT=$(next_port)
	start_server 1 --listen "$RDMACTL_VM_ADDR_B:$PORT" --name kv --size 1M --max-conns 2 \
		--keepalive-ms 1000
	d=$(descriptor kv)
	for i in 1 2; do
		FOREIGN_CLIENT_BIND=$RDMACTL_VM_ADDR_A FOREIGN_CLIENT_HOLD=600 "$FOREIGN_CLIENT" write \
			"$RDMACTL_VM_ADDR_B" "$PORT" "$(jq -r .addr <<<"$d")" "$(jq -r .rkey <<<"$d")" 0 64 \
			>"$BATS_TEST_TMPDIR/client$i.out" 2>&1 &
		pids+=($!)
	done
	for ((i = 0; i < 300; i++)); do
		(($(grep -c '"event":"connected"' "$SERVER_OUT") >= 2)) && break
		sleep 0.1
	done
	# Both slots held: a third client is refused.
	run rdmactl write "$RDMACTL_VM_ADDR_B:$PORT/kv" --bind "$RDMACTL_VM_ADDR_A" --pattern zero --size 4K
	assert_failure
	assert_output --partial "too many connections"
	# The client host vanishes: from now on nothing it sends arrives, so
	# its clients' disconnects are lost with the rest.
	tc qdisc add dev va root netem loss 100% || skip "netem is not available in the guest"
	kill -KILL "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null || true
	t0=$SECONDS
	for ((i = 0; i < 600; i++)); do
		(($(grep -c '"event":"disconnected"' "$SERVER_OUT") >= 2)) && break
		sleep 0.1
	done
	tc qdisc del dev va root
	echo "# dropped after $((SECONDS - t0)) s" >&3
	jq -s -e '[.[] | select(.event == "disconnected" and (.reason // "" | test("retry|keepalive")))] | length == 2' \
		"$SERVER_OUT"
	((SECONDS - t0 < 30))
	# Both slots are free again.
	run rdmactl write "$RDMACTL_VM_ADDR_B:$PORT/kv" --bind "$RDMACTL_VM_ADDR_A" --pattern zero --size 4K
	assert_success
}
