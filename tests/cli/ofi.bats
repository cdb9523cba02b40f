#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# register, write, read and atomic over libfabric's tcp provider
# (--fabric ofi:tcp, tcp;ofi_rxm on 127.0.0.1: a software transport, no RDMA
# device, no guest): a 64 MiB round trip checked by digest, the atomics'
# values, and the wrong answers: a wrong token (exit 3), a replayed and a
# spoilt first message refused by the server, a region out of bounds,
# --fabric bogus, and verbs or auto on a host without an RDMA device.

load helpers
load ../lib/lat

setup() {
	require_binary
	unset RDMACTL_TOKEN RDMACTL_FABRIC RDMACTL_TEST_OFI_HELLO
	tok=$BATS_TEST_TMPDIR/tok
	printf 'ofi-s3cret-token\n' >"$tok"
	chmod 600 "$tok"
	desc=$BATS_TEST_TMPDIR/desc.jsonl
	port=$((20000 + (RANDOM % 20000)))
}

teardown() {
	common_teardown
}

# serve [REGISTER OPTIONS...]: a 64 MiB atomic region kv on 127.0.0.1:$port
# over ofi:tcp, its -j lines in $desc; waits (10 s at most) for its line.
serve() {
	"$RDMACTL" -j register --fabric ofi:tcp --listen "127.0.0.1:$port" --name kv --size 64M \
		--access atomic "$@" >"$desc" 2>"$BATS_TEST_TMPDIR/srv.err" &
	started $!
	for _ in $(seq 100); do
		if grep -q '"event":"region"' "$desc"; then return 0; fi
		sleep 0.1
	done
	fail "no region line in 10 s: $(cat "$BATS_TEST_TMPDIR/srv.err")"
}

client() {
	"$RDMACTL" "$@" --fabric ofi:tcp --descriptor "$desc" --token-file "$tok"
}

@test "ofi:tcp: 64 MiB written and read back, the same by sha256; the report names transport, provider and domain" {
	serve --token-file "$tok"
	head -c 64M /dev/urandom >"$BATS_TEST_TMPDIR/in.bin"
	run client -j write "127.0.0.1:$port/kv" --file "$BATS_TEST_TMPDIR/in.bin"
	assert_success
	assert_equal "$(jq -r '[.transport, .provider, .domain, .bytes] | join(" ")' <<<"$output")" \
		"ofi tcp;ofi_rxm lo 67108864"
	run client read "127.0.0.1:$port/kv" --out "$BATS_TEST_TMPDIR/back.bin"
	assert_success
	assert_output --partial "over ofi (tcp;ofi_rxm, domain lo): 67108864 bytes"
	assert_equal "$(sha256sum <"$BATS_TEST_TMPDIR/back.bin")" "$(sha256sum <"$BATS_TEST_TMPDIR/in.bin")"
	cmp "$BATS_TEST_TMPDIR/in.bin" "$BATS_TEST_TMPDIR/back.bin"
	# the descriptor names the fabric and the endpoint
	assert_equal "$(jq -r 'select(.event == "region") | [.fabric, .provider, .domain, (.ofi_address | length > 0), (.nonce | length), (.token_check | length)] | join(" ")' "$desc")" \
		"ofi tcp;ofi_rxm lo true 32 32"
}

@test "ofi:tcp: fetch-and-add and compare-and-swap return the old values" {
	serve --token-file "$tok"
	run client -j atomic "127.0.0.1:$port/kv" --offset 8 --faa 5
	assert_success
	assert_equal "$(jq -r '[.old, .new, .transport] | join(" ")' <<<"$output")" "0 5 ofi"
	run client -j atomic "127.0.0.1:$port/kv" --offset 8 --cas 5,9
	assert_success
	assert_equal "$(jq -r '[.old, .swapped, .new] | join(" ")' <<<"$output")" "5 true 9"
	run client -j atomic "127.0.0.1:$port/kv" --offset 8 --cas 5,1
	assert_success
	assert_equal "$(jq -r '[.old, .swapped, .new] | join(" ")' <<<"$output")" "9 false 9"
}

