#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl shell moving data: runs only in the SoftRoCE guest
# (tests/vm/run.sh), where rxe0 sits on netdev d0 with 198.18.0.1.

load ../cli/helpers
load ../cli/tmux

ADDR=198.18.0.1

setup() {
	[[ ${RDMACTL_VM:-} == 1 ]] || skip "needs the SoftRoCE guest (tests/vm/run.sh)"
	require_binary
}

teardown() {
	shell_stop
	common_teardown
}

# What write --pattern seq puts at offsets 0..n-1: each byte its offset mod
# 256. Few forks: each costs tens of milliseconds in the guest.
seq_pattern() {
	local i oct k f=$BATS_TEST_TMPDIR/256
	for ((i = 0; i < 256; i++)); do
		printf -v oct '%03o' "$i"
		printf "\\$oct"
	done >"$f"
	for ((k = 256; k < $1; k *= 2)); do
		cat "$f" "$f" >"$f.2"
		mv "$f.2" "$f"
	done
	head -c "$1" "$f"
}

@test "register serves in the background; write and read reuse one connection" {
	local out="$BATS_TEST_TMPDIR/kv.bin"
	SHELL_GLOBALS=-v shell_start
	type_line "register --listen $ADDR:7471 --name kv --size 1M"
	wait_for "region kv: addr 0x"
	type_line "write $ADDR:7471/kv --pattern seq --size 64K"
	wait_for "wrote to $ADDR:7471/kv at offset 0 via ${RDMACTL_VM_DEV:-rxe0}: 65536 bytes"
	wait_for ": connected"
	type_line "read $ADDR:7471/kv --size 64K --out $out"
	wait_for "into $out via ${RDMACTL_VM_DEV:-rxe0}: 65536 bytes"
	wait_for "rdmactl: reusing the connection to $ADDR:7471"
	seq_pattern 65536 >"$BATS_TEST_TMPDIR/expected"
	cmp "$out" "$BATS_TEST_TMPDIR/expected"

	# Names known in the session complete.
	type_text 'unregister k'
	keys Tab
	wait_cursor_line "rdmactl> unregister kv "
	keys C-u
	type_text "read ${ADDR%.*}"
	keys Tab
	wait_cursor_line "rdmactl> read $ADDR:7471/kv "
	keys C-u

	type_line regions
	wait_for "kv               $ADDR:7471"
	# A failing command closes its connection; the shell goes on.
	type_line "atomic $ADDR:7471/kv --faa 1"
	wait_for "does not allow atomics"
	type_line "read $ADDR:7471/kv --size 4K --out $out"
	wait_for "into $out via ${RDMACTL_VM_DEV:-rxe0}: 4096 bytes"
	type_line 'unregister kv'
	wait_for "stopped serving kv on $ADDR:7471"
	type_line regions
	wait_for "no regions served here"
	# No prompt follows exit: type it without waiting for one.
	type_text exit
	keys Enter
	wait_for "EXITED 0"
}

@test "served regions answer other processes until the shell ends" {
	shell_start
	type_line "register --listen $ADDR:7472 --name a --size 64K --name b --size 64K --access atomic"
	wait_for "region b: addr 0x"
	type_line "register --listen $ADDR:7472 --name c --size 4K"
	wait_for "rdmactl: cannot listen on $ADDR:7472" # the port is taken; the shell goes on
	run "$RDMACTL" -j atomic "$ADDR:7472/b" --faa 5
	assert_success
	echo "$output" | jq -e '.old == 0 and .new == 5'
	wait_for ": connected"
	wait_for ": disconnected"
	type_line 'unregister --all'
	wait_for "stopped serving a, b on $ADDR:7472"
	run "$RDMACTL" -t 2000 atomic "$ADDR:7472/b" --faa 5
	assert_failure 1
	type_line "register --listen $ADDR:7472 --name c --size 4K"
	wait_for "region c: addr 0x"
	keys C-d
	wait_for "EXITED 0"
	run "$RDMACTL" -t 2000 read "$ADDR:7472/c" --out /dev/null
	assert_failure 1
}

@test "-j: register prints one descriptor document per region" {
	SHELL_GLOBALS=-j shell_start
	type_line "register --listen $ADDR:7473 --name kv --size 4K"
	wait_for '"event":"region"'
	screen | grep -F '"event":"region"' | jq -e '.name == "kv" and .length == 4096 and .listen.port == 7473'
	type_line regions
	wait_for '"regions":[{'
	screen | grep -F '"regions":[' | jq -e '.regions[0].name == "kv"'
	keys C-d
	wait_for "EXITED 0"
}
