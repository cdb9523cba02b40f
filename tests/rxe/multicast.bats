#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl multicast on real SoftRoCE: a root and 7 receivers, each
# algorithm, every receiver's digest (XXH64, or SHA-256 with --digest
# sha256) equal to the root's and to the blob's, its --out file the blob;
# odd sizes; a relay killed in the middle; a wrong copy caught.

bats_require_minimum_version 1.5.0
load helpers

# mc_peers N [ADDR...]: a peers file for N ranks (helpers.bash).
mc_peers() {
	group_peers 23000 "$@"
}

# mc_start N ARGS...: ranks 0..N-1 in the background, receivers writing to
# out.I; stdout in rank.I.out, stderr in rank.I.err; PIDS holds them.
mc_start() {
	local n=$1 i
	shift
	PIDS=()
	for ((i = 0; i < n; i++)); do
		# the test hook: one receiver flips a byte of its copy
		local corrupt=
		[[ $i != "${MC_CORRUPT_RANK:-}" ]] || corrupt=$MC_CORRUPT_AT
		if [[ $i == "${MC_VICTIM:-}" ]]; then
			# the victim runs unwrapped, so that a kill reaches rdmactl itself
			"$RDMACTL" ${MC_JSON--j} -t "${MC_TIMEOUT:-20000}" multicast --rank "$i" --world "$n" \
				--rendezvous "file:$PEERS" --out "$BATS_TEST_TMPDIR/out.%r" "$@" \
				>"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		else
			RDMACTL_TEST_CORRUPT_BYTE=$corrupt rdmactl ${MC_JSON--j} -t "${MC_TIMEOUT:-20000}" multicast --rank "$i" --world "$n" \
				--rendezvous "file:$PEERS" --out "$BATS_TEST_TMPDIR/out.%r" "$@" \
				>"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		fi
		PIDS+=($!)
	done
}

mc_wait() {
	local p
	RCS=()
	for p in "${PIDS[@]}"; do
		if wait "$p"; then RCS+=(0); else RCS+=($?); fi
	done
	PIDS=()
}

mc_dump() {
	local f
	for f in "$BATS_TEST_TMPDIR"/rank.*; do
		echo "== ${f##*/}"
		cat "$f"
	done
}

# xxh64_of FILE: its XXH64 as xxhsum -H1 prints it (Debian's xxhash).
xxh64_of() {
	command -v xxhsum >/dev/null || fail "no xxhsum: tests/deps.sh installs xxhash"
	xxhsum -H1 <"$1" | cut -d' ' -f1
}

# mc_ok N SHA ARGS...: every rank succeeds; every --out file hashes to SHA
# (the blob's SHA-256); the root's document lists N-1 receivers, all ok
# with the root's digest, which is the blob's: with --digest sha256 SHA
# (also under sha256), else (xxh64, the default) what xxhsum gives the blob.
mc_ok() {
	local n=$1 sha=$2 i want digest=xxh64
	shift 2
	[[ " $* " != *" --digest sha256 "* ]] || digest=sha256
	mc_start "$n" "$@"
	mc_wait
	for ((i = 0; i < n; i++)); do
		[ "${RCS[i]}" = 0 ] || { mc_dump; fail "rank $i exited ${RCS[i]}"; }
	done
	for ((i = 1; i < n; i++)); do
		[ "$(sha256sum <"$BATS_TEST_TMPDIR/out.$i" | cut -d' ' -f1)" = "$sha" ] ||
			fail "rank $i's --out file differs from the root's blob"
		[ ! -s "$BATS_TEST_TMPDIR/rank.$i.out" ] || fail "rank $i printed on stdout"
	done
	# out.1 is the blob (its SHA-256 is the blob's)
	want=$sha
	[[ $digest == sha256 ]] || want=$(xxh64_of "$BATS_TEST_TMPDIR/out.1")
	DOC=$(cat "$BATS_TEST_TMPDIR/rank.0.out")
	jq -e --argjson n "$n" --arg d "$digest" --arg want "$want" --arg sha "$sha" '
		(if $d == "sha256" then $sha else null end) as $sha256
		| .schema_version == 3 and .digest == $d and .digest_value == $want and .sha256 == $sha256
		and (.receivers | length) == $n - 1 and .ok_count == $n - 1
		and all(.receivers[]; .ok and .digest_value == $want and .sha256 == $sha256
			and .first_chunk_ms <= .last_chunk_ms)
		and .seconds >= 0 and .ideal_seconds >= 0' <<<"$DOC" >/dev/null ||
		{ mc_dump; fail "the root's document is not right"; }
}

# mc_chunks C0 C1 C2: ranks 0 to 2, flat, sending the file w, rank i given
# --chunk Ci (- for none); waited for (RCS).
mc_chunks() {
	local i c=()
	mc_peers 3
	PIDS=()
	for i in 0 1 2; do
		c=()
		[[ $1 == - ]] || c=(--chunk "$1")
		shift
		rdmactl -j -t 20000 multicast --rank "$i" --world 3 --rendezvous "file:$PEERS" \
			--out "$BATS_TEST_TMPDIR/out.%r" --algo flat --file "$BATS_TEST_TMPDIR/w" \
			"${c[@]}" >"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
	mc_wait
}

