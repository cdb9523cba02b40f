#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# register / write / read / atomic over real rdma_rxe in the SoftRoCE guest.

load helpers
load ../lib/lat

setup() {
	need_guest
	PORT=$(next_port)
}

# bats test_tags=plain-only
@test "8 MiB of random data round-trips through write and read" {
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 8M
	head -c 8M /dev/urandom >"$BATS_TEST_TMPDIR/in"
	run rdmactl -j write "$ADDR:$PORT/kv" --file "$BATS_TEST_TMPDIR/in"
	assert_success
	[ "$(jq -r .bytes <<<"$output")" -eq 8388608 ]
	[ "$(jq -r .region <<<"$output")" = kv ]
	run rdmactl -j read "$ADDR:$PORT/kv" --size 8M --out "$BATS_TEST_TMPDIR/out"
	assert_success
	[ "$(jq -r .bytes <<<"$output")" -eq 8388608 ]
	[ "$(sha256sum <"$BATS_TEST_TMPDIR/in")" = "$(sha256sum <"$BATS_TEST_TMPDIR/out")" ]
}

# bats test_tags=plain-only
@test "a host region says it is registered as host memory; --mem cuda:0 with no GPU fails plainly" {
	start_server 1 --listen "$ADDR:$PORT" --name h --size 64K
	d=$(descriptor h)
	[ "$(jq -c '[.mem, .gpu, .registration, .registration_notes]' <<<"$d")" = '["host",null,"host",null]' ]
	stop_server TERM
	[ "$SERVER_RC" -eq 0 ]
	run timeout 60 "$RDMACTL" register --listen "$ADDR:$(next_port)" --name g --size 1M --mem cuda:0
	assert_failure 1
	refute_output --partial "region g: addr"
	if jq -e '.features.gpu_memory' <<<"$("$RDMACTL" -j help)" >/dev/null; then
		# The guest has no NVIDIA driver: the allocation says so.
		assert_output --partial "GPU memory needs the NVIDIA driver"
	else
		assert_output --partial "built without CUDA"
	fi
}

@test "stdin and stdout work as the data path, at an offset" {
	local t=$BATS_TEST_TMPDIR
	start_server 1 --listen "$ADDR:$PORT" --size 1M
	# A known background first, so that misplaced bytes show wherever they land.
	head -c 1M /dev/urandom >"$t/bg"
	rdmactl write "$ADDR:$PORT" --file "$t/bg" >/dev/null
	head -c 300000 /dev/urandom >"$t/in"
	rdmactl write "$ADDR:$PORT" --offset 4096 <"$t/in" >/dev/null
	rdmactl read "$ADDR:$PORT/default" --offset 4096 --size 300000 >"$t/out"
	cmp "$t/in" "$t/out"
	# The whole region: the background up to byte 4096, the data at bytes
	# 4096..304095, the background again from byte 304096 to the end.
	rdmactl read "$ADDR:$PORT/default" --out "$t/all" >/dev/null
	{ head -c 4096 "$t/bg"; cat "$t/in"; tail -c +304097 "$t/bg"; } >"$t/want"
	[ "$(stat -c %s "$t/want")" -eq 1048576 ]
	cmp "$t/want" "$t/all"
	# A read at another offset returns exactly those bytes of the region.
	rdmactl read "$ADDR:$PORT/default" --offset 303000 --size 5000 >"$t/part"
	cmp "$t/part" <(tail -c +303001 "$t/want" | head -c 5000)
}

# bats test_tags=plain-only
@test "the descriptor names region, addr, rkey, length, access, device, gid, listen and token" {
	start_server 2 --listen "$ADDR:$PORT" --token s3cret --name a --size 64K --access ro \
		--name b --size 1M --access atomic
	d=$(descriptor a)
	[ "$(jq -r .length <<<"$d")" -eq 65536 ]
	[ "$(jq -r .access <<<"$d")" = ro ]
	[ "$(jq -r .device <<<"$d")" = "${RDMACTL_VM_DEV:-rxe0}" ]
	[ "$(jq -r .listen.address <<<"$d")" = "$ADDR" ]
	[ "$(jq -r .listen.port <<<"$d")" -eq "$PORT" ]
	[ "$(jq -r .token <<<"$d")" = s3cret ]
	[ "$(jq -r .gid <<<"$d")" = "::ffff:$ADDR" ]
	[ "$(jq -r .gid_type <<<"$d")" = "RoCE v2" ]
	[ "$(jq -r '.addr > 0 and .rkey > 0' <<<"$d")" = true ]
	[ "$(jq -r .access <<<"$(descriptor b)")" = atomic ]
	[ "$(grep -c '"event":"region"' "$SERVER_OUT")" -eq 2 ]
}

