#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The etcd rendezvous against a real etcd on loopback (no RDMA needed):
# ranks meet, a rank that never comes is named, a rank claimed twice is
# refused, a dead rank's lease expires, an unreachable etcd is an error.

load helpers
load '../lib/etcd'

PROBE=${RDV_PROBE:-${RDMACTL_BUILD_DIR:-$ROOT/build}/tests/unit/rdv_probe}

setup() {
	[[ -x $PROBE ]] || fail "no rdv_probe at $PROBE: build first"
	need_etcd
	start_etcd
}

teardown() {
	local p
	for p in ${PROBES:-}; do kill -KILL "$p" 2>/dev/null || true; done
	stop_proxy
	common_teardown # etcd
}

# start_proxy [PORT]: a TCP relay on 127.0.0.1:PORT (a free one if not
# given) to etcd, which logs what passes (socat -v) to proxy.log; sets
# PROXY_EP and PROXY_PID. stop_proxy ends it and every connection it relays.
start_proxy() {
	local port=${1:-} i try
	for try in 1 2 3 4 5; do
		[ -n "${1:-}" ] || port=$((30000 + RANDOM % 15000))
		socat -v "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "TCP:$ETCD_EP" \
			2>>"$BATS_TEST_TMPDIR/proxy.log" 3>&- &
		PROXY_PID=$!
		for ((i = 0; i < 100; i++)); do
			if (exec 4<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				PROXY_EP=127.0.0.1:$port
				return 0
			fi
			kill -0 "$PROXY_PID" 2>/dev/null || break
			sleep 0.1
		done
		stop_proxy
	done
	fail "socat did not listen on $port"
}

stop_proxy() {
	local kids
	[ -n "${PROXY_PID:-}" ] || return 0
	# stopped, it forks no more relays while they are ended
	kill -STOP "$PROXY_PID" 2>/dev/null || true
	kids=$(pgrep -P "$PROXY_PID") || true
	# shellcheck disable=SC2086 # one PID a word
	[ -z "$kids" ] || kill -KILL $kids 2>/dev/null || true
	kill -KILL "$PROXY_PID" 2>/dev/null || true
	wait "$PROXY_PID" 2>/dev/null || true
	PROXY_PID=
}

# probe RANK WORLD [HOLD_MS] [JOB] [TIMEOUT_MS]: in the background (bounded
# by its own timeout and hold; teardown kills what is left).
probe() {
	local job=${4:-job1}
	"$PROBE" "etcd://$ETCD_EP/$job" "$1" "$2" "198.18.0.1:$((7000 + $1))" \
		"${5:-10000}" "${3:-3000}" >"$BATS_TEST_TMPDIR/p$1.out" 2>"$BATS_TEST_TMPDIR/p$1.err" &
	PROBES="${PROBES:-} $!"
	eval "P$1=$!"
}

# await_keys JOB N: until JOB holds N rank keys (a rank has registered), at most 20 s.
await_keys() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ "$(etcd_keys "$1" | wc -l)" = "$2" ] && return 0
		sleep 0.1
	done
	fail "job $1 never held $2 rank keys"
}

@test "three ranks meet through etcd and each learns every endpoint" {
	probe 0 3; probe 1 3; probe 2 3
	wait "$P0" && wait "$P1" && wait "$P2" || { cat "$BATS_TEST_TMPDIR"/p*.err; false; }
	for r in 0 1 2; do
		run cut -d' ' -f1,2 "$BATS_TEST_TMPDIR/p$r.out"
		assert_output $'0 198.18.0.1:7000\n1 198.18.0.1:7001\n2 198.18.0.1:7002'
	done
	# leaving revokes the lease: the keys are gone at once
	[ -z "$(etcd_keys job1)" ]
}

