#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Regions named through etcd (register --publish, etcd://HOST:PORT/NS/REGION
# targets, migrate's etcd source) without a device: malformed addresses are
# usage errors (2) before anything is sent; against a real etcd on loopback
# a target resolves through its key, and a missing key, a foreign record,
# a destination without a lease or an unreachable etcd are named errors (1).

load helpers
load '../lib/etcd'

setup() {
	require_binary
}

teardown() {
	common_teardown # etcd
}

# put KEY VALUE: through the v3 JSON gateway.
put() {
	curl -s --noproxy '*' -m 5 -X POST "http://$ETCD_EP/v3/kv/put" \
		-d "{\"key\":\"$(printf %s "$1" | base64 -w0)\",\"value\":\"$(printf %s "$2" | base64 -w0)\"}" >/dev/null
}

@test "malformed etcd addresses are usage errors, in every command that takes one" {
	local bad
	for bad in etcd://10.0.0.5/ns etcd://10.0.0.5:2379 etcd://10.0.0.5:2379/ \
		etcd://10.0.0.5:99999/ns 'etcd://10.0.0.5:2379/n s' etcd://10.0.0.5:2379/a/b; do
		run "$RDMACTL" register --listen 198.18.0.1 --size 1M --publish "$bad"
		assert_failure 2
		assert_output --partial "invalid --publish '$bad': expected etcd://HOST:PORT/NS"
	done
	for bad in etcd://10.0.0.5/ns/kv etcd://10.0.0.5:2379/kv etcd://10.0.0.5:2379/ns/ \
		'etcd://10.0.0.5:2379/ns/k v' 'etcd://10.0.0.5:2379/n!s/kv' etcd://:2379/ns/kv; do
		run "$RDMACTL" -j read "$bad" --out /dev/null
		assert_failure 2
		jq -e --arg b "$bad" '.error.message | startswith("read: invalid target \u0027" + $b + "\u0027: expected etcd://HOST:PORT/NS/REGION")' <<<"$output"
		run "$RDMACTL" migrate "$bad" 198.18.1.2:7471/kv
		assert_failure 2
		assert_output --partial "migrate: invalid target '$bad': expected etcd://HOST:PORT/NS/REGION"
	done
	run "$RDMACTL" register --listen 0.0.0.0 --size 1M --publish etcd://10.0.0.5:2379/ns
	assert_failure 2
	assert_output --partial "--publish needs --listen with the address clients reach"
	run "$RDMACTL" register --listen 198.18.0.1 --size 1M --lease-ttl 5
	assert_failure 2
	assert_output --partial "--lease-ttl goes with --publish"
	run "$RDMACTL" migrate etcd://10.0.0.5:2379/ns/kv 198.18.1.2:7471/kv --whole
	assert_failure 2
	assert_output --partial "is for a live move"
}

@test "an etcd that is not there is named, within the timeout" {
	run timeout 20 "$RDMACTL" -t 2000 atomic etcd://127.0.0.1:1/ns/kv --faa 1
	assert_failure 1
	assert_output --partial "cannot reach etcd at 127.0.0.1:1"
	run timeout 20 "$RDMACTL" -t 2000 migrate etcd://127.0.0.1:1/ns/kv 198.18.1.2:7471/kv
	assert_failure 1
	assert_output --partial "cannot reach etcd at 127.0.0.1:1"
}

@test "a target resolves through its region's key; a missing key or a foreign record is named" {
	need_etcd
	start_etcd
	# The record names a server that is not there: the client goes there
	# (and fails connecting, there is no RDMA device here).
	put rdmactl/ns1/region/kv '{"access":"rw","host":"198.18.1.1","length":1048576,"port":"7471","region":"kv"}'
	run timeout 30 "$RDMACTL" -v -t 5000 read "etcd://$ETCD_EP/ns1/kv" --out /dev/null
	assert_failure 1
	assert_output --partial "etcd rdmactl/ns1/region/kv names 198.18.1.1:7471"
	run timeout 30 "$RDMACTL" -t 5000 read "etcd://$ETCD_EP/ns1/other" --out /dev/null
	assert_failure 1
	assert_output --partial "no region 'other' is published in etcd at $ETCD_EP (no key rdmactl/ns1/region/other"
	put rdmactl/ns1/region/junk 'not a record'
	run timeout 30 "$RDMACTL" -t 5000 write "etcd://$ETCD_EP/ns1/junk" --file /dev/null
	assert_failure 1
	assert_output --partial "key rdmactl/ns1/region/junk holds no region record of rdmactl's"
}

@test "a region published on two rails: a client with a device a rail takes each rail's address from the record" {
	local f=$BATS_TEST_TMPDIR/in
	need_etcd
	start_etcd
	head -c 1M /dev/zero >"$f"
	put rdmactl/ns3/region/kv '{"access":"rw","host":"198.18.1.2","length":1048576,"port":"7471","rails":[{"host":"198.18.1.2","port":"7471"},{"host":"198.18.2.2","port":"7472"}],"region":"kv"}'
	# three devices for two rails: the record's two addresses do not pair up with them
	run timeout 30 "$RDMACTL" -t 5000 -d rxe_a,rxe_c,rxe_e write "etcd://$ETCD_EP/ns3/kv" --file "$f"
	assert_failure 2
	assert_output --partial "the rails do not pair up: 2 server addresses, 3 devices (-d)"
	# two: past the pairing, to opening rail 1 (this host has no RDMA device)
	run timeout 30 "$RDMACTL" -t 5000 -d rxe_a,rxe_c write "etcd://$ETCD_EP/ns3/kv" --file "$f"
	assert_failure 1
	refute_output --partial "do not pair up"
	assert_output --partial "rail 1: "
	# a list of one rail is no record of rdmactl's
	put rdmactl/ns3/region/one '{"access":"rw","host":"198.18.1.2","length":1048576,"port":"7471","rails":[{"host":"198.18.1.2","port":"7471"}],"region":"one"}'
	run timeout 30 "$RDMACTL" -t 5000 -d rxe_a,rxe_c write "etcd://$ETCD_EP/ns3/one" --file "$f"
	assert_failure 1
	assert_output --partial "key rdmactl/ns3/region/one holds no region record of rdmactl's"
}

@test "migrate from an etcd name: the destination must hold a lease there, checked before any connection" {
	need_etcd
	start_etcd
	put rdmactl/ns2/region/kv '{"access":"rw","host":"198.18.1.1","length":1048576,"port":"7471","region":"kv"}'
	run timeout 30 "$RDMACTL" -t 5000 migrate "etcd://$ETCD_EP/ns2/kv" 198.18.1.2:7471/kv
	assert_failure 1
	assert_output --partial "the destination 198.18.1.2:7471 holds no lease in etcd at $ETCD_EP (no key rdmactl/ns2/server/198.18.1.2:7471): start it with register --publish etcd://$ETCD_EP/ns2"
	# With the destination's key there, it gets as far as connecting.
	put rdmactl/ns2/server/198.18.1.2:7471 '{"host":"198.18.1.2","port":"7471","regions":1}'
	run timeout 30 "$RDMACTL" -t 5000 migrate "etcd://$ETCD_EP/ns2/kv" 198.18.1.2:7471/kv
	assert_failure 1
	assert_output --partial "the source 198.18.1.1:7471"
	# The key is untouched by a move that never started.
	run timeout 30 "$RDMACTL" -v -t 5000 read "etcd://$ETCD_EP/ns2/kv" --out /dev/null
	assert_output --partial "names 198.18.1.1:7471"
}