# bats test_tags=plain-only
@test "a file-backed region keeps its content across SIGTERM and a restart" {
	local t=$BATS_TEST_TMPDIR f=$BATS_TEST_TMPDIR/region.bin
	head -c 2M /dev/urandom >"$t/in"
	start_server 1 --listen "$ADDR:$PORT" --name disk --file "$f" --size 2M
	rdmactl write "$ADDR:$PORT/disk" --file "$t/in" >/dev/null
	stop_server TERM
	[ "$SERVER_RC" -eq 0 ]
	grep -q '"event":"stopped"' "$SERVER_OUT"
	[ "$(stat -c %s "$f")" -eq 2097152 ]
	cmp "$t/in" "$f" # what was written is in the file
	start_server 1 --listen "$ADDR:$PORT" --name disk --file "$f"
	[ "$(jq -r .length <<<"$(descriptor disk)")" -eq 2097152 ]
	rdmactl read "$ADDR:$PORT/disk" --out "$t/back" >/dev/null
	cmp "$t/in" "$t/back" # and the restarted server serves it
	# A write into the restarted region reaches the file, at its offset.
	head -c 64K /dev/urandom >"$t/in2"
	rdmactl write "$ADDR:$PORT/disk" --offset 1M --file "$t/in2" >/dev/null
	stop_server TERM
	[ "$SERVER_RC" -eq 0 ]
	{ head -c 1048576 "$t/in"; cat "$t/in2"; tail -c +1114113 "$t/in"; } >"$t/want"
	cmp "$t/want" "$f"
}

@test "four concurrent clients doing 1000 fetch-adds each sum exactly" {
	start_server 1 --listen "$ADDR:$PORT" --name ctr --size 4K --access atomic
	for i in 1 2 3 4; do
		rdmactl -j atomic "$ADDR:$PORT/ctr" --faa 1 --bench --iters 1000 --depth 16 \
			>"$BATS_TEST_TMPDIR/c$i" &
		pids+=($!)
	done
	# Wait for the clients only: the server runs on in the background.
	failed=0
	for p in "${pids[@]}"; do
		wait "$p" || failed=1
	done
	cat "$BATS_TEST_TMPDIR"/c*
	[ "$failed" -eq 0 ]
	for i in 1 2 3 4; do
		[ "$(jq -r .iters "$BATS_TEST_TMPDIR/c$i")" -eq 1000 ]
	done
	run rdmactl -j atomic "$ADDR:$PORT/ctr" --faa 0
	assert_success
	[ "$(jq -r .old <<<"$output")" -eq 4000 ]
}

@test "compare-and-swap swaps on a match and not otherwise" {
	start_server 1 --listen "$ADDR:$PORT" --name ctr --size 4K --access atomic
	run rdmactl -j atomic "$ADDR:$PORT/ctr" --offset 8 --cas 0,5
	assert_success
	[ "$(jq -r .old <<<"$output")" -eq 0 ]
	[ "$(jq -r .swapped <<<"$output")" = true ]
	run rdmactl -j atomic "$ADDR:$PORT/ctr" --offset 8 --cas 0,7
	assert_success
	[ "$(jq -r .old <<<"$output")" -eq 5 ]
	[ "$(jq -r .swapped <<<"$output")" = false ]
	run rdmactl -j atomic "$ADDR:$PORT/ctr" --offset 8 --faa -2
	[ "$(jq -r .old <<<"$output")" -eq 5 ]
	run rdmactl -j atomic "$ADDR:$PORT/ctr" --offset 8 --faa 0
	[ "$(jq -r .old <<<"$output")" -eq 3 ]
}