@test "a rank that never joins is named within the timeout" {
	# rank 2 is there first (and outwaits rank 0), so that only rank 1 is missing
	probe 2 3 0 job2 20000
	await_keys job2 1
	probe 0 3 0 job2 3000
	SECONDS=0
	local rc=0
	wait "$P0" || rc=$?
	[ "$rc" = 1 ]
	(( SECONDS < 10 ))
	run cat "$BATS_TEST_TMPDIR/p0.err"
	assert_output --partial "rank 1 never joined job job2 at etcd $ETCD_EP within 3000 ms"
}

@test "two processes claiming one rank: the second is refused" {
	probe 1 2 4000 job3
	for ((i = 0; i < 50; i++)); do
		[ -n "$(etcd_keys job3)" ] && break
		sleep 0.1
	done
	run timeout 30 "$PROBE" "etcd://$ETCD_EP/job3" 1 2 198.18.0.9:9 2000
	assert_failure 1
	assert_output --partial "rank 1 of job job3 is claimed already by 198.18.0.1:7001"
}

@test "a killed rank's key goes with its lease; a live one's lease is kept alive" {
	# timeout 4 s: a lease of 4 s, renewed every second while the rank waits
	probe 1 2 0 job4 4000
	# a world of one meets at once, then holds its claim for 20 s
	probe 0 1 20000 job5 4000
	for ((i = 0; i < 50; i++)); do
		[ "$(etcd_keys job4 | wc -l)" = 1 ] && [ "$(etcd_keys job5 | wc -l)" = 1 ] && break
		sleep 0.1
	done
	[ "$(etcd_keys job4 | wc -l)" = 1 ]
	kill -KILL "$P1"
	sleep 7
	# the dead rank's lease ran out; the waiting rank's was kept alive
	[ -z "$(etcd_keys job4)" ]
	[ "$(etcd_keys job5)" = "rdmactl/job5/rank/00000" ]
}

@test "ranks that disagree on the world size are told" {
	probe 0 2 3000 job6
	await_keys job6 1
	run timeout 30 "$PROBE" "etcd://$ETCD_EP/job6" 1 3 198.18.0.1:7001 3000
	assert_failure 1
	assert_output --partial "runs with world size 2, this rank with 3"
}

@test "an etcd that is not there is an error naming it" {
	stop_etcd
	run timeout 30 "$PROBE" "etcd://$ETCD_EP/job7" 0 2 198.18.0.1:7000 2000
	assert_failure 1
	assert_output --partial "cannot reach etcd at $ETCD_EP"
	run timeout 30 "$RDMACTL" alltoall -r 0 -w 2 -R "etcd://$ETCD_EP/job7" --listen 198.18.0.1
	assert_failure 1
	assert_output --partial "cannot reach etcd at $ETCD_EP"
}

@test "an etcd that goes away while a rank waits, and comes back: the ranks meet" {
	probe 0 2 0 job9 30000
	await_keys job9 1
	stop_etcd
	sleep 1 # the waiting rank's watch ends; its reads find no etcd
	restart_etcd
	run timeout 30 "$PROBE" "etcd://$ETCD_EP/job9" 1 2 198.18.0.1:7001 20000
	assert_success
	assert_line --index 0 --partial "0 198.18.0.1:7000"
	wait "$P0" || fail "rank 0 failed: $(cat "$BATS_TEST_TMPDIR/p0.err")"
	grep -q '^1 198.18.0.1:7001 ' "$BATS_TEST_TMPDIR/p0.out" || fail "rank 0 never learnt rank 1"
}