# The ranks still running (a failed test), etcd, the sanitizer reports.
teardown() {
	started "${PIDS[@]}"
	common_teardown
}

# blob FILE SIZE: random bytes; BLOB_SHA its digest.
blob() {
	head -c "$2" /dev/urandom >"$1"
	BLOB_SHA=$(sha256sum <"$1" | cut -d' ' -f1)
}

# bats test_tags=plain-only
@test "flat: a root and 7 receivers, 4 MiB, every digest the root's" {
	need_guest
	blob "$BATS_TEST_TMPDIR/w" $((4 << 20))
	mc_peers 8
	mc_ok 8 "$BLOB_SHA" --algo flat --file "$BATS_TEST_TMPDIR/w" --chunk 256K
	jq -e '.algo == "flat" and .depth == 1 and .width == 7 and .chunks == 16' <<<"$DOC"
}

@test "--max-ring: a receiver refuses, by name, a root that asks for a larger ring; one within it is served" {
	# sanitizer tier: always (a root's hello that asks more of a receiver than it allows)
	need_guest
	blob "$BATS_TEST_TMPDIR/w" $((1 << 20))
	# rings of 16 chunks of 1 MiB: 16 MiB, over the receiver's 8 MiB
	mc_peers 2
	mc_start 2 --algo flat --file "$BATS_TEST_TMPDIR/w" --chunk 1M --ring 16 --max-ring 8M
	mc_wait
	((RCS[1] != 0)) || { mc_dump; fail "the receiver took a 16 MiB ring past --max-ring 8M"; }
	((RCS[0] != 0)) || { mc_dump; fail "the root did not fail"; }
	grep -q "a ring of 16 chunks of 1048576 bytes (16777216 bytes), more than this rank's --max-ring of 8388608: refused" \
		"$BATS_TEST_TMPDIR/rank.1.out" || { mc_dump; fail "the receiver does not name --max-ring"; }
	# within the receiver's limit, the same is served
	mc_peers 2
	mc_ok 2 "$BLOB_SHA" --algo flat --file "$BATS_TEST_TMPDIR/w" --chunk 1M --ring 16 --max-ring 16M
}

@test "the digest: xxh64 by default, as xxhsum gives the blob; --digest sha256 as sha256sum does, in the text and the document" {
	need_guest
	local x
	blob "$BATS_TEST_TMPDIR/w" $((2 << 20))
	x=$(xxh64_of "$BATS_TEST_TMPDIR/w")
	[[ $x =~ ^[0-9a-f]{16}$ ]] || fail "xxhsum gave '$x'"
	mc_peers 4
	MC_JSON= mc_start 4 --algo tree --file "$BATS_TEST_TMPDIR/w" --chunk 256K
	mc_wait
	[ "${RCS[*]}" = "0 0 0 0" ] || { mc_dump; fail "exit codes ${RCS[*]}"; }
	grep -qx "# root xxh64 $x" "$BATS_TEST_TMPDIR/rank.0.out" || { mc_dump; fail "the text's root digest"; }
	[ "$(grep -cE "^ +[1-3] .* yes  $x  " "$BATS_TEST_TMPDIR/rank.0.out")" = 3 ] ||
		{ mc_dump; fail "the text's receivers"; }
	mc_peers 4
	mc_ok 4 "$BLOB_SHA" --algo tree --digest sha256 --file "$BATS_TEST_TMPDIR/w" --chunk 256K
	jq -e --arg sha "$BLOB_SHA" '.digest == "sha256" and .sha256 == $sha and .digest_value == $sha
		and all(.receivers[]; .sha256 == $sha)' <<<"$DOC"
	mc_peers 4
	MC_JSON= mc_start 4 --algo tree --digest sha256 --file "$BATS_TEST_TMPDIR/w" --chunk 256K
	mc_wait
	[ "${RCS[*]}" = "0 0 0 0" ] || { mc_dump; fail "exit codes ${RCS[*]}"; }
	grep -qx "# root sha256 $BLOB_SHA" "$BATS_TEST_TMPDIR/rank.0.out" || { mc_dump; fail "the text's SHA-256"; }
}

@test "chain: a root and 7 receivers, 4 MiB, every digest the root's" {
	heavy_sibling "the tree tests relay chunks down the same path"
	need_guest
	blob "$BATS_TEST_TMPDIR/w" $((4 << 20))
	mc_peers 8
	mc_ok 8 "$BLOB_SHA" --algo chain --file "$BATS_TEST_TMPDIR/w" --chunk 256K
	jq -e '.algo == "chain" and .depth == 7 and .width == 1' <<<"$DOC"
}

