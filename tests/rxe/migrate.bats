#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl migrate: a region's blocks moved from a server on one rxe device
# (A) to a server on the other (B) of the veth pair, the destination
# pulling with RDMA READ; both sides' sha256 compared.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	need_two_nics
	PORT=$(next_port)
	A=$RDMACTL_VM_ADDR_A:$PORT
	B=$RDMACTL_VM_ADDR_B:$PORT
	SERVERS=()
	WRITERS=()
	# Migration steps need the servers' admin token; migrate presents it.
	ADMIN=$BATS_TEST_TMPDIR/admin.token
	(umask 077 && echo "adm-$RANDOM$RANDOM" >"$ADMIN")
}

# serve NAME ARGS...: `register --listen ARGS` in the background, its pid
# in SERVERS and NAME_PID, its events in $BATS_TEST_TMPDIR/NAME.out.
serve() {
	local name=$1
	shift
	start_server 1 --admin-token-file "$ADMIN" --listen "$@"
	SERVERS+=("$SERVER_PID")
	printf -v "${name}_PID" %s "$SERVER_PID"
	printf -v "${name}_OUT" %s "$SERVER_OUT"
	SERVER_PID=
}

teardown() {
	local pid
	# Background writers of a failed test end too.
	touch "$BATS_TEST_TMPDIR/stop"
	for pid in "${WRITERS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${SERVERS[@]}"; do
		SERVER_PID=$pid
		stop_server TERM
	done
	common_teardown # etcd, the sanitizer reports
}

# etcd_value KEY: the value of KEY, or nothing, through the v3 JSON gateway.
etcd_value() {
	curl -s --noproxy '*' -m 5 -X POST "http://$ETCD_EP/v3/kv/range" \
		-d "{\"key\":\"$(printf %s "$1" | base64 -w0)\"}" | jq -r '.kvs[0].value // empty | @base64d'
}

@test "a text block list moves from A to B: B holds those bytes, both sha256 agree" {
	local t=$BATS_TEST_TMPDIR
	serve A "$A" --name kv --size 8M
	serve B "$B" --name kv --size 8M
	head -c 8M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	# Two blocks in place, one moved to another offset, sizes with suffixes.
	printf '# offset length [dst_offset]\n0 64K\n1M 300000\n\n2M 4K 6M  # moved\n' >"$t/blocks"
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --blocks "$t/blocks"
	assert_success
	jq -e '.verified == true and .rounds == 1 and .bytes_per_round == [369632]
		and .blocks_per_round == [3] and .sha256_src == .sha256_dst
		and (.sha256_src | test("^[0-9a-f]{64}$")) and .blackout_ms == null
		and (.seconds > 0)' <<<"$output"
	# What B holds: the blocks where the list put them, zeros elsewhere.
	rdmactl read "$B/kv" --out "$t/b" >/dev/null
	cmp <(head -c 65536 "$t/a") <(head -c 65536 "$t/b")
	cmp <(tail -c +1048577 "$t/a" | head -c 300000) <(tail -c +1048577 "$t/b" | head -c 300000)
	cmp <(tail -c +2097153 "$t/a" | head -c 4096) <(tail -c +6291457 "$t/b" | head -c 4096)
	cmp <(head -c 4096 /dev/zero) <(tail -c +2097153 "$t/b" | head -c 4096)
	# The source's own sha256 of those blocks is what sha256sum says.
	want=$({ head -c 65536 "$t/a"; tail -c +1048577 "$t/a" | head -c 300000
		tail -c +2097153 "$t/a" | head -c 4096; } | sha256sum)
	[ "$(jq -r .sha256_src <<<"$output")" = "${want%% *}" ]
	# B pulled from A: A saw a client from B's address.
	jq -s -e --arg b "$RDMACTL_VM_ADDR_B" \
		'any(.[]; .event == "connected" and (.peer | startswith($b + ":")))' "$A_OUT"
}

@test "a JSON block list on stdin, and the whole region: 32 MiB verified" {
	heavy_sibling "the text block list test moves blocks the same way; fuzz_parse reads JSON block lists"
	local t=$BATS_TEST_TMPDIR
	serve A "$A" --name kv --size 32M
	serve B "$B" --name kv --size 32M
	head -c 32M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --blocks - <<<'{"blocks": [{"offset": 4096, "length": "8K"}, [16384, 4096, 0]]}'
	assert_success
	jq -e '.verified and .bytes_per_round == [12288]' <<<"$output"
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --whole
	assert_success
	jq -e '.verified and .bytes == 33554432 and .region == "kv" and .length == 33554432' <<<"$output"
	rdmactl read "$B/kv" --out "$t/b" >/dev/null
	cmp "$t/a" "$t/b"
	[ "$(jq -r .sha256_dst <<<"$output")" = "$(sha256sum <"$t/a" | cut -d' ' -f1)" ]
}

# A's region after a refused migration: still served, still the same bytes.
a_untouched() {
	rdmactl read "$A/kv" --out "$BATS_TEST_TMPDIR/a.after" >/dev/null
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/a.after"
}