@test "a rank that joins and leaves while a waiting rank's watch is down is seen: the watch made again replays from the first one's revision" {
	command -v socat >/dev/null || skip "needs socat (tests/deps.sh)"
	local port i
	# rank 0 reaches etcd through a relay that the test cuts
	start_proxy
	port=${PROXY_EP##*:}
	"$PROBE" "etcd://$PROXY_EP/job10" 0 2 198.18.0.1:7000 60000 0 \
		>"$BATS_TEST_TMPDIR/p0.out" 2>"$BATS_TEST_TMPDIR/p0.err" &
	P0=$!
	PROBES="${PROBES:-} $P0"
	# its watch is up (what the relay passed says so), then the relay goes
	for ((i = 0; i < 300; i++)); do
		grep -q "POST /v3/watch" "$BATS_TEST_TMPDIR/proxy.log" && break
		kill -0 "$P0" || fail "rank 0 ended: $(cat "$BATS_TEST_TMPDIR/p0.err")"
		sleep 0.1
	done
	grep -q "POST /v3/watch" "$BATS_TEST_TMPDIR/proxy.log" || fail "rank 0 never watched"
	stop_proxy
	# rank 1, straight to etcd, meets rank 0's key and leaves (its key goes)
	run timeout 60 "$PROBE" "etcd://$ETCD_EP/job10" 1 2 198.18.0.1:7001 20000 0
	assert_success
	assert_line --index 0 --partial "0 198.18.0.1:7000"
	[ -z "$(etcd_keys job10 | grep rank/00001)" ] || fail "rank 1's key is still there"
	kill -0 "$P0" || fail "rank 0 ended while the relay was down: $(cat "$BATS_TEST_TMPDIR/p0.err")"
	# the relay back: rank 0 reads a range without rank 1, and learns of it
	# from the watch made again
	start_proxy "$port"
	wait "$P0" || fail "rank 0 failed: $(cat "$BATS_TEST_TMPDIR/p0.err")"
	grep -q '^1 198.18.0.1:7001 ' "$BATS_TEST_TMPDIR/p0.out" || fail "rank 0 never learnt rank 1"
}

# etcd's count of key reads (ranges, the reads inside transactions too)
ranges() {
	curl -s --noproxy '*' -m 5 "http://$ETCD_EP/metrics" | awk '$1 == "etcd_mvcc_range_total" { print $2 }'
}

@test "waiting ranks learn a late one through etcd's watch: a few reads each, not one every 200 ms" {
	local before after r
	before=$(ranges)
	[[ $before =~ ^[0-9]+$ ]] || fail "etcd's metrics give no etcd_mvcc_range_total: '$before'"
	probe 0 4 500 job7 20000
	probe 1 4 500 job7 20000
	probe 2 4 500 job7 20000
	await_keys job7 3
	sleep 3 # three ranks wait; polling would read the prefix 45 times meanwhile
	run timeout 30 "$PROBE" "etcd://$ETCD_EP/job7" 3 4 198.18.0.1:7003 20000 1000
	assert_success
	assert_line --index 3 --partial "3 198.18.0.1:7003"
	for r in 0 1 2; do
		wait "$(eval echo "\$P$r")" || fail "rank $r failed: $(cat "$BATS_TEST_TMPDIR/p$r.err")"
		grep -q '^3 198.18.0.1:7003 ' "$BATS_TEST_TMPDIR/p$r.out" || fail "rank $r never learnt rank 3"
	done
	after=$(ranges)
	# each rank: a range before its claim, the claim's transaction, one range after
	(( after - before <= 4 * 4 )) || fail "$((after - before)) reads of etcd for 4 ranks"
}

@test "libcurl is opened only to speak to etcd: no rdmactl object links it; a missing or wrong one is named" {
	run readelf -d "$RDMACTL" "$RDMACTL_BUILD_DIR/libcore/librdmacore.so"
	assert_success
	assert_output --partial librdmacore.so
	refute_output --partial libcurl
	run env RDMACTL_CURL_LIB=/nonexistent/libcurl.so.4 timeout 30 "$RDMACTL" alltoall -r 0 -w 2 \
		-R "etcd://$ETCD_EP/job8" --listen 198.18.0.1
	assert_failure 1
	assert_output --partial "etcd needs libcurl, which cannot be loaded: /nonexistent/libcurl.so.4"
	assert_output --partial "libcurl4"
	run env RDMACTL_CURL_LIB=libc.so.6 timeout 30 "$RDMACTL" alltoall -r 0 -w 2 \
		-R "etcd://$ETCD_EP/job8" --listen 198.18.0.1
	assert_failure 1
	assert_output --partial "libc.so.6 is not a libcurl"
}
