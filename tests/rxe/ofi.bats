#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# register, write, read and atomic over libfabric's verbs provider on rxe
# (--fabric ofi:verbs: verbs;ofi_rxm, RDM endpoints over the device's RC
# queue pairs): the 64 MiB round trip the cli tier checks over ofi:tcp,
# checked by digest, the atomics on the bytes written, a wrong token, and
# the benchmarks through the engine (tp_ofi.c) on the device, and alltoall
# over the group's libfabric endpoints (group_fab.c).
# rdmactl's side of these paths (fab_srv.c, fab_cli.c, ofi.c) runs under the
# sanitizers in the cli-asan tier over ofi:tcp; what is new here is
# libfabric's verbs provider on a real device, so the tests are plain-only.

load helpers

setup() {
	need_guest
	unset RDMACTL_TOKEN RDMACTL_FABRIC FI_UNIVERSE_SIZE
	tok=$BATS_TEST_TMPDIR/tok
	printf 'ofi-verbs-s3cret\n' >"$tok"
	chmod 600 "$tok"
	port=$(next_port)
}

# serve: a 64 MiB atomic region kv on rxe0's address over ofi:verbs
serve() {
	start_server 1 --fabric ofi:verbs --listen "$ADDR:$port" --name kv --size 64M \
		--access atomic --token-file "$tok"
}

client() {
	"$RDMACTL" "$@" --fabric ofi:verbs --descriptor "$SERVER_OUT" --token-file "$tok"
}

# bats test_tags=plain-only
@test "ofi:verbs on rxe: 64 MiB written and read back, the same by sha256; the atomics act on the bytes written; the reports name verbs;ofi_rxm on the device" {
	serve
	# the region line names the provider and the device's domain
	assert_equal "$(descriptor kv | jq -r '[.fabric, .provider, .domain] | join(" ")')" \
		"ofi verbs;ofi_rxm $RDMACTL_VM_DEV"
	head -c 64M /dev/urandom >"$BATS_TEST_TMPDIR/in.bin"
	run client -j write "$ADDR:$port/kv" --file "$BATS_TEST_TMPDIR/in.bin" --imm 77
	assert_success
	# the immediate data came once the data was written
	wait_events imm 1 "$SERVER_OUT" 50 || fail "no imm event in 5 s"
	assert_equal "$(jq -r 'select(.event == "imm") | .imm' "$SERVER_OUT")" 77
	assert_equal "$(jq -r '[.transport, .provider, .domain, .bytes] | join(" ")' <<<"$output")" \
		"ofi verbs;ofi_rxm $RDMACTL_VM_DEV 67108864"
	run client read "$ADDR:$port/kv" --out "$BATS_TEST_TMPDIR/back.bin"
	assert_success
	assert_output --partial "over ofi (verbs;ofi_rxm, domain $RDMACTL_VM_DEV): 67108864 bytes"
	assert_equal "$(sha256sum <"$BATS_TEST_TMPDIR/back.bin")" "$(sha256sum <"$BATS_TEST_TMPDIR/in.bin")"
	# the atomics act on what was written: a word of 1000 at offset 8
	printf '\xe8\x03\0\0\0\0\0\0' >"$BATS_TEST_TMPDIR/word.bin"
	run client write "$ADDR:$port/kv" --offset 8 --file "$BATS_TEST_TMPDIR/word.bin"
	assert_success
	run client -j atomic "$ADDR:$port/kv" --offset 8 --faa 5
	assert_success
	assert_equal "$(jq -r '[.old, .new, .transport, .provider] | join(" ")' <<<"$output")" "1000 1005 ofi verbs;ofi_rxm"
	# a compare that misses leaves the word; one that hits swaps it
	run client -j atomic "$ADDR:$port/kv" --offset 8 --cas 1000,7
	assert_success
	assert_equal "$(jq -r '[.old, .swapped, .new] | join(" ")' <<<"$output")" "1005 false 1005"
	run client -j atomic "$ADDR:$port/kv" --offset 8 --cas 1005,7
	assert_success
	assert_equal "$(jq -r '[.old, .swapped, .new] | join(" ")' <<<"$output")" "1005 true 7"
	run client read "$ADDR:$port/kv" --offset 8 --size 8 --out "$BATS_TEST_TMPDIR/back8.bin"
	assert_success
	assert_equal "$(od -An -t u8 "$BATS_TEST_TMPDIR/back8.bin" | tr -d ' ')" 7
}

