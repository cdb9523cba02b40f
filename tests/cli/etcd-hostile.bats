#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# An etcd endpoint that lies, played by socat on loopback (no etcd, no
# RDMA): an answer that never ends is cut at the cap (RC_ETCD_REPLY_MAX)
# with an error naming the endpoint, promptly; keys outside the range asked
# are refused, not read past their end.

load helpers

PROBE=${RDV_PROBE:-${RDMACTL_BUILD_DIR:-$ROOT/build}/tests/unit/rdv_probe}

setup() {
	require_binary
	command -v socat >/dev/null || skip "needs socat (tests/deps.sh)"
}

teardown() {
	common_teardown
}

# fake_etcd BODY: serve every connection on 127.0.0.1 with an HTTP 200
# whose body is what the shell command BODY prints (from a script file:
# socat's address syntax would split BODY at its commas); FAKE_EP is
# HOST:PORT, FAKE_PID the server.
fake_etcd() {
	local port i sh=$BATS_TEST_TMPDIR/answer.sh
	{
		# read the request first: closing on an unread one resets the connection
		cat <<-'READ'
			n=0
			while IFS= read -r l; do
				l=${l%$'\r'}
				[[ -n $l ]] || break
				[[ ! $l =~ ^[Cc]ontent-[Ll]ength:\ *([0-9]+) ]] || n=${BASH_REMATCH[1]}
			done
			head -c "$n" >/dev/null
		READ
		printf '%s\n' 'printf "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"'
		printf '%s\n' "$1"
	} >"$sh"
	for _ in 1 2 3 4 5; do
		port=$((30000 + RANDOM % 20000))
		socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "EXEC:bash $sh" 2>/dev/null &
		FAKE_PID=$!
		started "$FAKE_PID"
		for ((i = 0; i < 50; i++)); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				FAKE_EP=127.0.0.1:$port
				return 0
			fi
			kill -0 "$FAKE_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$FAKE_PID" 2>/dev/null || true
		wait "$FAKE_PID" 2>/dev/null || true
	done
	fail "socat did not listen"
}


@test "an etcd answer that never ends is refused at the cap, promptly, naming the endpoint" {
	fake_etcd "exec yes '{\"kvs\":[{\"key\":\"eA==\"}]}'"
	local t0=$SECONDS
	run timeout 30 "$RDMACTL" -t 20000 read "etcd://$FAKE_EP/ns/kv" --out /dev/null
	assert_failure 1
	assert_output --partial "etcd at $FAKE_EP sent more than 4096 KiB for kv/range: refused (the cap on an answer)"
	[ $((SECONDS - t0)) -lt 10 ] || fail "took $((SECONDS - t0)) s"
	# the rendezvous, which grants a lease first
	run timeout 30 "$PROBE" "etcd://$FAKE_EP/job" 0 2 198.18.0.1:7000 20000 0
	assert_failure
	assert_output --partial "sent more than 4096 KiB for lease/grant"
}

@test "a range answer with a key outside the prefix is an error, not read past" {
	# one answer for every request: a lease, a won claim, and a range whose
	# key "rdm" is shorter than the job's prefix
	fake_etcd "echo '{\"ID\":\"7\",\"succeeded\":true,\"kvs\":[{\"key\":\"cmRt\",\"value\":\"eA==\"}]}'"
	run timeout 30 "$PROBE" "etcd://$FAKE_EP/job" 0 2 198.18.0.1:7000 3000 0
	assert_failure
	assert_output --partial "etcd at $FAKE_EP answered a range of rdmactl/job/rank/ with key 'rdm'"
}

@test "a range answer with a key one byte off the prefix is an error, not read as a rank" {
	# rdmactl/job/rank_00001 shares all of rdmactl/job/rank/ but its last
	# byte: read as a key of the prefix, it would be rank 1 of world 2
	fake_etcd "echo '{\"ID\":\"7\",\"succeeded\":true,\"kvs\":[{\"key\":\"cmRtYWN0bC9qb2IvcmFua18wMDAwMQ==\",\"value\":\"MTk4LjE4LjAuMTo3MDAxIDIgaA==\"}]}'"
	run timeout 30 "$PROBE" "etcd://$FAKE_EP/job" 0 2 198.18.0.1:7000 3000 0
	assert_failure
	assert_output --partial "etcd at $FAKE_EP answered a range of rdmactl/job/rank/ with key 'rdmactl/job/rank_00001'"
}
