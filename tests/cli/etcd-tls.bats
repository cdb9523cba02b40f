#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# etcd over TLS with etcd's own users (no RDMA needed): a real etcd on
# loopback, TLS only with client certificates, authentication on; rdmactl
# takes the CA, its certificate and key, the user and the password from the
# environment (RDMACTL_ETCD_*, see rdmactl(8)). The rendezvous and a
# target's resolve work with the right ones and are refused, named, with
# wrong ones.

load helpers
load '../lib/etcd'

PROBE=${RDV_PROBE:-${RDMACTL_BUILD_DIR:-$ROOT/build}/tests/unit/rdv_probe}
RECORD='{"access":"rw","host":"198.18.1.1","length":1048576,"port":"7471","region":"kv"}'

setup() {
	require_binary
	[[ -x $PROBE ]] || fail "no rdv_probe at $PROBE: build first"
	need_etcd
	command -v openssl >/dev/null || skip "needs openssl (tests/deps.sh)"
	ETCD_CERTS=$BATS_TEST_TMPDIR/certs
	etcd_certs "$ETCD_CERTS"
	printf 's3cret\n' >"$BATS_TEST_TMPDIR/password"
	start_etcd_tls_auth s3cret
	etcdctl_tls --user root:s3cret put rdmactl/ns1/region/kv "$RECORD" >/dev/null
}

teardown() {
	common_teardown
}

# with_tls CMD...: CMD with the CA, the client certificate, user root and
# its password file; each unless the caller set that variable (to "": none).
with_tls() {
	RDMACTL_ETCD_CA=${RDMACTL_ETCD_CA-$ETCD_CERTS/ca.pem} \
		RDMACTL_ETCD_CERT=${RDMACTL_ETCD_CERT-$ETCD_CERTS/client.pem} \
		RDMACTL_ETCD_KEY=${RDMACTL_ETCD_KEY-$ETCD_CERTS/client.key} \
		RDMACTL_ETCD_USER=${RDMACTL_ETCD_USER-root} \
		RDMACTL_ETCD_PASSWORD_FILE=${RDMACTL_ETCD_PASSWORD_FILE-$BATS_TEST_TMPDIR/password} "$@"
}

@test "with the CA, a client certificate, the user and the password: a rendezvous and a resolve work" {
	run with_tls timeout 30 "$PROBE" "etcd://$ETCD_EP/job1" 0 1 198.18.0.1:7000 10000 0
	assert_success
	assert_output --partial "0 198.18.0.1:7000"
	# the resolve goes through; the region's server is not there (no RDMA here)
	run with_tls timeout 30 "$RDMACTL" -v -t 5000 read "etcd://$ETCD_EP/ns1/kv" --out /dev/null
	assert_failure 1
	assert_output --partial "etcd rdmactl/ns1/region/kv names 198.18.1.1:7471"
	# the password from the environment works as well
	RDMACTL_ETCD_PASSWORD=s3cret RDMACTL_ETCD_PASSWORD_FILE='' \
		run with_tls timeout 30 "$PROBE" "etcd://$ETCD_EP/job2" 0 1 198.18.0.1:7000 10000 0
	assert_success
}

@test "a wrong password, a wrong CA, no client certificate or plain HTTP is refused, named" {
	printf 'wrong\n' >"$BATS_TEST_TMPDIR/password"
	run with_tls timeout 30 "$RDMACTL" -t 5000 read "etcd://$ETCD_EP/ns1/kv" --out /dev/null
	assert_failure 1
	assert_output --partial "etcd at $ETCD_EP refused user root (HTTP 400): "
	assert_output --partial "authentication failed"
	run with_tls timeout 30 "$PROBE" "etcd://$ETCD_EP/job1" 0 1 198.18.0.1:7000 3000 0
	assert_failure
	assert_output --partial "etcd at $ETCD_EP refused user root"
	printf 's3cret\n' >"$BATS_TEST_TMPDIR/password"
	# a CA that did not sign the server's certificate
	RDMACTL_ETCD_CA=$ETCD_CERTS/other-ca.pem \
		run with_tls timeout 30 "$RDMACTL" -t 5000 read "etcd://$ETCD_EP/ns1/kv" --out /dev/null
	assert_failure 1
	assert_output --partial "cannot reach etcd at $ETCD_EP over TLS"
	# no client certificate: the server's handshake refuses it
	RDMACTL_ETCD_CERT='' RDMACTL_ETCD_KEY='' \
		run with_tls timeout 30 "$RDMACTL" -t 5000 read "etcd://$ETCD_EP/ns1/kv" --out /dev/null
	assert_failure 1
	assert_output --partial "cannot reach etcd at $ETCD_EP over TLS"
	# nothing set: plain HTTP to a TLS port
	run timeout 30 "$RDMACTL" -t 5000 read "etcd://$ETCD_EP/ns1/kv" --out /dev/null
	assert_failure 1
	assert_output --partial "etcd at $ETCD_EP"
	# no credentials at all over TLS: etcd refuses the read
	RDMACTL_ETCD_USER='' RDMACTL_ETCD_PASSWORD_FILE='' \
		run with_tls timeout 30 "$RDMACTL" -t 5000 read "etcd://$ETCD_EP/ns1/kv" --out /dev/null
	assert_failure 1
	refute_output --partial "names 198.18.1.1:7471"
	# a user without a password, a certificate without its key
	RDMACTL_ETCD_PASSWORD_FILE='' \
		run with_tls timeout 30 "$RDMACTL" -t 5000 read "etcd://$ETCD_EP/ns1/kv" --out /dev/null
	assert_failure 1
	assert_output --partial "RDMACTL_ETCD_USER root needs a password"
	RDMACTL_ETCD_KEY='' \
		run with_tls timeout 30 "$RDMACTL" -t 5000 read "etcd://$ETCD_EP/ns1/kv" --out /dev/null
	assert_failure 1
	assert_output --partial "RDMACTL_ETCD_CERT and RDMACTL_ETCD_KEY go together"
}