# bats test_tags=plain-only
@test "ofi:verbs on rxe: a wrong token is refused (exit 3) and the server admitted no one" {
	serve
	printf 'another-token-42\n' >"$BATS_TEST_TMPDIR/bad"
	chmod 600 "$BATS_TEST_TMPDIR/bad"
	run "$RDMACTL" write "$ADDR:$port/kv" --fabric ofi:verbs --descriptor "$SERVER_OUT" \
		--token-file "$BATS_TEST_TMPDIR/bad" --pattern seq --size 4K
	assert_failure 3
	assert_output --partial "does not prove our token"
	run grep -c '"event":"connected"' "$SERVER_OUT"
	assert_output 0
}

# bats test_tags=plain-only
@test "ofi:verbs on rxe: --bench and --lat run through the engine on the device: every operation completes once (500 fetch-and-adds of 3 move a word by 1500), a sweep's rows, latencies by the TSC" {
	serve
	run client -j atomic "$ADDR:$port/kv" --offset 64 --faa 0
	assert_success
	local before
	before=$(jq -r .old <<<"$output")
	run client -j atomic "$ADDR:$port/kv" --offset 64 --bench --iters 500 --faa 3 --depth 16
	assert_success
	assert_equal "$(jq -r '[.operations, .transport, .provider] | join(" ")' <<<"$output")" \
		"500 ofi verbs;ofi_rxm"
	run client -j atomic "$ADDR:$port/kv" --offset 64 --faa 0
	assert_success
	assert_equal "$(jq -r .old <<<"$output")" "$((before + 1500))"
	run client -j write "$ADDR:$port/kv" --bench --msg-size 4K:64K --iters 40
	assert_success
	assert_equal "$(jq -c '[.sizes[] | [.msg_size, .operations, .bytes]]' <<<"$output")" \
		'[[4096,40,163840],[8192,40,327680],[16384,40,655360],[32768,40,1310720],[65536,40,2621440]]'
	run client -j read "$ADDR:$port/kv" --lat --msg-size 8 --iters 200 --lat-clock tsc
	assert_success
	jq -e '.lat_clock == "tsc" and .latency_us.count + .lat_left_out == 200
		and .clock_us > 0 and .clock_us < .latency_us.min
		and (.latency_us.avg + .clock_us) * (200 - .lat_left_out) <= .seconds * 1e6 * 1.001' <<<"$output"
}

# bats test_tags=plain-only
@test "ofi:verbs on rxe: alltoall, 8 ranks flat, every token checked on every rank over verbs;ofi_rxm on the device; one token wrong is counted" {
	local peers=$BATS_TEST_TMPDIR/peers r wrong
	local -a pids rcs
	: >"$peers"
	for r in $(seq 0 7); do echo "$r $ADDR:$((port + r))" >>"$peers"; done
	for wrong in "" dispatch:3:0; do
		pids=()
		for r in $(seq 0 7); do
			RDMACTL_TEST_A2A_CORRUPT=$wrong "$RDMACTL" -j -t 60000 alltoall --fabric ofi:verbs \
				--rendezvous "file:$peers" -r "$r" -w 8 --tokens 32 --hidden 256 --iters 3 \
				>"$BATS_TEST_TMPDIR/rank.$r.out" 2>"$BATS_TEST_TMPDIR/rank.$r.err" &
			pids+=($!)
			started $!
		done
		rcs=()
		for r in $(seq 0 7); do wait "${pids[r]}" && rcs+=(0) || rcs+=($?); done
		if [[ -z $wrong ]]; then
			assert_equal "${rcs[*]}" "0 0 0 0 0 0 0 0"
			assert_equal "$(jq -r '[.ranks, .wrong, (.checked_tokens > 0), .transport, .provider, .domain] | join(" ")' "$BATS_TEST_TMPDIR/rank.0.out")" \
				"8 0 true ofi verbs;ofi_rxm $RDMACTL_VM_DEV"
		else
			assert_equal "${rcs[*]}" "1 1 1 1 1 1 1 1"
			assert_equal "$(jq -r '[.wrong, .error.code] | join(" ")' "$BATS_TEST_TMPDIR/rank.0.out")" "1 EIO"
		fi
		# the next run on other ports
		: >"$peers"
		for r in $(seq 0 7); do echo "$r $ADDR:$((port + 8 + r))" >>"$peers"; done
	done
}
