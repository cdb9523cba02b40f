#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Several rails (write, read and register over several NICs): what the
# options and targets may say, checked before any device is touched (exit
# 2 with the cause); a well-formed request gets past the parser and fails
# only at the device, which this host lacks (exit 1). The data path is
# tests/rxe/zy-rails.bats.

load helpers

setup() {
	require_binary
	unset RDMACTL_TOKEN
	in=$BATS_TEST_TMPDIR/in
	head -c 64K /dev/zero >"$in"
}

@test "write: a target of two addresses, -d of two devices: parsed, then the device is missing" {
	run "$RDMACTL" -d rxe_a,rxe_c write 192.0.2.1,192.0.2.2:7471/kv --file "$in"
	assert_failure 1
	assert_output --partial "rail 1"
}

@test "write and read: --stripe goes with several rails only" {
	run "$RDMACTL" write 192.0.2.1:7471/kv --file "$in" --stripe 1M
	assert_failure 2
	assert_output --partial "--stripe goes with several rails"
	run "$RDMACTL" read 192.0.2.1:7471/kv --out "$BATS_TEST_TMPDIR/out" --stripe 1M
	assert_failure 2
	assert_output --partial "--stripe goes with several rails"
	# with several rails it is taken
	run "$RDMACTL" -d rxe_a,rxe_c write 192.0.2.1,192.0.2.2:7471/kv --file "$in" --stripe 64K
	assert_failure 1
}

@test "write: --stripe out of range is a usage error" {
	run "$RDMACTL" -d rxe_a,rxe_c write 192.0.2.1,192.0.2.2/kv --file "$in" --stripe 1K
	assert_failure 2
	assert_output --partial "give 4K to 1G"
	run "$RDMACTL" -d rxe_a,rxe_c write 192.0.2.1,192.0.2.2/kv --file "$in" --stripe 2G
	assert_failure 2
	assert_output --partial "give 4K to 1G"
}

@test "write: rails that do not pair up are a usage error" {
	run "$RDMACTL" -d rxe_a,rxe_c,rxe_e write 192.0.2.1,192.0.2.2/kv --file "$in"
	assert_failure 2
	assert_output --partial "the rails do not pair up: 2 server addresses, 3 devices"
	run "$RDMACTL" -d rxe_a,rxe_c write 192.0.2.1/kv --bind 192.0.2.9,192.0.2.8,192.0.2.7 --file "$in"
	assert_failure 2
	assert_output --partial "do not pair up"
	# one server address for every rail is fine
	run "$RDMACTL" write 192.0.2.1/kv --bind 192.0.2.9,192.0.2.8 --file "$in"
	assert_failure 1
	assert_output --partial "rail 1 (192.0.2.9 to 192.0.2.1)"
}

@test "write over rails needs a file or a pattern, read over rails --out" {
	run "$RDMACTL" -d rxe_a,rxe_c write 192.0.2.1,192.0.2.2/kv </dev/null
	assert_failure 2
	assert_output --partial "with several rails, give --file FILE"
	run "$RDMACTL" -d rxe_a,rxe_c read 192.0.2.1,192.0.2.2/kv >/dev/null
	assert_failure 2
	assert_output --partial "with several rails, give --out FILE"
	run "$RDMACTL" -d rxe_a,rxe_c write 192.0.2.1,192.0.2.2/kv --pattern seq --size 1M
	assert_failure 1
}

@test "write and read over rails: a pipe is refused as a usage error, not an illegal seek" {
	# standard input with --size: read in order only
	run bash -c 'head -c 1M /dev/zero | "$1" -d rxe_a,rxe_c write 192.0.2.1,192.0.2.2/kv --size 1M' _ "$RDMACTL"
	assert_failure 2
	assert_output --partial "not standard input"
	refute_output --partial "Illegal seek"
	# a FIFO given as --file, and as --out
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	run "$RDMACTL" -d rxe_a,rxe_c write 192.0.2.1,192.0.2.2/kv --file "$BATS_TEST_TMPDIR/fifo" --size 1M
	assert_failure 2
	assert_output --partial "'$BATS_TEST_TMPDIR/fifo' is not a regular file"
	run "$RDMACTL" -d rxe_a,rxe_c read 192.0.2.1,192.0.2.2/kv --out "$BATS_TEST_TMPDIR/fifo"
	assert_failure 2
	assert_output --partial "--out is written at any offset: '$BATS_TEST_TMPDIR/fifo' is not a regular file"
	# a regular file gets past both checks to the missing device
	run "$RDMACTL" -d rxe_a,rxe_c read 192.0.2.1,192.0.2.2/kv --out "$BATS_TEST_TMPDIR/out"
	assert_failure 1
}

@test "write over rails: an IPv6 target or --bench is refused; an etcd target is resolved for its rails" {
	run timeout 20 "$RDMACTL" -t 2000 -d rxe_a,rxe_c write etcd://127.0.0.1:1/ns/kv --file "$in"
	assert_failure 1
	assert_output --partial "cannot reach etcd at 127.0.0.1:1"
	run "$RDMACTL" -d rxe_a,rxe_c write '[2001:db8::1]:7471/kv' --file "$in"
	assert_failure 2
	assert_output --partial "ADDR1,ADDR2:PORT/REGION"
	run "$RDMACTL" -d rxe_a,rxe_c write 192.0.2.1,192.0.2.2/kv --bench
	assert_failure 2
	assert_output --partial "measure one rail"
}

@test "register: one device per --listen address" {
	run "$RDMACTL" -d rxe_b,rxe_d register --listen 192.0.2.1 -N kv -S 1M
	assert_failure 2
	assert_output --partial "-d names 2 devices and --listen 1 address"
	run "$RDMACTL" -d rxe_b register --listen 192.0.2.1,192.0.2.2 -N kv -S 1M
	assert_failure 2
	assert_output --partial "-d names 1 device and --listen 2 addresses"
	run "$RDMACTL" register --listen 192.0.2.1,bad:port -N kv -S 1M
	assert_failure 2
	assert_output --partial "invalid --listen 'bad:port'"
	# paired: parsed, then the device is missing
	run "$RDMACTL" -d rxe_b,rxe_d register --listen 192.0.2.1,192.0.2.2:7472 -N kv -S 1M
	assert_failure 1
}

@test "write: an empty item in a list of rails is a usage error" {
	run "$RDMACTL" -d rxe_a, write 192.0.2.1,192.0.2.2/kv --file "$in"
	assert_failure 2
	assert_output --partial "an empty item in the list 'rxe_a,'"
	run "$RDMACTL" write 192.0.2.1,,192.0.2.2/kv --file "$in"
	assert_failure 2
	assert_output --partial "an empty item in the list '192.0.2.1,,192.0.2.2'"
	run "$RDMACTL" write 192.0.2.1/kv --bind ,192.0.2.9 --file "$in"
	assert_failure 2
	assert_output --partial "an empty item"
	# the same lists without the empty item get past the parser
	run "$RDMACTL" -d rxe_a write 192.0.2.1,192.0.2.2/kv --file "$in"
	assert_failure 1
}
