#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The region control plane's handshake (protocol 2, rdmactl-register(8),
# SECURITY): the bytes of an honest client's connect request and proof,
# recorded and replayed against a server with the same token, reveal
# nothing; a listener that an etcd record forged by etcdctl names gets no
# token from rdmactl write, nor the admin token from migrate.

load helpers
bats_require_minimum_version 1.5.0

REGION_REPLAY=${REGION_REPLAY:-$BUILD_DIR/tests/rxe/region_replay}

setup() {
	need_guest
	PORT=$(next_port)
	TOK=d4t4-s3cret
	ADM=adm1n-s3cret
	(umask 077 && printf '%s\n' "$TOK" >"$BATS_TEST_TMPDIR/tok" &&
		printf '%s\n' "$ADM" >"$BATS_TEST_TMPDIR/adm")
}

teardown() {
	common_teardown
}

# recorder DIR [TOKEN]: region_replay record on $ADDR:$PORT in the
# background (its pid in REC, its output in DIR/rec.out), listening within 20 s.
recorder() {
	local i
	"$REGION_REPLAY" record "$ADDR" "$PORT" "$@" >"$1/rec.out" 2>&1 3>&- &
	REC=$!
	started "$REC"
	for ((i = 0; i < 200; i++)); do
		grep -q '^listening' "$1/rec.out" && return 0
		sleep 0.1
	done
	cat "$1/rec.out" >&2
	return 1
}

# recorded DIR: the recorder ended (told that the client has exited, within
# 70 s); what it printed, and whether a request came.
recorded() {
	kill -USR1 "$REC" 2>/dev/null || true
	timeout 70 tail --pid="$REC" -f /dev/null || true
	cat "$1/rec.out"
	grep -q '^request: [1-9]' "$1/rec.out"
}

@test "replayed bytes of an honest client's request and proof reveal nothing to a server with the same token; the honest client is served" {
	# sanitizer tier: always (replayed handshakes against a live server)
	local t=$BATS_TEST_TMPDIR d i
	mkdir "$t/cap"
	# A listener holding the token records what an honest client sends.
	recorder "$t/cap" "$TOK"
	run rdmactl -t 5000 read "$ADDR:$PORT/kv" --size 4K --out /dev/null --token-file "$t/tok"
	assert_failure
	recorded "$t/cap"
	grep -q '^first message: [1-9]' "$t/cap/rec.out"
	# Real bytes, and neither holds the token.
	run grep -c -a -F "$TOK" "$t/cap/req.bin" "$t/cap/msg.bin"
	assert_failure 1
	# The server restarted on that port with that token: only the nonce is new.
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 64K --token-file "$t/tok"
	for i in 1 2 3 4; do
		run "$REGION_REPLAY" replay "$ADDR" "$PORT" "$t/cap"
		echo "$output"
		assert_failure 1
		refute_output --partial "revealed:"
	done
	wait_events rejected 4 "$SERVER_OUT"
	jq -s -e '[.[] | select(.event == "rejected" and (.reason // "" | test("a wrong proof of the token")))]
		| length == 4' "$SERVER_OUT"
	# Its QP takes no READ before the proof, and a request alone is no proof.
	d=$(descriptor kv)
	rm "$t/cap/msg.bin"
	REPLAY_READ="$(jq -r .addr <<<"$d") $(jq -r .rkey <<<"$d")" run "$REGION_REPLAY" replay \
		"$ADDR" "$PORT" "$t/cap"
	echo "$output"
	assert_failure 1
	refute_output --partial "read before the proof: done"
	run "$REGION_REPLAY" replay "$ADDR" "$PORT" "$t/cap"
	assert_failure 1
	refute_output --partial "revealed:"
	# The wrong answer: the honest client, and the replayer proving the
	# token itself, are served.
	run rdmactl read "$ADDR:$PORT/kv" --size 4K --out /dev/null --token-file "$t/tok"
	assert_success
	run "$REGION_REPLAY" prove "$ADDR" "$PORT" "$TOK"
	assert_success
	assert_output "revealed: regions=1 names=kv"
	run "$REGION_REPLAY" prove "$ADDR" "$PORT" "${TOK}X"
	assert_failure 1
	assert_output --partial "did not prove the token"
	kill -0 "$SERVER_PID"
}

@test "protocol 1's request, the raw token, is refused by name; a silent connection is dropped within 3 s" {
	# sanitizer tier: always (old and silent clients against the handshake)
	local t=$BATS_TEST_TMPDIR i d
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 64K --token-file "$t/tok"
	mkdir "$t/v1"
	printf '%s' "$TOK" >"$t/v1/req.bin"
	run "$REGION_REPLAY" replay "$ADDR" "$PORT" "$t/v1"
	assert_failure 1
	assert_output --partial "rdmactl: protocol 1 client; server speaks 2: upgrade rdmactl"
	# A foreign client of protocol 1, the right token raw: refused at the connect.
	d=$(descriptor kv)
	FOREIGN_CLIENT_RAW=1 run timeout 30 "$FOREIGN_CLIENT" write "$ADDR" "$PORT" \
		"$(jq -r .addr <<<"$d")" "$(jq -r .rkey <<<"$d")" 0 16 "$TOK"
	assert_failure 1
	assert_output --partial "rdma_connect: Connection refused"
	# A client that checks the server's proof and then says nothing.
	FOREIGN_CLIENT_HOLD=20 FOREIGN_CLIENT_SILENT=1 "$FOREIGN_CLIENT" read "$ADDR" "$PORT" \
		"$(jq -r .addr <<<"$d")" "$(jq -r .rkey <<<"$d")" 0 16 "$TOK" >"$t/silent.out" 2>&1 3>&- &
	started $!
	for ((i = 0; i < 150; i++)); do
		grep -q 'did not prove its token within 3000 ms' "$SERVER_OUT" && break
		sleep 0.1
	done
	jq -s -e 'any(.[]; .event == "rejected" and .reason == "it did not prove its token within 3000 ms")' \
		"$SERVER_OUT"
	run rdmactl read "$ADDR:$PORT/kv" --size 4K --out /dev/null --token-file "$t/tok"
	cat "$SERVER_OUT"
	assert_success
}