# bats test_tags=plain-only
@test "tree: a root and 7 receivers, binary and fanout 3, with blocks" {
	need_guest
	blob "$BATS_TEST_TMPDIR/w" $((4 << 20))
	mc_peers 8
	mc_ok 8 "$BLOB_SHA" --algo tree --file "$BATS_TEST_TMPDIR/w" --chunk 256K \
		--block-sizes 1M,1M,2M
	jq -e '.algo == "tree" and .fanout == 2 and .depth == 3 and .width == 2
		and all(.receivers[]; (.blocks_usable_ms | length) == 3
			and .blocks_usable_ms[0] <= .blocks_usable_ms[2]
			and .blocks_usable_ms[2] <= .last_chunk_ms + 0.01)' <<<"$DOC"
	mc_peers 8
	mc_ok 8 "$BLOB_SHA" --algo tree --fanout 3 --file "$BATS_TEST_TMPDIR/w" --chunk 256K
	jq -e '.fanout == 3 and .depth == 2 and .width == 3' <<<"$DOC"
}


@test "tree: a root and 71 receivers, past the old limit of 64 ranks, every digest the root's" {
	heavy_sibling "the tree tests of 8 ranks; groups to 4096 ranks in test_group_tree and test_group_plan; it adds one line to what the rest reaches (tests/lib/sanitizer-cover.sh), for 70 s"
	need_guest
	blob "$BATS_TEST_TMPDIR/w" $((256 << 10))
	mc_peers 72
	MC_TIMEOUT=90000 RDMACTL_TEST_TIMEOUT=150 mc_ok 72 "$BLOB_SHA" --algo tree --fanout 4 --file "$BATS_TEST_TMPDIR/w" --chunk 64K --ring 16
	# the root holds a connection to every receiver (its report), one shared
	# receive queue of ring + 8 receives and two a connection, and a send
	# slot a connection: slots of 1 KiB each
	jq -e '.algo == "tree" and (.receivers | length) == 71 and .depth == 3 and .width == 4
		and .group.qps == 71 and .group.ring_bytes == (16 + 8 + 3 * 71) * 1024 and .group.tree_depth <= 3' <<<"$DOC"
}
@test "--plan gives the root the QPs, CQs, ring bytes and tree depth a tree of 4 reports" {
	need_guest
	heavy_sibling "the tree tests run the group; the plan runs sanitized in tests/cli/plan.bats"
	local plan got
	mc_peers 4
	mc_ok 4 "$(head -c 1M /dev/zero | sha256sum | cut -d' ' -f1)" --algo tree --fanout 2 \
		--pattern zero --size 1M --chunk 64K --ring 4
	got=$(jq -r '"qps \(.group.qps) cqs \(.group.cqs) ring_bytes \(.group.ring_bytes) tree_depth \(.group.tree_depth)"' <<<"$DOC")
	# the root's command line, with --plan added: no device, no rendezvous
	plan=$(rdmactl -j multicast --plan --rank 0 --world 4 --rendezvous "file:$PEERS" --algo tree \
		--fanout 2 --pattern zero --size 1M --chunk 64K --ring 4 |
		jq -r '"qps \(.rank.qps) cqs \(.rank.cqs) ring_bytes \(.rank.ring_bytes) tree_depth \(.job.tree_depth)"')
	assert_equal "$plan" "$got"
	# every rank: 3 connections, a shared receive queue of 4 + 8 receives and
	# two a connection, a send slot a connection: (12 + 3 x 3) KiB
	assert_equal "$got" 'qps 3 cqs 1 ring_bytes 21504 tree_depth 1'
	# a plan with rings of another depth is seen to differ
	plan=$(rdmactl -j multicast --plan --rank 0 --world 4 --algo tree --ring 16 --chunk 64K |
		jq -r '"qps \(.rank.qps) cqs \(.rank.cqs) ring_bytes \(.rank.ring_bytes) tree_depth \(.job.tree_depth)"')
	[ "$plan" != "$got" ] || fail "a plan of rings of 16 matched a run with rings of 4: $plan"
}