@test "bad input: size or access mismatch, unknown region, B unreachable, blocks past the end: clear errors, A untouched" {
	# sanitizer tier: always (hostile arguments and an unreachable peer mid-move)
	local t=$BATS_TEST_TMPDIR
	serve A "$A" --name kv --size 1M --name cnt --size 64K --access atomic
	serve B "$B" --name kv --size 2M --name cnt --size 64K --access rw --name other --size 1M
	head -c 1M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	run rdmactl migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --whole
	assert_failure 1
	assert_output --partial "region 'kv' is 1048576 bytes on the source and 2097152 on the destination"
	run rdmactl migrate --admin-token-file "$ADMIN" "$A/cnt" "$B/cnt" --whole
	assert_failure 1
	assert_output --partial "access atomic on the source and rw on the destination"
	run rdmactl migrate --admin-token-file "$ADMIN" "$A/nope" "$B/nope" --whole
	assert_failure 1
	assert_output --partial "the source $A: "
	assert_output --partial "no region named 'nope'"
	run rdmactl -t 3000 migrate --admin-token-file "$ADMIN" "$A/kv" "$RDMACTL_VM_ADDR_B:$((PORT + 7))/kv" --whole
	assert_failure 1
	assert_output --partial "the destination $RDMACTL_VM_ADDR_B:$((PORT + 7)): "
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/other" --whole
	assert_failure 2
	jq -e '.error.message | test("keeps its name")' <<<"$output"
	run rdmactl migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --blocks - <<<'1M 4K'
	assert_failure 1
	a_untouched
}

# bats test_tags=plain-only
@test "B killed in the middle of a pull: migrate fails naming B, A keeps serving, no write lost" {
	local t=$BATS_TEST_TMPDIR i mig
	serve A "$A" --name kv --size 32M
	serve B "$B" --name kv --size 32M
	head -c 32M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	"$RDMACTL" -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --whole >"$t/mig.out" 2>&1 3>&- &
	mig=$!
	WRITERS+=("$mig")
	# The pull has begun once A sees a client from B's address.
	for ((i = 0; i < 300; i++)); do
		jq -s -e --arg b "$RDMACTL_VM_ADDR_B" \
			'any(.[]; .event == "connected" and (.peer | startswith($b + ":")))' "$A_OUT" >/dev/null && break
		sleep 0.05
	done
	((i < 300))
	kill -KILL "$B_PID"
	# Writes to A go on meanwhile: sequence numbers into known slots.
	for ((i = 1; i <= 8; i++)); do
		printf 'seq %08d\n' "$i" >"$t/w$i"
		rdmactl write "$A/kv" --offset $((i * 65536)) --file "$t/w$i" >/dev/null
		dd if="$t/w$i" of="$t/a" bs=1 seek=$((i * 65536)) conv=notrunc status=none
	done
	local rc=0
	wait "$mig" || rc=$?
	cat "$t/mig.out"
	[ "$rc" -eq 1 ]
	grep -q "the destination" "$t/mig.out"
	# A serves the region as it was plus every write, and takes more.
	rdmactl read "$A/kv" --out "$t/a.after" >/dev/null
	cmp "$t/a" "$t/a.after"
	run rdmactl -j read "$A/kv" --size 8 --out "$t/x"
	assert_success
}

# writer N SLOTS: write sequence numbers 1..N (or until $t/stop exists
# after N) into slot seq % SLOTS of A's region (64 KiB apart, 4 KiB each),
# one `rdmactl write` each, always addressed to A. Logs "SEQ STATUS" lines
# in $t/writer.log; the payload of SEQ is $t/w.SEQ.
# A client waits out the fence for as long as its -t allows: the blackout
# holds both sides' digests of the region, over 10 s on the sanitizer build,
# so the clients here get a minute.
writer() {
	local n=$1 slots=$2 seq=0 st
	while :; do
		seq=$((seq + 1))
		{ printf 'seq %08d\n' "$seq"; head -c 4083 /dev/zero; } >"$t/w.$seq"
		st=0
		"$RDMACTL" -t 60000 write "$A/kv" --offset $(((seq % slots) * 65536)) --file "$t/w.$seq" \
			>/dev/null 2>>"$t/writer.err" || st=$?
		echo "$seq $st" >>"$t/writer.log"
		((seq < n)) || [[ ! -e $t/stop ]] || break
	done
}

# What A's region should hold: $t/a with every logged write applied in order.
expected() {
	local seq st
	cp "$t/a" "$t/want"
	while read -r seq st; do
		dd if="$t/w.$seq" of="$t/want" bs=4096 seek=$(((seq % $1) * 16)) conv=notrunc status=none
	done <"$t/writer.log"
}