# forged_record NS: a region record for kv in namespace NS, planted with
# etcdctl, naming $ADDR:$PORT (a listener that holds no token).
forged_record() {
	etcdctl --endpoints "http://$ETCD_EP" put "rdmactl/$1/region/kv" \
		"{\"access\":\"rw\",\"host\":\"$ADDR\",\"length\":65536,\"port\":\"$PORT\",\"region\":\"kv\"}" >/dev/null
}

@test "a record forged with etcdctl: write and migrate through it are refused naming the record, and its listener gets no token" {
	# sanitizer tier: always (a hostile listener named by etcd)
	local t=$BATS_TEST_TMPDIR dst
	load '../lib/etcd'
	need_etcd
	start_etcd
	forged_record forged
	mkdir "$t/w" "$t/m" "$t/n"
	# A client with the token refuses the unsigned record before it connects.
	REPLAY_WAIT=5 recorder "$t/n"
	run rdmactl write "etcd://$ETCD_EP/forged/kv" --pattern zero --size 4K --token-file "$t/tok"
	echo "$output"
	assert_failure
	assert_output --partial "etcd record rdmactl/forged/region/kv carries no MAC"
	run recorded "$t/n"
	assert_failure
	assert_output --partial "request: none"
	# Without a token there is nothing to check it with, nor to give away:
	# the listener fails the handshake's proof of none... and gets no token.
	recorder "$t/w"
	run rdmactl write "etcd://$ETCD_EP/forged/kv" --pattern zero --size 4K
	echo "$output"
	recorded "$t/w"
	run grep -c -a -F "$TOK" "$t/w/req.bin"
	assert_failure 1
	# migrate with the admin token alone (which cannot check the record):
	# the source named proves no admin token, so it gets nothing; with
	# --token-file as well the record is refused before connecting.
	# (a port of its own: the one the first listener used is held a while;
	# the destination holds a lease in the namespace, as a move asks)
	dst=$((PORT + 3))
	PORT=$((PORT + 5))
	forged_record forged2
	start_server 1 --listen "$ADDR:$dst" --name kv --size 64K --admin-token-file "$t/adm" \
		--publish "etcd://$ETCD_EP/forged2"
	wait_events published 1 "$SERVER_OUT"
	recorder "$t/m"
	run rdmactl migrate --admin-token-file "$t/adm" "etcd://$ETCD_EP/forged2/kv" "$ADDR:$dst/kv" \
		--dirty 64K
	echo "$output"
	assert_failure
	assert_output --partial "did not prove the admin token"
	assert_output --partial "etcd record rdmactl/forged2/region/kv"
	recorded "$t/m"
	grep -q '^first message: none' "$t/m/rec.out"
	run grep -c -a -e "$ADM" -e "$TOK" "$t/m/req.bin"
	assert_failure 1
	run rdmactl migrate --admin-token-file "$t/adm" --token-file "$t/tok" \
		"etcd://$ETCD_EP/forged2/kv" "$ADDR:$dst/kv" --dirty 64K
	assert_failure
	assert_output --partial "etcd record rdmactl/forged2/region/kv carries no MAC"
}

@test "register --publish signs its record with the token: read through it; copied to another key, unsigned, or checked with another token, it is refused before connecting" {
	local t=$BATS_TEST_TMPDIR v ep
	load '../lib/etcd'
	need_etcd
	start_etcd
	ep=http://$ETCD_EP
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 64K --token-file "$t/tok" \
		--publish "etcd://$ETCD_EP/real"
	wait_events published 1 "$SERVER_OUT"
	run rdmactl read "etcd://$ETCD_EP/real/kv" --size 4K --out /dev/null --token-file "$t/tok"
	assert_success
	v=$(etcdctl --endpoints "$ep" get rdmactl/real/region/kv --print-value-only)
	[[ $v == *'"mac":"'* ]] || false
	# The token is not in the record.
	[[ $v != *"$TOK"* ]] || false
	etcdctl --endpoints "$ep" put rdmactl/copy/region/kv "$v" >/dev/null
	run rdmactl read "etcd://$ETCD_EP/copy/kv" --size 4K --out /dev/null --token-file "$t/tok"
	assert_failure
	assert_output --partial "etcd record rdmactl/copy/region/kv carries a MAC the token does not make"
	etcdctl --endpoints "$ep" put rdmactl/bare/region/kv "$(jq -c 'del(.mac)' <<<"$v")" >/dev/null
	run rdmactl read "etcd://$ETCD_EP/bare/kv" --size 4K --out /dev/null --token-file "$t/tok"
	assert_failure
	assert_output --partial "etcd record rdmactl/bare/region/kv carries no MAC"
	printf '%sX\n' "$TOK" >"$t/tokX"
	chmod 600 "$t/tokX"
	run rdmactl read "etcd://$ETCD_EP/real/kv" --size 4K --out /dev/null --token-file "$t/tokX"
	assert_failure
	assert_output --partial "carries a MAC the token does not make"
}