@test "--svg: the root draws one bar a receiver, the blocks as ticks, and it renders" {
	need_guest
	blob "$BATS_TEST_TMPDIR/w" $((1 << 20))
	mc_peers 4
	mc_ok 4 "$BLOB_SHA" --algo chain --file "$BATS_TEST_TMPDIR/w" --chunk 128K \
		--block-sizes 512K,512K --svg "$BATS_TEST_TMPDIR/mc.svg"
	[ "$(jq -r .svg <<<"$DOC")" = "$BATS_TEST_TMPDIR/mc.svg" ]
	# 3 receivers: 3 bars (a tooltip each), blue (whole), 2 ticks each, 5 grid lines
	[ "$(grep -c '<rect[^>]*fill="#4575b4"[^>]*><title>rank ' "$BATS_TEST_TMPDIR/mc.svg")" = 3 ]
	[ "$(grep -c '<line[^>]*stroke="#000000"' "$BATS_TEST_TMPDIR/mc.svg")" = 6 ]
	# the title in a reader's units, the axis in round steps with their unit
	grep -q '<title>rdmactl multicast: chain, 1 MiB to 3 receivers</title>' "$BATS_TEST_TMPDIR/mc.svg"
	grep -Eq '>0 m?s</text>' "$BATS_TEST_TMPDIR/mc.svg"
	run grep -Eo '>[0-9.]+ m?s</text>' "$BATS_TEST_TMPDIR/mc.svg"
	((${#lines[@]} >= 3)) || fail "ticks: $output"
	refute_output --regexp 'e\+|[0-9]\.[0-9]{3}'
	command -v rsvg-convert >/dev/null || skip "rsvg-convert (librsvg2-bin) is not installed"
	rsvg-convert -o "$BATS_TEST_TMPDIR/mc.png" "$BATS_TEST_TMPDIR/mc.svg"
	[ -s "$BATS_TEST_TMPDIR/mc.png" ]
}

@test "every algorithm across the two rxe devices of the veth pair" {
	heavy_sibling "flat, chain and tree on one device"
	need_two_nics
	local algo
	blob "$BATS_TEST_TMPDIR/w" $((3 << 20))
	for algo in flat chain tree; do
		mc_peers 8 "$RDMACTL_VM_ADDR_A" "$RDMACTL_VM_ADDR_B"
		mc_ok 8 "$BLOB_SHA" --algo "$algo" --file "$BATS_TEST_TMPDIR/w" --chunk 128K
		jq -e --arg a "$RDMACTL_VM_DEV_A" --arg b "$RDMACTL_VM_DEV_B" '
			.device == $a and ([.receivers[].device] | index($a) != null and index($b) != null)' \
			<<<"$DOC" || { mc_dump; fail "$algo: the receivers were not on both devices"; }
	done
}

@test "odd sizes: a chunk that does not divide the blob, a blob below one chunk, an empty blob" {
	need_guest
	blob "$BATS_TEST_TMPDIR/w" 1000003
	mc_peers 4
	mc_ok 4 "$BLOB_SHA" --algo chain --file "$BATS_TEST_TMPDIR/w" --chunk 64K
	jq -e '.chunks == 16 and .size_bytes == 1000003' <<<"$DOC"
	blob "$BATS_TEST_TMPDIR/w" 1000
	mc_peers 4
	mc_ok 4 "$BLOB_SHA" --algo tree --file "$BATS_TEST_TMPDIR/w" --chunk 64K
	jq -e '.chunks == 1' <<<"$DOC"
	: >"$BATS_TEST_TMPDIR/w"
	mc_peers 4
	mc_ok 4 "$(sha256sum </dev/null | cut -d' ' -f1)" --algo flat --file "$BATS_TEST_TMPDIR/w"
	jq -e '.chunks == 0 and .size_bytes == 0' <<<"$DOC"
}

# bats test_tags=plain-only
@test "a blob 12 times the receivers' ring streams through it, from a pattern" {
	need_guest
	local sha i
	mc_peers 4
	mc_start 4 --algo tree --pattern random:7 --size 3M --chunk 64K --ring 4
	mc_wait
	for i in 0 1 2 3; do [ "${RCS[i]}" = 0 ] || { mc_dump; fail "rank $i exited ${RCS[i]}"; }; done
	sha=$(jq -r .digest_value "$BATS_TEST_TMPDIR/rank.0.out")
	jq -e '.ring_chunks == 4 and .chunks == 48 and .ok_count == 3 and .digest == "xxh64"' "$BATS_TEST_TMPDIR/rank.0.out"
	for i in 1 2 3; do
		[ "$(stat -c %s "$BATS_TEST_TMPDIR/out.$i")" = $((3 << 20)) ]
		[ "$(xxh64_of "$BATS_TEST_TMPDIR/out.$i")" = "$sha" ]
	done
	[ "$(jq -r '.receivers[0].digest_value' "$BATS_TEST_TMPDIR/rank.0.out")" = "$sha" ]
}

@test "a relay killed in the middle of a chain: its downstream ends with an error, the root names them, exits 1" {
	need_guest
	local i
	# long enough to kill in the middle, short enough for the sanitizer build;
	# sha256 (40 MB/s under the guest's emulation) paces the stream so that
	# the kill lands in its middle: with XXH64 the 16 MiB can pass before
	# the poll below sees rank 4's first byte, on a loaded host
	MC_TIMEOUT=15000 MC_VICTIM=3 RDMACTL_TEST_TIMEOUT=150
	mc_peers 8
	mc_start 8 --algo chain --pattern random:3 --size 16M --chunk 128K --ring 8 --digest sha256
	# kill rank 3 once rank 4 has data (its --out file grows), well before the end
	for ((i = 0; i < 600; i++)); do
		[ "$(stat -c %s "$BATS_TEST_TMPDIR/out.4" 2>/dev/null || echo 0)" -gt 0 ] && break
		sleep 0.05
	done
	kill -0 "${PIDS[3]}" || { mc_dump; fail "rank 3 ended before the kill"; }
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/out.4")" -lt $((8 << 20)) ] || fail "the kill came too late"
	kill -KILL "${PIDS[3]}"
	mc_wait
	[ "${RCS[0]}" = 1 ] || { mc_dump; fail "the root exited ${RCS[0]}, not 1"; }
	DOC=$(cat "$BATS_TEST_TMPDIR/rank.0.out")
	jq -e '.ok_count == 2 and .error.message != null
		and ([.receivers[] | select(.ok) | .rank] == [1, 2])
		and (.receivers[] | select(.rank == 3) | .error | test("no report"))
		and (.receivers[] | select(.rank == 4) | .error | test("rank 3"))
		and all(.receivers[] | select(.rank >= 5); .error | test("rank [4-6] stopped relaying"))' \
		<<<"$DOC" >/dev/null || { mc_dump; fail "the root's report is not the stated outcome"; }
	jq -e '.error.message | test("rank 3, 4, 5, 6, 7 did not get the whole blob")' <<<"$DOC" ||
		{ mc_dump; fail "the root's error does not name them"; }
	for i in 4 5 6 7; do
		[ "${RCS[i]}" = 1 ] || { mc_dump; fail "rank $i exited ${RCS[i]}, not 1"; }
	done
	[ "${RCS[1]}" = 0 ] && [ "${RCS[2]}" = 0 ]
}

# bats test_tags=plain-only
@test "a receiver killed under flat: the others finish whole, the text report names it" {
	need_guest
	local i
	MC_TIMEOUT=15000 MC_VICTIM=2 MC_JSON= RDMACTL_TEST_TIMEOUT=150
	mc_peers 4
	# sha256 paces the stream, as in the chain test above
	mc_start 4 --algo flat --pattern seq --size 24M --chunk 256K --ring 8 --digest sha256
	for ((i = 0; i < 600; i++)); do
		[ "$(stat -c %s "$BATS_TEST_TMPDIR/out.2" 2>/dev/null || echo 0)" -gt 0 ] && break
		sleep 0.05
	done
	kill -0 "${PIDS[2]}" || { mc_dump; fail "rank 2 ended before the kill"; }
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/out.2")" -lt $((12 << 20)) ] || fail "the kill came too late"
	kill -KILL "${PIDS[2]}"
	mc_wait
	[ "${RCS[0]}" = 1 ] && [ "${RCS[1]}" = 0 ] && [ "${RCS[3]}" = 0 ] || { mc_dump; fail "exit codes ${RCS[*]}"; }
	grep -qE '^ +2 +- +- +- +no +-$' "$BATS_TEST_TMPDIR/rank.0.out" || { mc_dump; fail "rank 2's line"; }
	grep -q "no report: rank 2" "$BATS_TEST_TMPDIR/rank.0.out" || { mc_dump; fail "no reason for rank 2"; }
	grep -q "^# 2 of 3 receivers got the whole blob" "$BATS_TEST_TMPDIR/rank.0.out" || { mc_dump; fail "the count"; }
	grep -q "rank 2 did not get the whole blob" "$BATS_TEST_TMPDIR/rank.0.err" || { mc_dump; fail "the root's error"; }
	for i in 1 3; do
		[ "$(stat -c %s "$BATS_TEST_TMPDIR/out.$i")" = $((24 << 20)) ] || fail "rank $i is not whole"
	done
	[ "$(sha256sum <"$BATS_TEST_TMPDIR/out.1")" = "$(sha256sum <"$BATS_TEST_TMPDIR/out.3")" ]
}

# bats test_tags=plain-only
@test "a receiver whose copy is wrong exits 1, and the root says its digest differs" {
	need_guest
	local i digest title want
	blob "$BATS_TEST_TMPDIR/w" $((1 << 20))
	# under each digest: the root's is the blob's (xxhsum's, sha256sum's)
	for digest in xxh64 sha256; do
		title=XXH64 want=$(xxh64_of "$BATS_TEST_TMPDIR/w")
		[[ $digest == xxh64 ]] || title=SHA-256 want=$BLOB_SHA
		rm -f "$BATS_TEST_TMPDIR"/out.*
		mc_peers 4
		# rank 1, a relay of the chain, flips one byte of its own copy (a hidden
		# test hook); what it forwards stays whole
		MC_CORRUPT_RANK=1 MC_CORRUPT_AT=300000
		mc_start 4 --algo chain --file "$BATS_TEST_TMPDIR/w" --chunk 256K --digest "$digest"
		mc_wait
		[ "${RCS[0]}" = 1 ] || { mc_dump; fail "$digest: the root exited ${RCS[0]}, not 1"; }
		[ "${RCS[1]}" = 1 ] || { mc_dump; fail "$digest: rank 1 exited ${RCS[1]}, not 1"; }
		for i in 2 3; do
			[ "${RCS[i]}" = 0 ] || { mc_dump; fail "$digest: rank $i exited ${RCS[i]}"; }
		done
		DOC=$(cat "$BATS_TEST_TMPDIR/rank.0.out")
		jq -e --arg d "$digest" --arg t "$title" --arg want "$want" --arg sha "$BLOB_SHA" '
			(if $d == "sha256" then $sha else null end) as $sha256
			| .ok_count == 2 and .digest == $d and .digest_value == $want
			and (.receivers[] | select(.rank == 1) | (.ok | not) and .digest_value != $want
				and (.error | test("its " + $t + " differs from the root.s")))
			and all(.receivers[] | select(.rank >= 2); .ok and .digest_value == $want
				and .sha256 == $sha256)' <<<"$DOC" >/dev/null ||
			{ mc_dump; fail "$digest: the root's report does not name rank 1's digest"; }
		jq -e '.error.message | test("rank 1 did not get the whole blob")' <<<"$DOC" >/dev/null ||
			{ mc_dump; fail "$digest: the root's error does not name rank 1"; }
		# rank 1 says it too, as an error document of its own
		jq -e --arg t "$title" '.error.message
			| test("rank 1: the blob is wrong: its " + $t + " [0-9a-f]*[.][.][.] differs from the root.s")' \
			"$BATS_TEST_TMPDIR/rank.1.out" >/dev/null || { mc_dump; fail "$digest: rank 1 printed no error document"; }
		# its --out file holds the one flipped byte, the others' are whole
		[ "$(cmp -l "$BATS_TEST_TMPDIR/w" "$BATS_TEST_TMPDIR/out.1" | wc -l)" = 1 ] ||
			fail "$digest: rank 1's copy is not one byte off"
		for i in 2 3; do
			cmp -s "$BATS_TEST_TMPDIR/w" "$BATS_TEST_TMPDIR/out.$i" || fail "$digest: rank $i's copy differs"
		done
	done
}

@test "flat, text: the receiver with a wrong copy says its digest differs, the root names it" {
	need_guest
	local digest title
	blob "$BATS_TEST_TMPDIR/w" $((512 << 10))
	for digest in xxh64 sha256; do
		title=XXH64
		[[ $digest == xxh64 ]] || title=SHA-256
		mc_peers 3
		MC_JSON= MC_CORRUPT_RANK=2 MC_CORRUPT_AT=0
		mc_start 3 --algo flat --file "$BATS_TEST_TMPDIR/w" --chunk 128K --digest "$digest"
		mc_wait
		[ "${RCS[*]}" = "1 0 1" ] || { mc_dump; fail "$digest: exit codes ${RCS[*]}, not 1 0 1"; }
		grep -q "rank 2: the blob is wrong: its $title [0-9a-f]*\.\.\. differs from the root's" \
			"$BATS_TEST_TMPDIR/rank.2.err" || { mc_dump; fail "$digest: rank 2 does not say its digest differs"; }
		grep -q "its $title differs from the root's" "$BATS_TEST_TMPDIR/rank.0.out" ||
			{ mc_dump; fail "$digest: the root's report does not say rank 2's digest differs"; }
		grep -q "^# 1 of 2 receivers got the whole blob" "$BATS_TEST_TMPDIR/rank.0.out" ||
			{ mc_dump; fail "$digest: the count"; }
		grep -q "rank 2 did not get the whole blob" "$BATS_TEST_TMPDIR/rank.0.err" ||
			{ mc_dump; fail "$digest: the root's error"; }
	done
}

# mc_differ MESSAGE: every rank stopped with a usage error (2) saying
# MESSAGE, before a write landed in a ring.
mc_differ() {
	local i
	[ "${RCS[*]}" = "2 2 2" ] || { mc_dump; fail "exit codes ${RCS[*]}, not 2 2 2"; }
	for i in 0 1 2; do
		jq -e --arg m "$1" '.error.message == $m and .error.code == "EINVAL"' \
			"$BATS_TEST_TMPDIR/rank.$i.out" >/dev/null || { mc_dump; fail "rank $i does not say: $1"; }
	done
	run cat "$BATS_TEST_TMPDIR"/rank.*
	refute_output --partial "RDMA WRITE"
}

@test "a receiver given another --chunk: the group stops at the start, every rank names that rank, the option and both values" {
	need_guest
	blob "$BATS_TEST_TMPDIR/w" $((512 << 10))
	mc_chunks 128K 128K 64K
	# rank 1 (connected to the root alone) says it too: the group's tree
	mc_differ "rank 2's --chunk (64K) differs from rank 0's (128K): every rank needs the same"
}

@test "--chunk auto: the root cuts 8 MiB into 512K chunks and the receivers take them; a receiver given 256K is named" {
	need_guest
	blob "$BATS_TEST_TMPDIR/w" $((8 << 20))
	mc_peers 3
	mc_ok 3 "$BLOB_SHA" --algo flat --file "$BATS_TEST_TMPDIR/w"
	jq -e '.chunk_bytes == 524288 and .chunks == 16' <<<"$DOC" >/dev/null ||
		{ mc_dump; fail "the root did not pick 512K chunks for 8 MiB"; }
	# the root picks, so a receiver given its own chunk must give the root's
	mc_chunks - - 256K
	[ "${RCS[*]}" = "1 1 1" ] || { mc_dump; fail "exit codes ${RCS[*]}, not 1 1 1"; }
	jq -e '.error.message | test("^rank 0: rank 2.s --chunk differs from the root.s$")' \
		"$BATS_TEST_TMPDIR/rank.0.out" >/dev/null || { mc_dump; fail "the root does not name rank 2's --chunk"; }
}

@test "a receiver given another --digest: the group stops at the start, every rank names that rank, the option and both values" {
	need_guest
	local i d
	blob "$BATS_TEST_TMPDIR/w" $((256 << 10))
	mc_peers 3
	PIDS=()
	for i in 0 1 2; do
		d=xxh64
		[[ $i != 2 ]] || d=sha256
		rdmactl -j -t 20000 multicast --rank "$i" --world 3 --rendezvous "file:$PEERS" \
			--out "$BATS_TEST_TMPDIR/out.%r" --algo flat --file "$BATS_TEST_TMPDIR/w" \
			--digest "$d" >"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
	mc_wait
	mc_differ "rank 2's --digest (sha256) differs from rank 0's (xxh64): every rank needs the same"
}

@test "--block-sizes given to the root only: every rank stops at the start, naming the option" {
	need_guest
	local i b
	blob "$BATS_TEST_TMPDIR/w" $((256 << 10))
	mc_peers 3
	PIDS=()
	for i in 0 1 2; do
		b=()
		[[ $i != 0 ]] || b=(--block-sizes 128K,128K)
		rdmactl -j -t 20000 multicast --rank "$i" --world 3 --rendezvous "file:$PEERS" \
			--out "$BATS_TEST_TMPDIR/out.%r" --algo flat --file "$BATS_TEST_TMPDIR/w" "${b[@]}" \
			>"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
	mc_wait
	mc_differ "rank 1's --block-sizes (none) differs from rank 0's (128K,128K); 1 more rank differs from rank 0: every rank needs the same"
}

@test "group token: a chain of 3 whose ranks share the token (file, environment) delivers; a rank with a longer one is refused" {
	need_guest
	blob "$BATS_TEST_TMPDIR/w" $((256 << 10))
	printf 's3cret\n' >"$BATS_TEST_TMPDIR/tok"
	chmod 600 "$BATS_TEST_TMPDIR/tok"
	mc_peers 3
	RDMACTL_TOKEN=s3cret mc_ok 3 "$BLOB_SHA" --algo chain --file "$BATS_TEST_TMPDIR/w" --chunk 64K
	mc_peers 3
	mc_ok 3 "$BLOB_SHA" --algo chain --file "$BATS_TEST_TMPDIR/w" --chunk 64K \
		--token-file "$BATS_TEST_TMPDIR/tok"
	# Rank 2 holds s3cretX: it refuses the ranks that connect to it (and
	# they say why), and nobody exits 0.
	mc_peers 3
	PIDS=()
	local i t
	for i in 0 1 2; do
		t=s3cret
		((i == 2)) && t=s3cretX
		RDMACTL_TOKEN=$t rdmactl -t 4000 multicast --rank "$i" --world 3 --rendezvous "file:$PEERS" \
			--algo chain --file "$BATS_TEST_TMPDIR/w" --chunk 64K --out "$BATS_TEST_TMPDIR/bad.%r" \
			>"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
	mc_wait
	for i in 0 1 2; do
		[ "${RCS[i]}" != 0 ] || { mc_dump; fail "rank $i exited 0 with a rank that lacks the token"; }
	done
	run cat "$BATS_TEST_TMPDIR/rank.0.err" "$BATS_TEST_TMPDIR/rank.1.err"
	assert_output --partial "rank 2 ($ADDR:"
	assert_output --partial "did not prove the group token"
}

GROUP_REPLAY=${GROUP_REPLAY:-$BUILD_DIR/tests/rxe/libgroup_replay.so}

# bats test_tags=plain-only
@test "group token: a hello recorded in one job and replayed in a later one by a process without the token is refused; the receiver takes no forged blob, and the real root then delivers" {
	# plain-only: the preload library and the sanitizer runtime each want to come first
	need_guest
	local rec=$BATS_TEST_TMPDIR/hello.bin forged=$BATS_TEST_TMPDIR/forged fsha
	[ -f "$GROUP_REPLAY" ] || fail "no $GROUP_REPLAY (tests/rxe/CMakeLists.txt builds it)"
	blob "$BATS_TEST_TMPDIR/w" $((256 << 10))
	head -c $((256 << 10)) /dev/zero >"$forged"
	fsha=$(sha256sum <"$forged" | cut -d' ' -f1)
	# A first job: the root's connect request, as it went to rank 1, recorded.
	mc_peers 2
	PIDS=()
	RDMACTL_TOKEN=s3cret rdmactl -j -t 20000 multicast --rank 1 --world 2 --rendezvous "file:$PEERS" \
		--out "$BATS_TEST_TMPDIR/out.%r" >"$BATS_TEST_TMPDIR/rank.1.out" 2>"$BATS_TEST_TMPDIR/rank.1.err" &
	PIDS+=($!)
	RDMACTL_TOKEN=s3cret GROUP_REPLAY_RECORD=$rec LD_PRELOAD=$GROUP_REPLAY rdmactl -j -t 20000 multicast \
		--rank 0 --world 2 --rendezvous "file:$PEERS" --file "$BATS_TEST_TMPDIR/w" \
		>"$BATS_TEST_TMPDIR/rank.0.out" 2>"$BATS_TEST_TMPDIR/rank.0.err" &
	PIDS+=($!)
	mc_wait
	[ "${RCS[*]}" = "0 0" ] || { mc_dump; fail "the first job's exits: ${RCS[*]}"; }
	[ "$(sha256sum <"$BATS_TEST_TMPDIR/out.1" | cut -d' ' -f1)" = "$BLOB_SHA" ] || fail "the first job's blob"
	[ -s "$rec" ] || fail "no connect request recorded"
	rm -f "$BATS_TEST_TMPDIR/out.1"
	# A later job: rank 1 with the token; a root without it sends the
	# recorded bytes and a forged blob. Refused: the receiver never takes
	# the forgery, and the real root, come after it, still delivers.
	mc_peers 2
	PIDS=()
	RDMACTL_TOKEN=s3cret rdmactl -j -t 12000 multicast --rank 1 --world 2 --rendezvous "file:$PEERS" \
		--out "$BATS_TEST_TMPDIR/out.%r" >"$BATS_TEST_TMPDIR/rank.1.out" 2>"$BATS_TEST_TMPDIR/rank.1.err" &
	PIDS+=($!)
	GROUP_REPLAY_PLAY=$rec LD_PRELOAD=$GROUP_REPLAY rdmactl -j -t 4000 multicast --rank 0 --world 2 \
		--rendezvous "file:$PEERS" --file "$forged" >"$BATS_TEST_TMPDIR/forger.out" \
		2>"$BATS_TEST_TMPDIR/forger.err" &
	PIDS+=($!)
	wait "${PIDS[1]}" && { mc_dump; cat "$BATS_TEST_TMPDIR"/forger.*; fail "the replaying root exited 0"; }
	PIDS=("${PIDS[0]}")
	if [ -e "$BATS_TEST_TMPDIR/out.1" ]; then
		[ "$(sha256sum <"$BATS_TEST_TMPDIR/out.1" | cut -d' ' -f1)" != "$fsha" ] ||
			{ mc_dump; fail "rank 1 wrote the forged blob"; }
	fi
	run cat "$BATS_TEST_TMPDIR/forger.out"
	assert_output --partial "rank 1 ($ADDR:"
	RDMACTL_TOKEN=s3cret rdmactl -j -t 12000 multicast --rank 0 --world 2 --rendezvous "file:$PEERS" \
		--file "$BATS_TEST_TMPDIR/w" >"$BATS_TEST_TMPDIR/rank.0.out" 2>"$BATS_TEST_TMPDIR/rank.0.err" &
	PIDS+=($!)
	mc_wait
	[ "${RCS[*]}" = "0 0" ] || { mc_dump; fail "the later job's honest exits: ${RCS[*]}"; }
	[ "$(sha256sum <"$BATS_TEST_TMPDIR/out.1" | cut -d' ' -f1)" = "$BLOB_SHA" ] ||
		fail "rank 1's --out is not the real root's blob"
}

# tty_run LOG COMMAND: COMMAND (a shell line) under script(1), so that its
# stderr (and stdout, unless redirected) is a terminal; what that terminal
# showed in LOG. In the background: its pid appended to PIDS.
tty_run() {
	script -qefc "$2" "$1" >/dev/null 2>&1 </dev/null &
	PIDS+=($!)
}

@test "on a terminal: the root and a receiver show a progress line on stderr, never on stdout or in the -j document" {
	heavy_sibling "kvxfer's 'send on a terminal' (the same progress line) and the multicast tree tests"
	local t=$BATS_TEST_TMPDIR mode
	for mode in text json; do
		local j=
		[[ $mode == json ]] && j=-j
		mc_peers 2
		PIDS=()
		tty_run "$t/root.$mode.tty" "'$RDMACTL' $j -t 30000 multicast --rank 0 --world 2 --rendezvous file:$PEERS --pattern seq --size 2M >'$t/root.$mode.out'"
		tty_run "$t/recv.$mode.tty" "'$RDMACTL' $j -t 30000 multicast --rank 1 --world 2 --rendezvous file:$PEERS --out '$t/out.$mode' >'$t/recv.$mode.out'"
		mc_wait
		[[ ${RCS[*]} == "0 0" ]] || { cat "$t"/*."$mode".*; fail "$mode: exits ${RCS[*]}"; }
	done
	# Text on a terminal: the lines, each redrawn in place; stdout (a file) has none.
	grep -qE $'\r\033\\[Kmulticast: [0-9.]+[KMG]?i?B of 2MiB sent' "$t/root.text.tty" ||
		{ cat -A "$t/root.text.tty"; fail "no progress line on the root's terminal"; }
	grep -qE $'\r\033\\[Kmulticast: rank 1: [0-9.]+[KMG]?i?B received' "$t/recv.text.tty" ||
		{ cat -A "$t/recv.text.tty"; fail "no progress line on the receiver's terminal"; }
	run grep -c -e 'sent' -e $'\r' "$t/root.text.out"
	assert_output 0
	grep -q '^# multicast: algo tree' "$t/root.text.out"
	# -j: no progress anywhere, and the document is one JSON document.
	run grep -c 'multicast: ' "$t/root.json.tty" "$t/recv.json.tty"
	assert_output "$(printf '%s\n' "$t/root.json.tty:0" "$t/recv.json.tty:0")"
	jq -e '.ok_count == 1' "$t/root.json.out"
	cmp "$t/out.text" "$t/out.json"
}