@test "live: 32 MiB moved while a writer streams sequence numbers; B holds exactly what was written, the writer never failed" {
	heavy_sibling "the live tests below: fetch-add counters, B killed, --no-verify"
	local t=$BATS_TEST_TMPDIR wpid
	serve A "$A" --name kv --size 32M
	serve B "$B" --name kv --size 32M
	head -c 32M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	writer 40 64 3>&- &
	wpid=$!
	WRITERS+=("$wpid")
	sleep 1
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --dirty 64K
	echo "$output"
	assert_success
	jq -e '.mode == "live" and .verified == true and .sha256_src == .sha256_dst
		and .rounds >= 2 and .bytes_per_round[0] == 33554432
		and (.blackout_ms | type) == "number" and .blackout_ms > 0
		and (.bytes_per_round | length) == .rounds' <<<"$output"
	touch "$t/stop"
	wait "$wpid"
	cat "$t/writer.err" || true
	# Every write succeeded (those cut by the fence were retried at B).
	[ "$(awk '$2 != 0' "$t/writer.log" | wc -l)" -eq 0 ]
	[ "$(wc -l <"$t/writer.log")" -ge 40 ]
	expected 64
	rdmactl read "$B/kv" --out "$t/b" >/dev/null
	cmp "$t/want" "$t/b"
	# A read addressed to A follows the region to B.
	run rdmactl -j read "$A/kv" --offset 65536 --size 4096 --out "$t/via-a"
	assert_success
	cmp "$t/via-a" <(tail -c +65537 "$t/want" | head -c 4096)
}

@test "live: fetch-add counters from three clients under migration: the sum equals the increments" {
	heavy_sibling "the plain tier runs it; on the sanitizer build the source, hammered by three sanitized atomic clients, now misses migrate's 40 s answer (a timeout, no sanitizer report), and 'live: B killed during the move' runs the same path"
	local t=$BATS_TEST_TMPDIR pids=() c i mig
	serve A "$A" --name kv --size 32M --access atomic
	serve B "$B" --name kv --size 32M --access atomic
	# Each client: batches of 60 fetch-adds (one process, no start-up
	# between them) addressed to A, until the move is over, and one more.
	# A round copies 32 MiB in well under a second here: batches this long
	# keep atomics landing through it, where a process start would not.
	for c in 1 2 3; do
		for ((i = 0; i < 60; i++)); do echo "atomic $A/kv --faa 1 --offset $((c * 8))"; done >"$t/batch.$c"
		(
			last=0
			while ((last < 2)); do
				[[ ! -e $t/stop ]] || last=$((last + 1))
				"$RDMACTL" -j -t 60000 --force -b "$t/batch.$c" 2>>"$t/atomic.err" |
					jq -r --arg c "$c" '"\($c) \(map(select(.output.error == null)) | length) \(map(select(.output.error != null)) | length)"' \
					>>"$t/atomic.log"
			done
		) 3>&- &
		pids+=($!)
		WRITERS+=($!)
	done
	# The move starts once every client has landed a batch, so that atomics
	# land while the first round copies (block 0, the counters', first).
	for ((i = 0; i < 300; i++)); do
		[ "$(awk '{ print $1 }' "$t/atomic.log" 2>/dev/null | sort -u | wc -l)" -eq 3 ] && break
		sleep 0.1
	done
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --dirty 64K
	echo "$output"
	assert_success
	mig=$output
	touch "$t/stop"
	for c in "${pids[@]}"; do wait "$c"; done
	cat "$t/atomic.err" || true
	cat "$t/atomic.log"
	# No atomic failed, so none has an unknown outcome: each counts once.
	[ "$(awk '{ f += $3 } END { print f + 0 }' "$t/atomic.log")" -eq 0 ]
	for c in 1 2 3; do
		n=$(awk -v c="$c" '$1 == c { s += $2 } END { print s + 0 }' "$t/atomic.log")
		((n >= 20))
		run rdmactl -j atomic "$B/kv" --faa 0 --offset $((c * 8))
		assert_success
		[ "$(jq -r .old <<<"$output")" -eq "$n" ]
	done
	# Atomics landed on A after the first round had copied the counters:
	# the rounds after it pulled their block again.
	jq -e '.blocks_per_round[1:] | add >= 1' <<<"$mig"
}

@test "live: B killed during the move: migrate aborts, A lifts the fence and keeps serving, no write lost" {
	# sanitizer tier: always (an abort mid-move frees what the move held)
	local t=$BATS_TEST_TMPDIR wpid i rc=0
	serve A "$A" --name kv --size 32M
	serve B "$B" --name kv --size 32M
	head -c 32M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	writer 15 64 3>&- &
	wpid=$!
	WRITERS+=("$wpid")
	"$RDMACTL" -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" >"$t/mig.out" 2>&1 3>&- &
	mig=$!
	WRITERS+=("$mig")
	for ((i = 0; i < 300; i++)); do
		jq -s -e --arg b "$RDMACTL_VM_ADDR_B" \
			'any(.[]; .event == "connected" and (.peer | startswith($b + ":")))' "$A_OUT" >/dev/null && break
		sleep 0.05
	done
	kill -KILL "$B_PID"
	wait "$mig" || rc=$?
	cat "$t/mig.out"
	[ "$rc" -eq 1 ]
	grep -q "aborted" "$t/mig.out"
	touch "$t/stop"
	wait "$wpid"
	cat "$t/writer.err" || true
	[ "$(awk '$2 != 0' "$t/writer.log" | wc -l)" -eq 0 ]
	# A holds every write, and takes new ones at once.
	rdmactl write "$A/kv" --offset 0 --file "$t/w.1" >/dev/null
	dd if="$t/w.1" of="$t/a" conv=notrunc status=none
	expected 64
	rdmactl read "$A/kv" --out "$t/a.after" >/dev/null
	cmp "$t/want" "$t/a.after"
}