@test "ofi:tcp: a wrong token is refused (exit 3) before anything is sent; the server admitted no one" {
	serve --token-file "$tok"
	printf 'another-token-42\n' >"$BATS_TEST_TMPDIR/bad"
	chmod 600 "$BATS_TEST_TMPDIR/bad"
	run "$RDMACTL" write "127.0.0.1:$port/kv" --fabric ofi:tcp --descriptor "$desc" \
		--token-file "$BATS_TEST_TMPDIR/bad" --pattern seq --size 4K
	assert_failure 3
	assert_output --partial "does not prove our token"
	# and a client without a token is told the server requires one
	run "$RDMACTL" atomic "127.0.0.1:$port/kv" --fabric ofi:tcp --descriptor "$desc" --faa 1
	assert_failure 3
	assert_output --partial "the server requires a token"
	assert_output --partial "give --token-file FILE or \$RDMACTL_TOKEN"
	run grep -c '"event":"connected"' "$desc"
	assert_output 0
}

@test "ofi:tcp: a replayed first message and a spoilt proof are refused by the server" {
	serve --token-file "$tok"
	RDMACTL_TEST_OFI_HELLO=save:$BATS_TEST_TMPDIR/hello.bin run client atomic "127.0.0.1:$port/kv" --faa 1
	assert_success
	RDMACTL_TEST_OFI_HELLO=replay:$BATS_TEST_TMPDIR/hello.bin run client -t 1500 atomic "127.0.0.1:$port/kv" --faa 1
	assert_failure
	assert_output --partial "no WELCOME"
	RDMACTL_TEST_OFI_HELLO=spoil run client -t 1500 atomic "127.0.0.1:$port/kv" --faa 1
	assert_failure
	run jq -r 'select(.event == "rejected") | .reason' "$desc"
	assert_line --index 0 "a replayed HELLO (its nonce was seen)"
	assert_line --index 1 "HELLO's proof is not the token's over this listener's nonce"
	# one admission only, the first: the counter moved once
	run client -j atomic "127.0.0.1:$port/kv" --faa 0
	assert_equal "$(jq -r .old <<<"$output")" 1
}

@test "ofi:tcp: a flood of HELLOs that fail (every other one carrying immediate data) is listed 20 a second at most, the rest counted and told in one event: every one accounted for, none admitted, the receive slots kept" {
	serve --token-file "$tok"
	run cc -Wall -Werror -o "$BATS_TEST_TMPDIR/foreign" "$ROOT/tests/foreign/ofi_client.c" \
		$(pkg-config --cflags --libs libfabric)
	assert_success
	local prov addr i listed hidden t0 took
	prov=$(jq -r 'select(.event == "region") | .provider' "$desc")
	addr=$(jq -r 'select(.event == "region") | .ofi_address' "$desc")
	# 200 HELLOs with a zero proof from one endpoint, as fast as they go; those
	# with immediate data (fi_senddata) take a receive slot as the others do
	t0=$EPOCHREALTIME
	OFI_CLIENT_FLOOD=200 run "$BATS_TEST_TMPDIR/foreign" "$prov" 127.0.0.1 "$addr" kv 0 /dev/null /dev/null
	assert_success
	assert_output "sent 200"
	took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }')
	# the count of a second that is over is told on the server's next pass
	for i in $(seq 50); do
		listed=$(jq -r 'select(.event == "rejected" and .reason == "HELLO\u0027s proof is not the token\u0027s over this listener\u0027s nonce")' "$desc" | grep -c '"event"' || true)
		hidden=$(jq -r 'select(.event == "rejected") | .reason | capture("^(?<n>[0-9]+) more rejected, not listed one by one") | .n' "$desc" | awk '{ s += $1 } END { print s + 0 }')
		((listed + hidden == 200)) && break
		sleep 0.1
	done
	assert_equal "$((listed + hidden))" 200
	# at most 20 a second are told one by one: 200 sent within 9 s cannot all be
	if ((took < 9)); then
		((hidden > 0)) || fail "all $listed listed one by one, sent in $took s"
	fi
	run grep -c '"event":"admitted"' "$desc"
	assert_output 0
	# and an honest client is served
	run client -j atomic "127.0.0.1:$port/kv" --offset 32 --faa 1
	assert_success
}