@test "a read-only region refuses a write, by rdmactl and at the NIC" {
	start_server 1 --listen "$ADDR:$PORT" --name ro --size 64K --access ro
	run rdmactl write "$ADDR:$PORT/ro" --pattern zero --size 4K
	assert_failure 1
	assert_output --partial "read-only"
	# A plain verbs client that ignores the access gets a remote access error.
	d=$(descriptor ro)
	run timeout 30 "$FOREIGN_CLIENT" write "$ADDR" "$PORT" "$(jq -r .addr <<<"$d")" \
		"$(jq -r .rkey <<<"$d")" 0 4096
	assert_failure
	assert_output --partial "remote access error"
	# Reading is allowed.
	run rdmactl read "$ADDR:$PORT/ro" --size 4K --out "$BATS_TEST_TMPDIR/x"
	assert_success
	run rdmactl atomic "$ADDR:$PORT/ro" --faa 1
	assert_failure 1
	assert_output --partial "does not allow atomics"
}

@test "a wrong or missing token is rejected (exit 3, EKEYREJECTED), the right one accepted" {
	# The server takes its token from a private file.
	printf 's3cret\n' >"$BATS_TEST_TMPDIR/tok"
	chmod 600 "$BATS_TEST_TMPDIR/tok"
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 64K --token-file "$BATS_TEST_TMPDIR/tok"
	run rdmactl write "$ADDR:$PORT/kv" --pattern zero --size 4K --token wrong
	assert_failure 3
	assert_output --partial "invalid token"
	run rdmactl write "$ADDR:$PORT/kv" --pattern zero --size 4K
	assert_failure 3
	assert_output --partial "token is required"
	run rdmactl write "$ADDR:$PORT/kv" --pattern zero --size 4K --token s3cretX
	assert_failure 3
	assert_output --partial "invalid token"
	run rdmactl write "$ADDR:$PORT/kv" --pattern zero --size 4K --token s3cre
	assert_failure 3
	assert_output --partial "invalid token"
	# An orchestrator tells the refusal from a closed port by status and code.
	run rdmactl -j write "$ADDR:$PORT/kv" --pattern zero --size 4K --token wrong
	assert_failure 3
	[[ $(jq -r .error.code <<<"$output") == EKEYREJECTED ]] || fail "not EKEYREJECTED: $output"
	jq -e '.error.message | test("did not prove the token")' <<<"$output" >/dev/null ||
		fail "the message does not name the refusal: $output"
	run rdmactl write "$ADDR:$((PORT + 1))/kv" --pattern zero --size 4K --token wrong
	assert_failure 1
	assert_output --partial "nothing listens on that port"
	run rdmactl -j write "$ADDR:$((PORT + 1))/kv" --pattern zero --size 4K
	assert_failure 1
	[[ $(jq -r .error.code <<<"$output") == ECONNREFUSED ]] || fail "not ECONNREFUSED: $output"
	# The client's token from a file too.
	printf 's3cretX\n' >"$BATS_TEST_TMPDIR/tokX"
	chmod 600 "$BATS_TEST_TMPDIR/tokX"
	run rdmactl read "$ADDR:$PORT/kv" --size 4K --out /dev/null --token-file "$BATS_TEST_TMPDIR/tokX"
	assert_failure 3
	assert_output --partial "invalid token"
	run rdmactl read "$ADDR:$PORT/kv" --size 4K --out /dev/null --token-file "$BATS_TEST_TMPDIR/tok"
	assert_success
	RDMACTL_TOKEN=s3cret run rdmactl write "$ADDR:$PORT/kv" --pattern zero --size 4K
	assert_success
	grep -q '"event":"rejected"' "$SERVER_OUT"
}

@test "-d names a device: one that does not exist is 'no such device', listing those there are" {
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 64K
	run rdmactl write -d nodev "$ADDR:$PORT/kv" --pattern zero --size 4K
	assert_failure 1
	assert_output --partial "no such device nodev (the devices here: "
	refute_output --partial "reached through"
	run rdmactl register --listen "0.0.0.0:$((PORT + 1))" -d nodev --size 4K
	assert_failure 1
	assert_output --partial "no such device nodev (the devices here: "
}