@test "live: the command killed before its fence: A serves again, B lets the move's copies go, and the next move verifies" {
	# sanitizer tier: always (B frees the blocks it kept aside for the check)
	local t=$BATS_TEST_TMPDIR mig i rc=1
	serve A "$A" --name kv --size 1M
	serve B "$B" --name kv --size 1M
	head -c 1M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	# Every block pulled (B keeps each aside), then the command dies.
	RDMACTL_TEST_PAUSE_BEFORE_FENCE=$t/fence "$RDMACTL" -j migrate --admin-token-file "$ADMIN" \
		"$A/kv" "$B/kv" >"$t/mig.out" 2>&1 3>&- &
	mig=$!
	WRITERS+=("$mig")
	for ((i = 0; i < 600; i++)); do [ -e "$t/fence.paused" ] && break; sleep 0.1; done
	[ -e "$t/fence.paused" ] || false
	kill -KILL "$mig"
	wait "$mig" || true
	# A takes a write at once (not fenced: the move was called off).
	head -c 4096 /dev/urandom >"$t/w"
	rdmactl write "$A/kv" --offset 8192 --file "$t/w" >/dev/null
	dd if="$t/w" of="$t/a" bs=4096 seek=2 conv=notrunc status=none
	# The next move, once A has seen the old one's connection go.
	for ((i = 0; i < 50; i++)); do
		rc=0
		rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" >"$t/mig2.out" 2>&1 || rc=$?
		[ "$rc" -eq 0 ] && break
		grep -qE "being moved|another migration" "$t/mig2.out" || break
		sleep 0.2
	done
	cat "$t/mig2.out"
	[ "$rc" -eq 0 ]
	jq -e '.verified == true and .sha256_src == .sha256_dst and .mismatched_blocks == []' "$t/mig2.out"
	kill -0 "$B_PID"
	rdmactl read "$B/kv" --out "$t/b" >/dev/null
	cmp "$t/a" "$t/b"
}

# bats test_tags=plain-only
@test "live --no-verify --keep-source: no digests, A keeps its copy, a read or a write addressed to A goes to B" {
	local t=$BATS_TEST_TMPDIR
	serve A "$A" --name kv --size 4M
	serve B "$B" --name kv --size 4M
	head -c 4M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --no-verify --keep-source --max-rounds 2
	assert_success
	jq -e '.mode == "live" and .verified == null and .sha256_src == null and .sha256_dst == null
		and .rounds == 2 and (.blackout_ms | type) == "number"' <<<"$output"
	rdmactl read "$B/kv" --out "$t/b" >/dev/null
	cmp "$t/a" "$t/b"
	# A keeps its copy but serves it no more: a reader that comes to A is
	# sent on to B (A's frozen copy goes stale with B's first write).
	run rdmactl -j read "$A/kv" --out "$t/a.kept"
	assert_success
	[ "$(jq -r .peer <<<"$output")" = "$B" ] || false
	cmp "$t/a" "$t/a.kept"
	# A write sent to A is refused there and follows the region to B.
	printf 'after the move\n' >"$t/w"
	run rdmactl -j write "$A/kv" --offset 8192 --file "$t/w"
	assert_success
	[ "$(jq -r .peer <<<"$output")" = "$B" ]
	rdmactl read "$B/kv" --offset 8192 --size 15 --out "$t/back" >/dev/null
	cmp "$t/w" "$t/back"
	# And a reader that comes to A now reads what B holds, not the old bytes.
	run rdmactl -j read "$A/kv" --offset 8192 --size 15 --out "$t/via-a"
	assert_success
	[ "$(jq -r .peer <<<"$output")" = "$B" ] || false
	cmp "$t/w" "$t/via-a"
	kill -0 "$A_PID"
}