@test "ofi:tcp: out of bounds of the region is refused" {
	serve --token-file "$tok"
	run client write "127.0.0.1:$port/kv" --pattern seq --size 4K --offset 64M
	assert_failure
	assert_output --partial "out of bounds of region 'kv'"
	run client atomic "127.0.0.1:$port/kv" --offset 64M --faa 1
	assert_failure
	assert_output --partial "out of bounds of region 'kv'"
	run client write "127.0.0.1:$port/kv" --pattern seq --size 4K --offset 67104768
	assert_success
}

@test "ofi:tcp: write and read --bench, write --lat and atomic --bench: the operations asked, each completing once, the reports naming transport, provider and domain" {
	serve --token-file "$tok"
	run client -j write "127.0.0.1:$port/kv" --bench --msg-size 1M --iters 40
	assert_success
	assert_equal "$(jq -r '[.mode, .operations, .bytes, .transport, .provider, .domain, .signal_every] | join(" ")' <<<"$output")" \
		"bandwidth 40 41943040 ofi tcp;ofi_rxm lo 1"
	jq -e '.gbyte_per_s > 0 and .peak_gbyte_per_s >= .gbyte_per_s * 0.99' <<<"$output"
	run client read "127.0.0.1:$port/kv" --bench --msg-size 64K --iters 300 --depth 16
	assert_success
	assert_line --regexp '^read bandwidth benchmark against 127\.0\.0\.1:[0-9]+/kv$'
	assert_line --partial "device lo over ofi (tcp;ofi_rxm), 65536-byte messages, 300 work requests, depth 16"
	assert_line --regexp '^  19660800 bytes in 300 operations in [0-9.]+ s: '
	# a sweep: a row a size, doubling, every operation of each
	run client -j read "127.0.0.1:$port/kv" --bench --msg-size 16K:128K --iters 50
	assert_success
	assert_equal "$(jq -c '[.sizes[] | [.msg_size, .operations, .bytes]]' <<<"$output")" \
		'[[16384,50,819200],[32768,50,1638400],[65536,50,3276800],[131072,50,6553600]]'
	assert_equal "$(jq -r '[.operations, .bytes, .msg_size_max] | join(" ")' <<<"$output")" "200 12288000 131072"
	run client -j write "127.0.0.1:$port/kv" --lat --msg-size 8 --iters 200 --lat-clock monotonic
	assert_success
	jq -e '.mode == "latency" and .latency_us.count == 200 and .lat_clock == "monotonic"
		and .latency_us.min > 0 and .latency_us.min <= .latency_us.p50
		and .latency_us.p50 <= .latency_us.p99 and .one_way_us.p50 * 2 == .latency_us.p50' <<<"$output"
	# every fetch-and-add of the run landed once: the word moved by their count
	run client -j atomic "127.0.0.1:$port/kv" --offset 32M --faa 0
	assert_success
	local before
	before=$(jq -r .old <<<"$output")
	run client -j atomic "127.0.0.1:$port/kv" --offset 32M --faa 3 --bench --iters 500 --depth 32
	assert_success
	assert_equal "$(jq -r '[.operation, .operations, .bytes, .provider] | join(" ")' <<<"$output")" "faa 500 4000 tcp;ofi_rxm"
	run client -j atomic "127.0.0.1:$port/kv" --offset 32M --faa 0
	assert_equal "$(jq -r .old <<<"$output")" "$((before + 1500))"
	# a compare-and-swap latency run whose compare never holds swaps nothing
	run client -j atomic "127.0.0.1:$port/kv" --offset 32M --cas 1,2 --lat --iters 50
	assert_success
	assert_equal "$(jq -r .latency_us.count <<<"$output")" 50
	run client -j atomic "127.0.0.1:$port/kv" --offset 32M --faa 0
	assert_equal "$(jq -r .old <<<"$output")" "$((before + 1500))"
}

