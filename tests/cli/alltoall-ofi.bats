#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# alltoall over libfabric's tcp provider (--fabric ofi:tcp, tcp;ofi_rxm on
# 127.0.0.1: a software transport, no RDMA device, no guest): 8 ranks, flat
# and ring, every token checked; the wrong answers: a token that arrives
# wrong, a rank with another token or none, and what runs over verbs only.

load helpers

setup() {
	require_binary
	unset RDMACTL_TOKEN RDMACTL_FABRIC RDMACTL_TEST_A2A_CORRUPT
	port=$((20000 + (RANDOM % 20000)))
	peers=$BATS_TEST_TMPDIR/peers
	SMALL=(--tokens 32 --hidden 256 --iters 3 --warmup 1)
}

teardown() {
	common_teardown
}

# ranks N [OPTIONS...]: ranks 0..N-1 of alltoall over ofi:tcp, each with
# OPTIONS (after the command; and RANK_OPTS[r] where set), -j; their output in rank.R.out and
# .err, their exit codes in RCS.
ranks() {
	local n=$1 r
	local -a pids=()
	shift
	: >"$peers"
	for ((r = 0; r < n; r++)); do echo "$r 127.0.0.1:$((port + r))" >>"$peers"; done
	for ((r = 0; r < n; r++)); do
		# shellcheck disable=SC2086 # RANK_OPTS[r] is a list of words
		"$RDMACTL" -j alltoall --fabric ofi:tcp --rendezvous "file:$peers" --rank "$r" \
			--world "$n" "$@" ${RANK_OPTS[r]:-} >"$BATS_TEST_TMPDIR/rank.$r.out" \
			2>"$BATS_TEST_TMPDIR/rank.$r.err" &
		pids+=($!)
		started $!
	done
	RCS=()
	for ((r = 0; r < n; r++)); do
		wait "${pids[r]}" && RCS+=(0) || RCS+=($?)
	done
}

dump() {
	local f
	for f in "$BATS_TEST_TMPDIR"/rank.*; do echo "== $f" && cat "$f"; done
}

# each_rc N RC: every one of ranks 0..N-1 exited RC.
each_rc() {
	local r
	for ((r = 0; r < $1; r++)); do
		[ "${RCS[r]}" = "$2" ] || { dump; fail "rank $r exited ${RCS[r]}, not $2"; }
	done
}

@test "alltoall --fabric ofi:tcp: 8 ranks, flat then ring, every token checked on every rank; the report names transport, provider and domain" {
	local algo
	for algo in flat ring; do
		RANK_OPTS=()
		ranks 8 -t 20000 --algo "$algo" "${SMALL[@]}"
		each_rc 8 0
		run jq -r '[.algo, .ranks, .wrong, (.checked_tokens > 0), .transport, .provider, .domain] | join(" ")' \
			"$BATS_TEST_TMPDIR/rank.0.out"
		assert_output "$algo 8 0 true ofi tcp;ofi_rxm lo"
		port=$((port + 8))
	done
}

@test "alltoall --fabric ofi:tcp: one token that arrives wrong is counted, and every rank exits 1" {
	RANK_OPTS=()
	RDMACTL_TEST_A2A_CORRUPT=dispatch:1:0 ranks 3 -t 20000 "${SMALL[@]}"
	each_rc 3 1
	run jq -r '[.wrong, .error.code, .error.message, .transport] | join("|")' "$BATS_TEST_TMPDIR/rank.0.out"
	assert_output "1|EIO|1 tokens arrived wrong|ofi"
}

# refused OPTS0 OPTS1 WHY: ranks 0 and 1 (on ports of their own) with those
# options both exit 1, and rank 1 says rank 0 WHY.
refused() {
	port=$((port + 2))
	RANK_OPTS=("$1" "$2")
	ranks 2 -t 3000 "${SMALL[@]}"
	each_rc 2 1
	run jq -r .error.message "$BATS_TEST_TMPDIR/rank.1.out"
	assert_output "rank 1: rank 0 (127.0.0.1:$port) $3"
}

@test "alltoall --fabric ofi:tcp under a token: the same token joins; another token, or none beside one, fails by name" {
	local a=$BATS_TEST_TMPDIR/a a2=$BATS_TEST_TMPDIR/a2 b=$BATS_TEST_TMPDIR/b
	printf 'group-token-a\n' >"$a"
	printf 'group-token-a\n' >"$a2"
	printf 'group-token-b\n' >"$b"
	chmod 600 "$a" "$a2" "$b"
	RANK_OPTS=("--token-file $a" "--token-file $a2")
	ranks 2 -t 20000 "${SMALL[@]}"
	each_rc 2 0
	refused "--token-file $a" "--token-file $b" "did not prove the group token (a wrong token?)"
	refused "--token-file $a" "" "holds a group token and this rank none"
	# neither got to the exchange: no figures from rank 0
	run jq -e 'has("wrong")' "$BATS_TEST_TMPDIR/rank.0.out"
	assert_failure
}

@test "alltoall --fabric ofi:tcp: hierarchical, --background and GPU memory run over verbs only, each a usage error, as is a provider name that is not one" {
	: >"$peers"
	run "$RDMACTL" alltoall --fabric ofi:tcp --algo hierarchical --ranks-per-node 1 \
		--rendezvous "file:$peers" -r 0 -w 2
	assert_failure 2
	assert_output --partial "--algo hierarchical (its node's shared segment) runs over verbs only"
	run "$RDMACTL" alltoall --fabric ofi:tcp --background pairs --rendezvous "file:$peers" -r 0 -w 2
	assert_failure 2
	assert_output --partial "--background runs over verbs only"
	run "$RDMACTL" alltoall --fabric ofi:tcp --mem cuda --rendezvous "file:$peers" -r 0 -w 2
	assert_failure 2
	assert_output --partial "GPU memory runs over verbs only"
	run "$RDMACTL" alltoall --fabric ofi:bogus! --rendezvous "file:$peers" -r 0 -w 2
	assert_failure 2
	assert_output --partial "invalid --fabric 'ofi:bogus!'"
}