@test "live through etcd: both publish, the move points the region's key at B, a client resolving through etcd reads B's data with A gone" {
	local t=$BATS_TEST_TMPDIR key=rdmactl/mig/region/kv i
	load '../lib/etcd'
	need_etcd
	start_etcd
	serve A "$A" --name kv --size 4M --publish "etcd://$ETCD_EP/mig"
	# A's key first (the events come after the descriptors).
	for ((i = 0; i < 100; i++)); do grep -q '"event":"lease"' "$A_OUT" && break; sleep 0.1; done
	serve B "$B" --name kv --size 4M --publish "etcd://$ETCD_EP/mig"
	for ((i = 0; i < 100; i++)); do grep -q '"event":"lease"' "$B_OUT" && break; sleep 0.1; done
	jq -s -e --arg k "$key" 'any(.[]; .event == "published" and .key == $k and .claimed)' "$A_OUT"
	jq -s -e --arg k "$key" --arg a "$A" \
		'any(.[]; .event == "published" and .key == $k and (.claimed | not) and .held_by == $a)' "$B_OUT"
	[ "$(etcd_value "$key" | jq -r '.host + ":" + .port')" = "$A" ]
	head -c 4M /dev/urandom >"$t/a"
	run rdmactl -j write "etcd://$ETCD_EP/mig/kv" --file "$t/a"
	assert_success
	[ "$(jq -r .peer <<<"$output")" = "$A" ]
	run rdmactl -j migrate --admin-token-file "$ADMIN" "etcd://$ETCD_EP/mig/kv" "$B/kv" --dirty 64K
	echo "$output"
	assert_success
	jq -e --arg k "$key" '.mode == "live" and .verified and .etcd_key == $k and .etcd_revision > 0' <<<"$output"
	# The key names B now, under B's lease: A stopping (its lease revoked)
	# leaves it, and a client resolving through etcd goes straight to B.
	[ "$(etcd_value "$key" | jq -r '.host + ":" + .port')" = "$B" ]
	SERVER_PID=$A_PID
	stop_server TERM
	[ -z "$(etcd_value "rdmactl/mig/server/$A")" ]
	[ "$(etcd_value "$key" | jq -r '.host + ":" + .port')" = "$B" ]
	run rdmactl -j read "etcd://$ETCD_EP/mig/kv" --out "$t/b"
	assert_success
	[ "$(jq -r .peer <<<"$output")" = "$B" ]
	cmp "$t/a" "$t/b"
}

@test "live: the shell's kept connection to A follows the region to B" {
	local t=$BATS_TEST_TMPDIR sh i
	serve A "$A" --name kv --size 4M
	serve B "$B" --name kv --size 4M
	head -c 4M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	printf 'before the move\n' >"$t/w1"
	printf 'after the move\n' >"$t/w2"
	mkfifo "$t/in"
	"$RDMACTL" -v -t 60000 shell <"$t/in" >"$t/sh.out" 2>&1 3>&- &
	sh=$!
	WRITERS+=("$sh")
	exec 4>"$t/in"
	echo "write $A/kv --offset 4096 --file $t/w1" >&4
	for ((i = 0; i < 300; i++)); do grep -q "wrote to $A" "$t/sh.out" && break; sleep 0.1; done
	((i < 300))
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --dirty 64K
	assert_success
	# The kept connection is A's: the write meets the revoked region, asks
	# A where it went and goes on at B; the read reuses that connection.
	echo "write $A/kv --offset 8192 --file $t/w2" >&4
	echo "read $A/kv --offset 4096 --size 16 --out $t/r1" >&4
	exec 4>&-
	wait "$sh"
	cat "$t/sh.out"
	[ "$(grep -c "reusing the connection to" "$t/sh.out")" -ge 2 ]
	grep -q "wrote to $B" "$t/sh.out"
	cmp "$t/r1" "$t/w1"
	dd if="$t/w1" of="$t/a" bs=1 seek=4096 conv=notrunc status=none
	dd if="$t/w2" of="$t/a" bs=1 seek=8192 conv=notrunc status=none
	rdmactl read "$B/kv" --out "$t/b" >/dev/null
	cmp "$t/a" "$t/b"
}

@test "the example kv-live-migrate.sh passes its own checks" {
	heavy_sibling "the live tests above"
	run --separate-stderr timeout 600 "$REPO_ROOT/examples/kv-live-migrate.sh" \
		--src "$RDMACTL_VM_ADDR_A:$PORT" --dst "$RDMACTL_VM_ADDR_B:$PORT" --blocks 32
	echo "$stderr"
	echo "$output"
	assert_success
	jq -e '.ok and .urgent.verified and .live.verified and .decode_loop.failed == 0
		and .decode_loop.slots_wrong_at_destination == 0' <<<"$output"
}

@test "a region moved back: A to B live, B to A live, away again, then C to A --whole; every server survives and serves" {
	# sanitizer tier: always (the server crash when a region moved back: its state machine under ASan)
	local t=$BATS_TEST_TMPDIR C=$RDMACTL_VM_ADDR_B:$((PORT + 1))
	serve A "$A" --name kv --size 1M
	serve B "$B" --name kv --size 1M
	serve C "$C" --name kv --size 1M
	head -c 1M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --dirty 64K
	assert_success
	# Back home: A, which dropped its copy, is a destination like any other.
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$B/kv" "$A/kv" --dirty 64K
	echo "$output"
	assert_success
	jq -e '.verified and .sha256_src == .sha256_dst' <<<"$output"
	kill -0 "$A_PID"
	run rdmactl -j read "$A/kv" --out "$t/back"
	assert_success
	[ "$(jq -r .peer <<<"$output")" = "$A" ] || false
	cmp "$t/a" "$t/back"
	# A client that still goes to B is sent back to A.
	run rdmactl -j read "$B/kv" --size 4096 --out "$t/via-b"
	assert_success
	[ "$(jq -r .peer <<<"$output")" = "$A" ] || false
	# Away from A once more, then C's copy moved onto A whole.
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --dirty 64K
	assert_success
	head -c 1M /dev/urandom >"$t/c"
	rdmactl write "$C/kv" --file "$t/c" >/dev/null
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$C/kv" "$A/kv" --whole
	echo "$output"
	assert_success
	jq -e '.verified' <<<"$output"
	rdmactl read "$A/kv" --out "$t/a2" >/dev/null
	cmp "$t/c" "$t/a2"
	kill -0 "$A_PID"
	kill -0 "$B_PID"
	kill -0 "$C_PID"
	# B, the home of the third move, still serves its copy.
	rdmactl read "$B/kv" --size 4096 --out "$t/b" >/dev/null
}