@test "out-of-bounds, unknown regions and absent servers are clear errors" {
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 64K --access atomic
	run rdmactl write "$ADDR:$PORT/kv" --pattern zero --size 4K --offset 63K
	assert_failure 1
	assert_output --partial "past the end of region 'kv'"
	run rdmactl read "$ADDR:$PORT/kv" --size 65537 --out "$BATS_TEST_TMPDIR/x"
	assert_failure 1
	assert_output --partial "past the end"
	run rdmactl atomic "$ADDR:$PORT/kv" --faa 1 --offset 64K
	assert_failure 1
	assert_output --partial "past the end"
	run rdmactl -j read "$ADDR:$PORT/nope" --out "$BATS_TEST_TMPDIR/x"
	assert_failure 1
	[ "$(jq -r .error.code <<<"$output")" = ENOENT ]
	assert_output --partial "no region named 'nope'"
	run rdmactl write "$ADDR:$((PORT + 1))/kv" --pattern zero --size 4K
	assert_failure 1
	assert_output --partial "refused"
}

@test "a server killed mid-transfer fails the client quickly with a clear error" {
	start_server 1 --listen "$ADDR:$PORT" --name big --size 256M
	start=$SECONDS
	"$RDMACTL" write "$ADDR:$PORT/big" --pattern seq --size 256M \
		>"$BATS_TEST_TMPDIR/w.out" 2>"$BATS_TEST_TMPDIR/w.err" &
	client=$!
	started "$client"
	# Kill it mid-transfer: once the client is connected (a loaded host can
	# take longer than any fixed sleep to get there), and a second into
	# the 256 MiB.
	wait_events connected 1 "$SERVER_OUT"
	sleep 1
	stop_server KILL
	rc=0
	timeout 60 tail --pid="$client" -f /dev/null || true
	wait "$client" || rc=$?
	elapsed=$((SECONDS - start))
	cat "$BATS_TEST_TMPDIR/w.err"
	[ "$rc" -eq 1 ]
	[ "$elapsed" -lt 45 ]
	grep -Eq "RDMA WRITE to $ADDR:$PORT failed: (transport retry counter exceeded|Work Request Flushed Error)" \
		"$BATS_TEST_TMPDIR/w.err"
}

@test "a foreign verbs client writes with the JSON descriptor alone; rdmactl reads it back" {
	heavy_sibling "rdmactl's part, a served region read back, runs in the 8 MiB round trip"
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 1M --token tok
	d=$(descriptor kv)
	run timeout 30 "$FOREIGN_CLIENT" write "$(jq -r .listen.address <<<"$d")" \
		"$(jq -r .listen.port <<<"$d")" "$(jq -r .addr <<<"$d")" "$(jq -r .rkey <<<"$d")" \
		1000 4096 "$(jq -r .token <<<"$d")"
	assert_success
	rdmactl read "$ADDR:$PORT/kv" --token tok --offset 1000 --size 4096 >"$BATS_TEST_TMPDIR/got"
	[ "$(head -c 8 "$BATS_TEST_TMPDIR/got")" = "foreign:" ]
	# Byte i is i & 0xff after the tag: check one of them.
	[ "$(od -An -tu1 -j 300 -N1 "$BATS_TEST_TMPDIR/got" | tr -d ' ')" -eq 44 ]
	# And rdmactl's bytes are what the foreign client reads.
	rdmactl write "$ADDR:$PORT/kv" --token tok --pattern seq --size 16 >/dev/null
	run timeout 30 "$FOREIGN_CLIENT" read "$ADDR" "$PORT" "$(jq -r .addr <<<"$d")" \
		"$(jq -r .rkey <<<"$d")" 0 16 tok
	assert_success
	assert_output "000102030405060708090a0b0c0d0e0f"
	# Without the token, the foreign client is turned away at the connect,
	# and is not left waiting.
	run timeout 30 "$FOREIGN_CLIENT" write "$ADDR" "$PORT" "$(jq -r .addr <<<"$d")" \
		"$(jq -r .rkey <<<"$d")" 0 16
	assert_failure 1
	assert_output --partial "rdma_connect: Connection refused"
	# Raw bytes that extend the token, and a prefix of it, are turned away too
	# (protocol 1's request: the raw bytes, refused by name whatever they are).
	local t
	for t in tokX to; do
		FOREIGN_CLIENT_RAW=1 run timeout 30 "$FOREIGN_CLIENT" write "$ADDR" "$PORT" "$(jq -r .addr <<<"$d")" \
			"$(jq -r .rkey <<<"$d")" 0 16 "$t"
		assert_failure 1
		assert_output --partial "rdma_connect: Connection refused"
	done
}