@test "ofi:tcp: a benchmark over libfabric refuses what it cannot do (several endpoints, post lists) and a span out of bounds, the largest size of a sweep checked first" {
	serve --token-file "$tok"
	local bad
	for bad in "--qps 2" "--post-list 4"; do
		# shellcheck disable=SC2086 # the options, a word each
		run client write "127.0.0.1:$port/kv" --bench $bad
		assert_failure 2
		assert_output --partial "over libfabric a benchmark runs on one endpoint"
	done
	run client read "127.0.0.1:$port/kv" --bench --msg-size 1M --offset 66060289
	assert_failure 1
	assert_output "rdmactl: offset 66060289 + 1048576 bytes is out of bounds of region 'kv' (67108864 bytes)"
	# a sweep whose largest size does not fit runs no size at all
	run client -j write "127.0.0.1:$port/kv" --bench --msg-size 16M:128M --iters 2
	assert_failure 1
	assert_equal "$(jq -r .error.message <<<"$output")" \
		"offset 0 + 134217728 bytes is out of bounds of region 'kv' (67108864 bytes)"
	run client atomic "127.0.0.1:$port/kv" --bench --faa 1 --offset 4
	assert_failure 2
	assert_output "rdmactl: atomic: --offset 4 is not 8-byte aligned"
}

@test "ofi:tcp: --lat-clock over libfabric as over verbs: the time-stamp counter and the monotonic clock time the same writes alike, each less a reading's cost" {
	serve --token-file "$tok"
	run client -j write "127.0.0.1:$port/kv" --lat --msg-size 8 --iters 300 --lat-clock tsc
	assert_success
	local tsc=$output mono
	run client -j write "127.0.0.1:$port/kv" --lat --msg-size 8 --iters 300 --lat-clock monotonic
	assert_success
	mono=$output
	assert_equal "$(jq -r .transport <<<"$tsc")" ofi
	assert_equal "$(jq -r .transport <<<"$mono")" ofi
	assert_lat_clocks "$tsc" "$mono" 300
	# auto takes the counter where its rate checks out, and says so
	run client write "127.0.0.1:$port/kv" --lat --msg-size 8 --iters 50
	assert_success
	assert_output --regexp "latencies timed by the (TSC \([0-9.]+ MHz, checked against CLOCK_MONOTONIC\)|monotonic clock)"
}

@test "ofi:tcp: write --imm delivers the immediate value to the server once the data is written; a value past 32 bits is a usage error" {
	serve --token-file "$tok"
	run client -j write "127.0.0.1:$port/kv" --pattern seq --size 4K --imm 42
	assert_success
	assert_equal "$(jq -r '[.imm, .bytes, .transport] | join(" ")' <<<"$output")" "42 4096 ofi"
	run client write "127.0.0.1:$port/kv" --pattern seq --size 4K --offset 8K --imm 4294967295
	assert_success
	local i
	for i in $(seq 50); do
		[[ $(grep -c '"event":"imm"' "$desc") == 2 ]] && break
		sleep 0.1
	done
	run jq -r 'select(.event == "imm") | .imm' "$desc"
	assert_output $'42\n4294967295'
	run client write "127.0.0.1:$port/kv" --pattern seq --size 4K --imm 4294967296
	assert_failure 2
	assert_output --partial "immediate data is 32 bits"
	# no immediate data without --imm
	run client write "127.0.0.1:$port/kv" --pattern seq --size 4K
	assert_success
	sleep 0.3
	run grep -c '"event":"imm"' "$desc"
	assert_output 2
}