@test "migration steps need the admin token: a data client's forged TRACK, CUTOVER, DROP and HASH are refused; one move owns the region" {
	# sanitizer tier: always (forged control messages against a live server)
	local t=$BATS_TEST_TMPDIR adm move owner i step
	serve A "$A" --token data-s3cret --name kv --size 1M
	adm=$(cat "$ADMIN")
	head -c 1M /dev/urandom >"$t/a"
	RDMACTL_TOKEN=data-s3cret rdmactl write "$A/kv" --file "$t/a" >/dev/null
	# The region's token reads and writes; it runs no migration step.
	for step in track fence "cutover 192.0.2.1:7471" drop unfence take hash; do
		# shellcheck disable=SC2086 # the step and its argument
		run "$MIG_CTL" "$A/kv" data-s3cret $step
		echo "$step: $output"
		assert_failure 1
		assert_output --partial "need"
		assert_output --partial "admin token"
		# named as migrate's option, by the server's words
		assert_output --partial "(migrate --admin-token-file)"
	done
	# An admin token with one more character is no admin token (nor a data one).
	run "$MIG_CTL" "$A/kv" "${adm}X" track
	assert_failure 1
	assert_output --partial "connect failed"
	run "$MIG_CTL" "$A/kv" "${adm%?}" track
	assert_failure 1
	assert_output --partial "connect failed"
	# The admin token: TRACK answers a move id, the move holds the region
	# while its connection lasts; it calls the move off with that id.
	printf 'track\nwait %s\nunfence @\n' "$t/release" | "$MIG_CTL" "$A/kv" "$adm" - >"$t/owner.out" 2>&1 3>&- &
	owner=$!
	WRITERS+=("$owner")
	for ((i = 0; i < 100; i++)); do grep -q status= "$t/owner.out" && break; sleep 0.1; done
	grep -q "status=0 bytes=[1-9]" "$t/owner.out" || { cat "$t/owner.out"; false; }
	move=$(sed -n 's/^status=0 bytes=\([0-9]*\).*/\1/p' "$t/owner.out")
	# Another orchestrator: its TRACK is refused, and so is every step
	# without the move's id.
	run "$MIG_CTL" "$A/kv" "$adm" track
	assert_failure 1
	assert_output --partial "another move is refused"
	for step in fence take unfence; do
		run "$MIG_CTL" "$A/kv" "$adm" $step $((move + 1))
		assert_failure 1
		assert_output --partial "another migration"
	done
	run "$MIG_CTL" "$A/kv" "$adm" cutover 192.0.2.1:7471
	assert_failure 1
	touch "$t/release"
	wait "$owner" || { cat "$t/owner.out"; false; }
	[ "$(grep -c '^status=0' "$t/owner.out")" -eq 2 ] || false
	# Nothing moved: the data is A's, and a client is never sent elsewhere.
	RDMACTL_TOKEN=data-s3cret run rdmactl -j read "$A/kv" --out "$t/a.after"
	assert_success
	[ "$(jq -r .peer <<<"$output")" = "$A" ] || false
	cmp "$t/a" "$t/a.after"
	kill -0 "$A_PID"
}

@test "the move's owner, with its move id: CUTOVER while only tracking is refused; after FENCE the same CUTOVER is taken" {
	# sanitizer tier: always (a step out of order, from the move's owner)
	local t=$BATS_TEST_TMPDIR
	serve A "$A" --name kv --size 1M
	# One connection, the move's: its id ("@") in each step.
	printf '%s\n' track "cutover 192.0.2.1:7471 @" "fence @" "cutover 192.0.2.1:7471 @" where \
		>"$t/steps"
	run --separate-stderr "$MIG_CTL" "$A/kv" "$(cat "$ADMIN")" - <"$t/steps"
	assert_success
	assert_line --index 0 --regexp '^status=0 bytes=[1-9][0-9]* '
	# writes still land at a region only tracked: no cutover yet
	assert_line --index 1 --regexp "^status=-?[1-9][0-9]* .*msg=region 'kv' is being moved \(tracking its writes\): CUTOVER refused$"
	assert_line --index 2 --regexp '^status=0 '
	assert_line --index 3 --regexp '^status=0 '
	assert_line --index 4 --partial "msg=192.0.2.1:7471"
}