# bats test_tags=plain-only
@test "many LIST requests back to back on one connection: every reply intact" {
	start_server 3 --listen "$ADDR:$PORT" --token tok --name a --size 4K --name b --size 8K \
		--name c --size 16K
	# 64 requests posted at once, four times: more than the server has
	# receive slots, so replies overlap in flight; the client posts 4
	# receives at a time, so most replies are sent again after an RNR NAK,
	# read again from the server's buffer.
	run timeout 120 "$LIST_BURST" "$ADDR" "$PORT" 64 4 tok
	assert_success
	assert_output "replies=256 regions=3 names=a,b,c"
	# The server is still there, and still serves.
	run rdmactl write "$ADDR:$PORT/b" --token tok --pattern zero --size 8K
	assert_success
}

# bats test_tags=plain-only
@test "register: 300 clients at once on one shared CQ, each writes and reads back its own bytes; the 301st is refused" {
	local d pid fds i
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 32K --max-conns 300
	d=$(descriptor kv)
	# One process holds 300 connections, as 300 client hosts would (each
	# costs it three descriptors in librdmacm's synchronous mode). Each
	# writes 64 bytes of its own at 64 * K, and once all have written,
	# reads them back and compares.
	ulimit -n 4096
	FOREIGN_CLIENT_CONNS=300 FOREIGN_CLIENT_OWN=1 FOREIGN_CLIENT_HOLD=600 "$FOREIGN_CLIENT" write \
		"$ADDR" "$PORT" "$(jq -r .addr <<<"$d")" "$(jq -r .rkey <<<"$d")" 0 64 \
		>"$BATS_TEST_TMPDIR/clients.out" 2>&1 &
	pid=$!
	started "$pid"
	for ((i = 0; i < 1800; i++)); do
		grep -q '^verified=' "$BATS_TEST_TMPDIR/clients.out" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	run cat "$BATS_TEST_TMPDIR/clients.out"
	assert_output "verified=300"
	run grep -c '"event":"connected"' "$SERVER_OUT"
	assert_output 300
	# No descriptor per connection: one completion channel for all.
	fds=$(find "/proc/$SERVER_PID/fd" -mindepth 1 | wc -l)
	echo "# server descriptors with 300 clients: $fds" >&3
	((fds < 32))
	# Every slot held: one more is refused.
	run rdmactl write "$ADDR:$PORT/kv" --pattern zero --size 64
	assert_failure
	assert_output --partial "too many connections"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	wait_events disconnected 300 "$SERVER_OUT" 1200
	# Their slots are free again, and the bytes are where each wrote them.
	run rdmactl read "$ADDR:$PORT/kv" --offset $((64 * 299)) --size 12 --out "$BATS_TEST_TMPDIR/last"
	assert_success
	run od -An -tx1 "$BATS_TEST_TMPDIR/last"
	assert_output " 66 6f 72 65 69 67 6e 3a 2b 01 00 00"
}

# bats test_tags=plain-only
@test "register --max-conns 1024, the documented most: taken as given, not the default 64 (65 clients served at once)" {
	local d pid i
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 8K --max-conns 1024
	d=$(descriptor kv)
	ulimit -n 4096
	# one more than the default holds, each writing and reading back its own 64 bytes
	FOREIGN_CLIENT_CONNS=65 FOREIGN_CLIENT_OWN=1 FOREIGN_CLIENT_HOLD=600 "$FOREIGN_CLIENT" write \
		"$ADDR" "$PORT" "$(jq -r .addr <<<"$d")" "$(jq -r .rkey <<<"$d")" 0 64 \
		>"$BATS_TEST_TMPDIR/clients.out" 2>&1 &
	pid=$!
	started "$pid"
	for ((i = 0; i < 1200; i++)); do
		grep -q '^verified=' "$BATS_TEST_TMPDIR/clients.out" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	run cat "$BATS_TEST_TMPDIR/clients.out"
	assert_output "verified=65"
	run grep -c '"event":"connected"' "$SERVER_OUT"
	assert_output 65
}