# switches PID: the voluntary context switches of every thread of PID
switches() {
	cat /proc/"$1"/task/*/status | awk '/^voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }'
}

@test "ofi:tcp: an idle server sleeps on its completion queue's file descriptor (FI_WAIT_FD): a few wake-ups in 2 s, not one a millisecond, and it answers at once" {
	serve --token-file "$tok"
	run client -j atomic "127.0.0.1:$port/kv" --offset 24 --faa 1
	assert_success
	# the server itself, not a wrapper around it
	local pid p a b
	for p in $(pgrep -f -- "--listen 127.0.0.1:$port"); do
		[[ $(cat "/proc/$p/comm") == rdmactl ]] && pid=$p
	done
	[[ -n ${pid:-} ]] || fail "no rdmactl process listens on $port"
	sleep 0.5
	a=$(switches "$pid")
	sleep 2
	b=$(switches "$pid")
	(((b - a) < 100)) || fail "the idle server woke $((b - a)) times in 2 s"
	run client -j atomic "127.0.0.1:$port/kv" --offset 24 --faa 1
	assert_success
	assert_equal "$(jq -r .old <<<"$output")" 1
}

@test "--fabric bogus is a usage error naming the choices, for each command and from \$RDMACTL_FABRIC" {
	for c in "write 127.0.0.1/kv --pattern seq --size 4K" "read 127.0.0.1/kv --out /dev/null" \
		"atomic 127.0.0.1/kv --faa 1" "register -N kv -S 4K --listen 127.0.0.1"; do
		read -ra words <<<"$c"
		run "$RDMACTL" "${words[@]}" --fabric bogus
		[ "$status" -eq 2 ] || fail "$c: exit $status: $output"
		[[ $output == *"invalid --fabric 'bogus': expected verbs, auto, ofi:tcp, ofi:verbs, ofi:efa or ofi:PROVIDER"* ]] ||
			fail "$c: $output"
	done
	RDMACTL_FABRIC=ofi: run "$RDMACTL" atomic 127.0.0.1/kv --faa 1
	assert_failure 2
	assert_output --partial "invalid \$RDMACTL_FABRIC 'ofi:'"
}

@test "--fabric verbs without an RDMA device is an error; auto picks nothing and says so" {
	if compgen -G "/sys/class/infiniband/*" >/dev/null; then
		skip "this host has an RDMA device"
	fi
	run "$RDMACTL" write 127.0.0.1/kv --pattern seq --size 4K --fabric verbs
	assert_failure 1
	assert_output --partial "--fabric verbs: this host has no RDMA device"
	RDMACTL_FABRIC=auto run "$RDMACTL" register -N kv -S 4K --listen 127.0.0.1
	assert_failure 1
	assert_output --partial "auto picked nothing"
	assert_output --partial "does not fall back to a software provider"
}

@test "ofi:tcp: a server without a token serves a client without one, descriptor or not; a client with a token refuses it (exit 3)" {
	serve
	head -c 1M /dev/urandom >"$BATS_TEST_TMPDIR/in.bin"
	run "$RDMACTL" write "127.0.0.1:$port/kv" --fabric ofi:tcp --file "$BATS_TEST_TMPDIR/in.bin" --offset 4K
	assert_success
	run "$RDMACTL" read "127.0.0.1:$port/kv" --fabric ofi:tcp --descriptor "$desc" --size 1M --offset 4K \
		--out "$BATS_TEST_TMPDIR/got.bin"
	assert_success
	cmp "$BATS_TEST_TMPDIR/in.bin" "$BATS_TEST_TMPDIR/got.bin"
	run client atomic "127.0.0.1:$port/kv" --faa 1
	assert_failure 3
	assert_output --partial "it carries no token_check"
}

@test "a foreign libfabric client (tests/foreign/ofi_client.c: plain fi_* calls) writes and reads a region rdmactl serves over ofi:tcp, given the descriptor" {
	serve
	run cc -Wall -Werror -o "$BATS_TEST_TMPDIR/foreign" "$ROOT/tests/foreign/ofi_client.c" \
		$(pkg-config --cflags --libs libfabric)
	assert_success
	local prov addr
	prov=$(jq -r 'select(.event == "region") | .provider' "$desc")
	addr=$(jq -r 'select(.event == "region") | .ofi_address' "$desc")
	head -c 3M /dev/urandom >"$BATS_TEST_TMPDIR/in.bin"
	run "$BATS_TEST_TMPDIR/foreign" "$prov" 127.0.0.1 "$addr" kv 8192 "$BATS_TEST_TMPDIR/in.bin" \
		"$BATS_TEST_TMPDIR/out.bin"
	assert_success
	cmp "$BATS_TEST_TMPDIR/in.bin" "$BATS_TEST_TMPDIR/out.bin"
	# rdmactl reads what the foreign client wrote, where it wrote it
	run "$RDMACTL" read "127.0.0.1:$port/kv" --fabric ofi:tcp --offset 8192 --size 3M \
		--out "$BATS_TEST_TMPDIR/back.bin"
	assert_success
	cmp "$BATS_TEST_TMPDIR/in.bin" "$BATS_TEST_TMPDIR/back.bin"
	# and the wrong answer: a region the server does not serve
	run "$BATS_TEST_TMPDIR/foreign" "$prov" 127.0.0.1 "$addr" nosuch 0 "$BATS_TEST_TMPDIR/in.bin" \
		"$BATS_TEST_TMPDIR/out.bin"
	assert_failure
	assert_output --partial "no such region in the WELCOME"
}

@test "ofi:tcp: the replay cache full, the listener's nonce rotates: the region lines are printed again, an old descriptor is refused" {
	RDMACTL_TEST_OFI_REPLAY_MAX=2 serve --token-file "$tok"
	cp "$desc" "$BATS_TEST_TMPDIR/old.jsonl"
	run client atomic "127.0.0.1:$port/kv" --faa 1
	assert_success
	run jq -r 'select(.event == "rotated") | .event' "$desc"
	assert_output ""
	# the second admission fills the cache of 2: rotated, after its answer
	run client atomic "127.0.0.1:$port/kv" --faa 1
	assert_success
	run jq -r 'select(.event == "region") | .nonce' "$desc"
	assert_equal "${#lines[@]}" 2
	[ "${lines[0]}" != "${lines[1]}" ] || fail "the nonce did not change: $output"
	assert_equal "$(jq -r 'select(.event == "rotated") | .reason' "$desc")" "${lines[1]}"
	# a client with the old descriptor proves over the old nonce: refused
	run "$RDMACTL" -t 1500 atomic "127.0.0.1:$port/kv" --fabric ofi:tcp \
		--descriptor "$BATS_TEST_TMPDIR/old.jsonl" --token-file "$tok" --faa 1
	assert_failure
	assert_equal "$(jq -r 'select(.event == "rejected") | .reason' "$desc")" \
		"HELLO's proof is not the token's over this listener's nonce"
	# the descriptor as it stands now (its last region line) works
	run client -j atomic "127.0.0.1:$port/kv" --faa 1
	assert_success
	assert_equal "$(jq -r .old <<<"$output")" 2
}

@test "ofi:tcp: no key in the descriptor, and none guessable: a client that skips the handshake and tries small keys writes nothing" {
	serve
	run jq -r 'select(.event == "region") | [has("key_hex"), has("addr"), has("rkey")] | join(" ")' "$desc"
	assert_output "false false false"
	run cc -Wall -Werror -o "$BATS_TEST_TMPDIR/foreign" "$ROOT/tests/foreign/ofi_client.c" \
		$(pkg-config --cflags --libs libfabric)
	assert_success
	local addr k
	addr=$(jq -r 'select(.event == "region") | .ofi_address' "$desc")
	head -c 64K /dev/urandom >"$BATS_TEST_TMPDIR/in.bin"
	# an RDM target admits any initiator that holds the key: keys of 1, 2...
	# (a counter) were the whole of the protection
	for k in 1 2 3 4 5 6 7 8; do
		OFI_CLIENT_GUESS_KEY=$k run "$BATS_TEST_TMPDIR/foreign" "tcp;ofi_rxm" 127.0.0.1 "$addr" kv 0 \
			"$BATS_TEST_TMPDIR/in.bin" "$BATS_TEST_TMPDIR/out.bin"
		[ "$status" -ne 0 ] || fail "key $k reached the region without a handshake"
	done
	run "$RDMACTL" read "127.0.0.1:$port/kv" --fabric ofi:tcp --size 64K --out "$BATS_TEST_TMPDIR/back.bin"
	assert_success
	head -c 64K /dev/zero >"$BATS_TEST_TMPDIR/zero.bin"
	cmp "$BATS_TEST_TMPDIR/zero.bin" "$BATS_TEST_TMPDIR/back.bin"
}