@test "after a move, no step re-points the old source: CUTOVER and DROP refused once the move is done" {
	# sanitizer tier: always (steps out of order against a moved region's state)
	local t=$BATS_TEST_TMPDIR adm
	serve A "$A" --name kv --size 1M
	serve B "$B" --name kv --size 1M
	adm=$(cat "$ADMIN")
	run rdmactl -j migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --keep-source --no-verify
	assert_success
	for step in "cutover 192.0.2.1:7471" fence drop; do
		# shellcheck disable=SC2086
		run "$MIG_CTL" "$A/kv" "$adm" $step 0
		echo "$step: $output"
		assert_failure 1
	done
	run "$MIG_CTL" "$A/kv" - where
	assert_success
	assert_output --partial "msg=$B"
}

@test "a server without an admin token refuses migration steps, unless started with --allow-unauthenticated-migration" {
	# sanitizer tier: always (unauthenticated control messages against a server)
	serve A "$A" --name kv --size 1M
	SERVER_PID=
	start_server 1 --listen "$B" --name kv --size 1M
	SERVERS+=("$SERVER_PID")
	SERVER_PID=
	run rdmactl migrate "$A/kv" "$B/kv" --whole
	assert_failure 1
	assert_output --partial "admin token"
	# B has none: its pull is refused.
	run rdmactl migrate --admin-token-file "$ADMIN" "$A/kv" "$B/kv" --whole
	assert_failure 1
	assert_output --partial "the destination"
	assert_output --partial "admin token"
	start_server 1 --listen "$RDMACTL_VM_ADDR_B:$((PORT + 1))" --name kv --size 1M \
		--allow-unauthenticated-migration
	SERVERS+=("$SERVER_PID")
	SERVER_PID=
	run rdmactl migrate --admin-token-file "$ADMIN" "$A/kv" "$RDMACTL_VM_ADDR_B:$((PORT + 1))/kv" --whole
	assert_success
}

@test "a write in flight at the fence (announced and landed, its done held past the fence) is copied to B" {
	local t=$BATS_TEST_TMPDIR mig wr i
	serve A "$A" --name kv --size 1M
	serve B "$B" --name kv --size 1M
	head -c 1M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	# The move copies everything, then waits right before its fence.
	RDMACTL_TEST_PAUSE_BEFORE_FENCE=$t/fence "$RDMACTL" -j migrate --admin-token-file "$ADMIN" \
		"$A/kv" "$B/kv" >"$t/mig.out" 2>&1 3>&- &
	mig=$!
	WRITERS+=("$mig")
	for ((i = 0; i < 600; i++)); do [ -e "$t/fence.paused" ] && break; sleep 0.1; done
	[ -e "$t/fence.paused" ] || false
	# Now a write: announced and landed at A, its "done" held back.
	head -c 4096 /dev/urandom >"$t/w"
	RDMACTL_TEST_HOLD_DONE=$t/done "$RDMACTL" write "$A/kv" --offset 196608 --file "$t/w" \
		>"$t/w.out" 2>&1 3>&- &
	wr=$!
	WRITERS+=("$wr")
	for ((i = 0; i < 600; i++)); do [ -e "$t/done.held" ] && break; sleep 0.1; done
	[ -e "$t/done.held" ] || false
	# The fence, the final copy, the cutover: all before the write's done.
	touch "$t/fence"
	wait "$mig" || { cat "$t/mig.out"; false; }
	cat "$t/mig.out"
	jq -e '.verified' "$t/mig.out"
	touch "$t/done"
	wait "$wr" || true
	rdmactl read "$B/kv" --offset 196608 --size 4096 --out "$t/b" >/dev/null
	cmp "$t/w" "$t/b"
}