@test "register: a client that sends requests and never reads the replies is dropped, naming why; others are served" {
	start_server 1 --listen "$ADDR:$PORT" --token tok --name a --size 4K
	# 256 requests at once and one receive posted: the server answers 16
	# at a time, and the rest wait until the peer holds 128 unanswered.
	run timeout 120 "$LIST_BURST" "$ADDR" "$PORT" 256 1 tok
	assert_failure
	wait_events disconnected 1 "$SERVER_OUT" 300
	jq -s -e '[.[] | select(.event == "disconnected"
		and (.reason // "" | test("more than 128 control messages unanswered")))] | length == 1' \
		"$SERVER_OUT"
	run rdmactl write "$ADDR:$PORT/a" --token tok --pattern zero --size 4K
	assert_success
}

@test "register: six connections flood LIST requests and never read a reply; honest reads are answered during the flood, the flooders dropped at once" {
	# sanitizer tier: always (a hostile flood of the shared control slots)
	local t=$BATS_TEST_TMPDIR i n t0 delay
	head -c 4K /dev/urandom >"$t/a"
	# Six peers of 127 requests each, no receive posted: they never read a
	# reply; together they ask for more control slots than the pool has.
	# First with the RNR delay rdmactl asks for (0.64 ms), then with the
	# longest (0: 655 ms), so that what each holds it holds for seconds.
	for delay in 12 0; do
		PORT=$(next_port)
		start_server 1 --listen "$ADDR:$PORT" --token tok --name a --size 4K
		rdmactl write "$ADDR:$PORT/a" --token tok --file "$t/a" >/dev/null
		t0=$SECONDS
		for i in 1 2 3 4 5 6; do
			LIST_BURST_AHEAD=0 LIST_BURST_RNR_TIMER=$delay "$LIST_BURST" "$ADDR" "$PORT" 127 1 tok \
				>"$t/flood.$delay.$i" 2>&1 3>&- &
			started "$!"
		done
		# The six reached the server (one dropped before its connection was
		# reported shows as disconnected alone), and the write's client.
		for ((i = 0; i < 300; i++)); do
			n=$(jq -s '[.[] | select(.event == "connected" or .event == "disconnected") | .peer]
				| unique | length' "$SERVER_OUT")
			((n >= 7)) && break
			sleep 0.1
		done
		((n >= 7)) || { cat "$SERVER_OUT" "$t"/flood.*; fail "the six did not reach the server"; }
		# Honest reads during the flood: each answered, within 5 s.
		for i in 1 2 3 4 5 6; do
			run rdmactl -t 5000 read "$ADDR:$PORT/a" --token tok --out "$t/back.$i"
			echo "delay $delay, read $i: $status $output"
			assert_success
			cmp "$t/a" "$t/back.$i"
		done
		# The six were dropped at once (over their share of the slots, or
		# their replies unread past the server's retries), not by the
		# keepalive's 15 s.
		while :; do
			n=$(jq -s '[.[] | select(.event == "disconnected" and .reason != null)] | length' "$SERVER_OUT")
			((n >= 6 || SECONDS - t0 >= 10)) && break
			sleep 0.2
		done
		jq -c 'select(.event == "disconnected")' "$SERVER_OUT"
		((n >= 6)) || fail "delay $delay: $n of the six dropped within 10 s"
		# Held for seconds, the later ones found no slot to borrow.
		((delay != 0)) || jq -s -e '[.[] | select(.event == "disconnected"
			and (.reason // "" | test("over its share of the control slots")))] | length >= 1' "$SERVER_OUT"
		# and the server still serves
		run rdmactl read "$ADDR:$PORT/a" --token tok --out "$t/after"
		assert_success
		cmp "$t/a" "$t/after"
		stop_server
	done
}

@test "write with --imm delivers the immediate value to the server" {
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 64K
	run rdmactl -j write "$ADDR:$PORT/kv" --pattern seq --size 4K --imm 42
	assert_success
	[ "$(jq -r .imm <<<"$output")" -eq 42 ]
	for i in $(seq 50); do
		grep -q '"event":"imm"' "$SERVER_OUT" && break
		sleep 0.1
	done
	[ "$(jq -r 'select(.event == "imm") | .imm' "$SERVER_OUT")" -eq 42 ]
}

@test "benchmark mode reports bandwidth, message rate and latency percentiles" {
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 1M --access atomic
	run rdmactl -j write "$ADDR:$PORT/kv" --bench --msg-size 64K --iters 200 --depth 16
	assert_success
	[ "$(jq -r '.bytes == 200 * 65536 and .gbyte_per_s > 0 and (.gbit_per_s - .gbyte_per_s * 8 | fabs) < 1e-9 * .gbit_per_s and .msgs_per_s > 0' <<<"$output")" = true ]
	run rdmactl -j read "$ADDR:$PORT/kv" --lat --msg-size 8 --iters 200
	assert_success
	[ "$(jq -r '.latency_us | .p50 > 0 and .p50 <= .p99 and .p99 <= .p999 and .p999 <= .max' <<<"$output")" = true ]
	run rdmactl -j write "$ADDR:$PORT/kv" --lat --msg-size 8 --iters 200
	assert_success
	# Checked against the run's own clock, not the percentile code: one write
	# in flight at a time, so the 200 latencies add up to at most the run's
	# wall time, and to most of it; the one-way estimate is less than a
	# round trip, above zero. Each latency has a clock read's cost taken
	# off: some, and less than the shortest of them. The figures are over
	# the samples kept (a few left out where the thread changed CPU).
	jq -e '.depth == 1 and .iters == 200 and .latency_us.min > 0
		and .clock_us > 0 and .clock_us < .latency_us.min
		and .lat_left_out < 20
		and (.latency_us.avg + .clock_us) * (200 - .lat_left_out) <= .seconds * 1e6 * 1.001
		and .latency_us.avg * 200 >= .seconds * 1e6 * 0.5
		and .one_way_us.p50 > 0 and .one_way_us.p50 < .latency_us.p50' <<<"$output"
	# Several queue pairs: each signals its own last work request.
	run rdmactl -j write "$ADDR:$PORT/kv" --bench --msg-size 4K --iters 101 --qps 3 --depth 8 \
		--signal-every 5 --post-list 4
	assert_success
	[ "$(jq -r '.bytes == 101 * 4096 and .qps == 3' <<<"$output")" = true ]
	run rdmactl -j atomic "$ADDR:$PORT/kv" --offset 256K --faa 2 --bench --iters 77 --qps 4 --signal-every 8
	assert_success
	run rdmactl -j atomic "$ADDR:$PORT/kv" --offset 256K --faa 0
	[ "$(jq -r .old <<<"$output")" -eq 154 ]
	# The write benchmark filled the start of the region: count further in.
	run rdmactl -j atomic "$ADDR:$PORT/kv" --offset 512K --faa 1 --bench --iters 300
	assert_success
	run rdmactl -j atomic "$ADDR:$PORT/kv" --offset 512K --faa 0
	[ "$(jq -r .old <<<"$output")" -eq 300 ]
}

@test "--bench and --lat read as perftest's: operations, Mpps, a size sweep; a latency run prints no rate, and a stdev" {
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 1M
	run rdmactl write "$ADDR:$PORT/kv" --bench --msg-size 4K --iters 100
	assert_success
	assert_line --regexp '^  409600 bytes in 100 operations in [0-9.]+ s: [0-9.]+ GB/s \([0-9.]+ Gb/s\), [0-9.]+ Mpps$'
	assert_line --regexp '^  peak: [0-9.]+ GB/s \([0-9.]+ Gb/s\), [0-9.]+ Mpps$'
	refute_output --partial "messages/s"
	run rdmactl write "$ADDR:$PORT/kv" --lat --msg-size 8 --iters 100
	assert_success
	assert_line --regexp '^  800 bytes in 100 operations in [0-9.]+ s$'
	refute_output --partial "GB/s"
	refute_output --partial "Mpps"
	refute_output --partial "peak"
	assert_line --regexp '^  latency us \(post to completion\): min [0-9.]+, p50 .*, max [0-9.]+, stdev [0-9.]+$'
	run rdmactl -j write "$ADDR:$PORT/kv" --bench --msg-size 4K --iters 100
	assert_success
	jq -e '.operations == 100 and .mpps > 0 and (.mpps - .msgs_per_s / 1e6 | fabs) < 1e-9' <<<"$output"
	# perftest's BW peak: the fastest run of operations, the whole run among them
	jq -e '.peak_gbyte_per_s >= .gbyte_per_s and (.peak_gbit_per_s - .peak_gbyte_per_s * 8 | fabs) < 1e-9
		and (.peak_mpps * .msg_size / 1e3 - .peak_gbyte_per_s | fabs) < 1e-9' <<<"$output"
	run rdmactl -j read "$ADDR:$PORT/kv" --lat --msg-size 8 --iters 100
	assert_success
	jq -e '.latency_us | .stdev >= 0 and .stdev <= .max - .min' <<<"$output"
	# a size sweep, as ib_write_bw -a: a row per size, doubling
	run rdmactl write "$ADDR:$PORT/kv" --bench --msg-size 8:64K --iters 50
	assert_success
	assert_line --regexp '^ +8 +50 +[0-9.]+ +[0-9.]+ +[0-9.]+$'
	assert_line --regexp '^ +65536 +50 +[0-9.]+ +[0-9.]+ +[0-9.]+$'
	[[ $(grep -cE '^ +[0-9]+ +50 ' <<<"$output") == 14 ]] || fail "not 14 rows: $output"
	run rdmactl -j read "$ADDR:$PORT/kv" --bench --msg-size 8:64K --iters 50
	assert_success
	jq -e '[.sizes[].msg_size] == [range(3; 17) | pow(2; .)]
		and all(.sizes[]; .operations == 50 and .bytes == .msg_size * 50 and .gbyte_per_s > 0)
		and .msg_size == 8 and .msg_size_max == 65536
		and .bytes == (.sizes | map(.bytes) | add) and .operations == 700' <<<"$output"
}

@test "--lat-clock: the time-stamp counter and the monotonic clock time the same reads alike" {
	start_server 1 --listen "$ADDR:$PORT" --name kv --size 1M
	run rdmactl -j read "$ADDR:$PORT/kv" --lat --msg-size 8 --iters 300 --lat-clock tsc
	assert_success
	TSC=$output
	run rdmactl -j read "$ADDR:$PORT/kv" --lat --msg-size 8 --iters 300 --lat-clock monotonic
	assert_success
	MONO=$output
	# the two runs' latencies differ by a third from one run to the next
	# in the guest: each clock is judged against its own run's wall time
	assert_lat_clocks "$TSC" "$MONO" 300
	# auto takes the counter here (x86-64, its rate steady), and says so
	run rdmactl write "$ADDR:$PORT/kv" --lat --msg-size 8 --iters 50
	assert_success
	assert_output --regexp "latencies timed by the TSC \([0-9.]+ MHz, checked against CLOCK_MONOTONIC\); a reading costs [0-9.]+ us"
}

# bats test_tags=plain-only
@test "hugepage regions: a clear error without hugepages, served once there are some" {
	echo 0 >/proc/sys/vm/nr_hugepages
	run "$RDMACTL" register --listen "$ADDR:$PORT" --name hp --size 4M --mem hugepage
	assert_failure 1
	assert_output --partial "hugepages"
	echo 4 >/proc/sys/vm/nr_hugepages
	[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 2 ] || skip "the guest could not reserve hugepages"
	start_server 1 --listen "$ADDR:$PORT" --name hp --size 4M --mem hugepage
	[ "$(jq -r .mem <<<"$(descriptor hp)")" = hugepage ]
	head -c 4M /dev/urandom >"$BATS_TEST_TMPDIR/in"
	rdmactl write "$ADDR:$PORT/hp" --file "$BATS_TEST_TMPDIR/in" >/dev/null
	rdmactl read "$ADDR:$PORT/hp" --out "$BATS_TEST_TMPDIR/back" >/dev/null
	cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/back"
	stop_server TERM
	[ "$SERVER_RC" -eq 0 ]
	echo 0 >/proc/sys/vm/nr_hugepages
}