@test "live: a broken record of written blocks (test hook) misses a write at A: the move names the block, exits 1, and A keeps its copy" {
	local t=$BATS_TEST_TMPDIR mig i rc=0
	serve A "$A" --name kv --size 1M
	serve B "$B" --name kv --size 1M
	head -c 1M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	# Every block copied, then a pause before the fence; the hook drops
	# block 3 (offset 196608) from every list of written blocks.
	RDMACTL_TEST_PAUSE_BEFORE_FENCE=$t/fence RDMACTL_TEST_LOSE_DIRTY=196608 "$RDMACTL" -j migrate \
		--admin-token-file "$ADMIN" "$A/kv" "$B/kv" >"$t/mig.out" 2>"$t/mig.err" 3>&- &
	mig=$!
	WRITERS+=("$mig")
	for ((i = 0; i < 600; i++)); do [ -e "$t/fence.paused" ] && break; sleep 0.1; done
	[ -e "$t/fence.paused" ] || false
	# A write into block 3 after it was copied: A records it, the hook loses it.
	head -c 4096 /dev/urandom >"$t/w"
	rdmactl write "$A/kv" --offset 200704 --file "$t/w" >/dev/null
	touch "$t/fence"
	wait "$mig" || rc=$?
	cat "$t/mig.out" "$t/mig.err"
	[ "$rc" -eq 1 ]
	# What A holds in block 3 (the write in it) and what B got (without).
	{ head -c 200704 "$t/a" | tail -c 4096; cat "$t/w"; tail -c +204801 "$t/a" | head -c 57344; } >"$t/blk-a"
	tail -c +196609 "$t/a" | head -c 65536 >"$t/blk-b"
	jq -e --arg s "$(sha256sum <"$t/blk-a" | cut -d' ' -f1)" --arg d "$(sha256sum <"$t/blk-b" | cut -d' ' -f1)" \
		'.verified == false and .mode == "live" and .sha256_src != .sha256_dst
		and .mismatched_blocks == [{offset: 196608, length: 65536, sha256_src: $s, sha256_dst: $d}]
		and .mismatched_blocks_truncated == false and (.error.message | test("the source keeps its copy"))
		and (.blackout_ms | type) == "number"' "$t/mig.out"
	# B holds the block without the write (the region did move there) ...
	rdmactl read "$B/kv" --offset 200704 --size 4096 --out "$t/b" >/dev/null
	cmp "$t/b" <(tail -c +200705 "$t/a" | head -c 4096)
	# ... and A kept its copy, the write in it: its digest of block 3 now.
	run "$MIG_CTL" "$A/kv" "$(cat "$ADMIN")" blocks 196608
	assert_success
	assert_output --partial "status=0 digest=$(sha256sum <"$t/blk-a" | cut -d' ' -f1) msg="
}

# bats test_tags=plain-only
@test "hashes of a large region do not stall the server: a read during them answers as fast as an idle one" {
	local t=$BATS_TEST_TMPDIR adm h i t0 idle=0 dur during
	serve A "$A" --name big --size 8M --name small --size 4K
	adm=$(cat "$ADMIN")
	# An idle read (connect, list, read), the slowest of three.
	for i in 1 2 3; do
		t0=$(date +%s%N)
		rdmactl read "$A/small" --out "$t/s" >/dev/null
		dur=$((($(date +%s%N) - t0) / 1000000))
		((dur > idle)) && idle=$dur
	done
	# Sixteen hashes of the whole 8 MiB, all sent at once, as one client may.
	MIG_CTL_MARK=$t/hashing MIG_CTL_DONE=$t/hashed "$MIG_CTL" "$A/big" "$adm" hashes 16 \
		>"$t/hash.out" 2>&1 3>&- &
	h=$!
	WRITERS+=("$h")
	for ((i = 0; i < 300; i++)); do [ -e "$t/hashing" ] && break; sleep 0.05; done
	sleep 0.05
	t0=$(date +%s%N)
	run rdmactl read "$A/small" --out "$t/s2"
	during=$((($(date +%s%N) - t0) / 1000000))
	echo "idle read ${idle} ms, read during the hashes ${during} ms"
	assert_success
	# The read was answered while the hashes still ran, in a few idle reads' time.
	[ ! -e "$t/hashed" ] || { cat "$t/hash.out"; false; }
	((during <= 6 * idle + 1000)) || false
	wait "$h"
	cat "$t/hash.out"
	grep -q "status=0 answers=16" "$t/hash.out"
}

@test "live, on a terminal: a progress line on stderr (rounds, hashing, fence, cutover), none on stdout or with -j" {
	heavy_sibling "kvxfer's 'send on a terminal' (the same progress line) and the other live migrate tests"
	local t=$BATS_TEST_TMPDIR
	serve A "$A" --name kv --size 1M
	serve B "$B" --name kv --size 1M
	head -c 1M /dev/urandom >"$t/a"
	rdmactl write "$A/kv" --file "$t/a" >/dev/null
	# script(1) gives rdmactl a terminal; stdout goes to a file.
	run timeout 120 script -qefc "'$RDMACTL' migrate --admin-token-file '$ADMIN' '$A/kv' '$B/kv' >'$t/text.out'" "$t/text.tty" </dev/null
	assert_success
	for want in 'migrate: round 1: [0-9.]+[KMG]?i?B of 1MiB pulled' 'migrate: hashing both sides' \
		'migrate: fencing the source' 'migrate: cutover'; do
		grep -qE $'\r\033\\[K'"$want" "$t/text.tty" || { cat -A "$t/text.tty"; fail "no '$want' on the terminal"; }
	done
	run grep -c -e 'migrate: ' -e $'\r' "$t/text.out"
	assert_output 0
	grep -q '^verified: the destination holds the same bytes' "$t/text.out"
	# On to C with -j: the document alone, no progress on the terminal.
	serve C "$RDMACTL_VM_ADDR_A:$((PORT + 1))" --name kv --size 1M
	run timeout 120 script -qefc "'$RDMACTL' -j migrate --admin-token-file '$ADMIN' '$B/kv' '$RDMACTL_VM_ADDR_A:$((PORT + 1))/kv' >'$t/json.out'" "$t/json.tty" </dev/null
	assert_success
	run grep -c 'migrate: ' "$t/json.tty"
	assert_output 0
	jq -e '.mode == "live" and .verified' "$t/json.out"
}
