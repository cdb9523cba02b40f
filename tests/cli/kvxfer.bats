#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl kvxfer without a device: plan figures in text and JSON, model
# files, and bad input refused with a clear message and exit 1 or 2.

load helpers

setup() {
	require_binary
	MODELS=$ROOT/examples/models
}

plan() { "$RDMACTL" -j kvxfer plan "$@"; }

LLAMA=(--layers 32 --kv-heads 8 --head-dim 128 --dtype bf16)

@test "Llama-3-8B: 131072 bytes a token, 4096 a layer, bf16 K and V" {
	run plan "${LLAMA[@]}" --tokens 1000
	assert_success
	[ "$(jq -r .bytes_per_token <<<"$output")" -eq $((32 * 2 * 8 * 128 * 2)) ]
	[ "$(jq -r .bytes_per_token <<<"$output")" -eq 131072 ]
	[ "$(jq -r .bytes_per_token_layer <<<"$output")" -eq 4096 ]
	[ "$(jq -r .bytes_per_request <<<"$output")" -eq 131072000 ]
	[ "$(jq -r .schema_version <<<"$output")" -eq 2 ]
	[ "$(jq -r .geometry.layout <<<"$output")" = paged ]
	# 16-token pages: 63 of them for 1000 tokens; one run per page at TP 1.
	[ "$(jq -r .pages.dst.per_request <<<"$output")" -eq 63 ]
	[ "$(jq -r '.routes[0].segments_per_layer_half' <<<"$output")" -eq 63 ]
	[ "$(jq -r '.segments.max_bytes' <<<"$output")" -eq $((16 * 8 * 128 * 2)) ]
}

@test "the model file gives the same figures as the flags, and flags override it" {
	a=$(plan --model "$MODELS/llama-3-8b.json" --tokens 77 | jq -c 'del(.schema_version)')
	b=$(plan "${LLAMA[@]}" --page-tokens 16 --tokens 77 | jq -c 'del(.schema_version)')
	# The same figures; only the model's name tells them apart.
	assert_equal "$(jq -r .geometry.model <<<"$a")" Llama-3-8B
	assert_equal "$(jq -r .geometry.model <<<"$b")" null
	assert_equal "$(jq -c 'del(.geometry.model)' <<<"$a")" "$(jq -c 'del(.geometry.model)' <<<"$b")"
	[ "$(plan --model "$MODELS/llama-3-8b.json" --layers 2 --tokens 1 | jq -r .bytes_per_token)" -eq 8192 ]
}

@test "DeepSeek-V3 MLA: 70272 bytes a token, replicated to every decode rank" {
	run plan --model "$MODELS/deepseek-v3.json" --tokens 100 --src-tp 8 --dst-tp 4
	assert_success
	[ "$(jq -r .bytes_per_token <<<"$output")" -eq $((61 * 576 * 2)) ]
	[ "$(jq -r .bytes_per_token <<<"$output")" -eq 70272 ]
	[ "$(jq -r .geometry.latent_dim <<<"$output")" -eq 576 ]
	[ "$(jq -r .wire_bytes <<<"$output")" -eq $((4 * 70272 * 100)) ]
	[ "$(jq -c '[.routes[] | [.src, .dst]]' <<<"$output")" = "[[0,0],[1,1],[2,2],[3,3]]" ]
}

@test "--pack: writes and their size for never, always and the choice; notifications unchanged" {
	# 8 heads of 256 bytes, 16-token pages, 64 tokens, 2 layers, K and V.
	g=(--layers 2 --kv-heads 8 --head-dim 128 --page-tokens 16 --tokens 64)
	wire=$((64 * 8 * 256 * 2 * 2))
	# TP 2 -> 4, nhd: each token's 2 heads (512 bytes) are one segment, and
	# a destination page (16 tokens x 2 heads) comes whole from one source.
	run plan "${g[@]}" --src-tp 2 --dst-tp 4
	assert_success
	[ "$(jq -r .wire_bytes <<<"$output")" -eq $wire ]
	[ "$(jq -r .pack.asked <<<"$output")" = auto ]
	[ "$(jq -r .pack.never.writes <<<"$output")" -eq $((64 * 4 * 2 * 2)) ]
	[ "$(jq -r .pack.never.avg_bytes <<<"$output")" -eq 512 ]
	[ "$(jq -r .pack.always.writes <<<"$output")" -eq $((4 * 4 * 2 * 2)) ]
	[ "$(jq -r .pack.always.avg_bytes <<<"$output")" -eq $((16 * 2 * 256)) ]
	[ "$(jq -c '.pack.chosen | [.writes, .routes_packed, .routes]' <<<"$output")" = "[64,4,4]" ]
	[ "$(jq -c '[.src_ranks[].writes]' <<<"$output")" = "[32,32]" ]
	run plan "${g[@]}" --src-tp 2 --dst-tp 4 --pack never
	[ "$(jq -c '.pack.chosen | [.writes, .routes_packed]' <<<"$output")" = "[1024,0]" ]
	[ "$(jq -r .pack.asked <<<"$output")" = never ]
	# TP 4 -> 2, nhd: two sources interleave in every destination row, so
	# packing joins nothing and auto leaves it; always packs for nothing.
	run plan "${g[@]}" --src-tp 4 --dst-tp 2 --qps 3
	[ "$(jq -r .pack.never.writes <<<"$output")" -eq "$(jq -r .pack.always.writes <<<"$output")" ]
	[ "$(jq -r .pack.chosen.routes_packed <<<"$output")" -eq 0 ]
	# Two sources feed each decode rank: 2 x 3 QPs x 2 layers.
	[ "$(jq -c .notifications <<<"$output")" = '{"qps":3,"per_request":[12,12]}' ]
	run plan "${g[@]}" --src-tp 4 --dst-tp 2 --qps 3 --pack always
	[ "$(jq -c '.pack.chosen | [.routes_packed, .routes]' <<<"$output")" = "[4,4]" ]
	[ "$(jq -c .notifications.per_request <<<"$output")" = "[12,12]" ]
	# hnd, 32-token source pages into 16-token ones at TP 1: 4 KiB head
	# runs, a whole 32 KiB destination page packed.
	run plan --layers 2 --kv-heads 8 --head-dim 128 --page-layout hnd --src-page-tokens 32 \
		--dst-page-tokens 16 --tokens 64
	[ "$(jq -r .pack.never.avg_bytes <<<"$output")" -eq 4096 ]
	[ "$(jq -r .pack.chosen.avg_bytes <<<"$output")" -eq 32768 ]
	run "$RDMACTL" kvxfer plan "${g[@]}" --pack sometimes
	[ "$status" -eq 2 ]
	[[ $output == *"invalid --pack 'sometimes'"* ]]
	run "$RDMACTL" kvxfer plan "${g[@]}" --src-tp 2 --dst-tp 4
	[[ $output == *"never 1024 writes of 512 bytes, always 64 writes of 8192 bytes; chosen 64 writes"* ]]
}

@test "TP 4 -> 2, 2 -> 4 and 8 -> 1: who sends which heads where" {
	run plan "${LLAMA[@]}" --tokens 16 --src-tp 4 --dst-tp 2
	assert_success
	[ "$(jq -c '[.routes[] | [.src, .dst, .head, .nheads, .dst_head_off]]' <<<"$output")" = \
		"[[0,0,0,2,0],[1,0,2,2,2],[2,1,4,2,0],[3,1,6,2,2]]" ]
	# nhd pages: a source row is half a destination row, one run a token.
	[ "$(jq -r '.routes[1].segments_per_layer_half' <<<"$output")" -eq 16 ]
	run plan "${LLAMA[@]}" --tokens 16 --src-tp 2 --dst-tp 4
	[ "$(jq -c '[.routes[] | [.src, .dst, .src_head_off]]' <<<"$output")" = "[[0,0,0],[0,1,2],[1,2,0],[1,3,2]]" ]
	run plan "${LLAMA[@]}" --tokens 16 --src-tp 8 --dst-tp 1
	[ "$(jq -c '[.routes[] | .src]' <<<"$output")" = "[0,1,2,3,4,5,6,7]" ]
	[ "$(jq -c '[.routes[] | .dst_head_off]' <<<"$output")" = "[0,1,2,3,4,5,6,7]" ]
	# hnd pages: each head is a plane, one run a page.
	run plan "${LLAMA[@]}" --tokens 16 --src-tp 8 --dst-tp 1 --page-layout hnd
	[ "$(jq -r '.routes[3].segments_per_layer_half' <<<"$output")" -eq 1 ]
}

@test "8 KV heads at TP 16: each decode rank holds a replica, and the wire carries both" {
	run plan "${LLAMA[@]}" --tokens 10 --src-tp 8 --dst-tp 16
	assert_success
	[ "$(jq -c '[.routes[] | .head]' <<<"$output")" = "[0,0,1,1,2,2,3,3,4,4,5,5,6,6,7,7]" ]
	[ "$(jq -r .wire_bytes <<<"$output")" -eq $((2 * 131072 * 10)) ]
	[ "$(jq -r '.dst_ranks[5].bytes' <<<"$output")" -eq $((131072 * 10 / 8)) ]
}

@test "segments coalesce across tokens and split at page boundaries" {
	run plan --layers 1 --kv-heads 2 --head-dim 4 --src-page-tokens 4 --dst-page-tokens 2 \
		--tokens 6 --segments
	assert_success
	# 6 tokens: source pages of 4+2, destination pages of 2+2+2: three runs.
	[ "$(jq -c '[.routes[0].segments[] | [.src_page, .src_off, .dst_page, .len]]' <<<"$output")" = \
		"[[0,0,0,32],[0,32,1,32],[1,0,2,32]]" ]
	run "$RDMACTL" kvxfer plan --layers 1 --kv-heads 2 --head-dim 4 --tokens 6 --segments
	assert_output --partial "src page 0 +0 -> dst page 0 +0: 96 bytes"
}

@test "bandwidth to hide the transfer under prefill, and exposed time at a link rate" {
	run plan "${LLAMA[@]}" --tokens 2048 --prefill-tokens-per-s 10000 --link-gbps 100
	assert_success
	# 2048 tokens x 131072 B in 0.2048 s = 10.49 Gb/s.
	[ "$(jq -r '.prefill.need_per_link_gbit_per_s | . * 100 | round' <<<"$output")" -eq 1049 ]
	[ "$(jq -r '.link.exposed_stream_us < .link.exposed_bulk_us' <<<"$output")" = true ]
	run plan "${LLAMA[@]}" --tokens 2048 --layer-compute-us 1000 --src-tp 4 --dst-tp 2
	[ "$(jq -r '.prefill.layer_us' <<<"$output")" = 1000 ]
	run "$RDMACTL" kvxfer plan "${LLAMA[@]}" --tokens 2048 --prefill-tokens-per-s 10000
	assert_success
	assert_output --partial "the busiest source link needs 10.49 Gb/s"
	assert_output --partial "per token: 131072 bytes (4096 per layer)"
}

@test "a pool check: how many requests fit, or pool too small" {
	run plan "${LLAMA[@]}" --tokens 100 --pool-pages 70
	assert_success
	[ "$(jq -r .pool.requests_fit <<<"$output")" -eq 10 ]
	run "$RDMACTL" kvxfer plan "${LLAMA[@]}" --tokens 100 --pool-pages 2
	assert_failure 2
	assert_output --partial "pool too small: a request of 100 tokens needs 7 pages"
}

@test "bad geometry: heads and TP that do not divide, zero layers, bad pages" {
	run "$RDMACTL" kvxfer plan "${LLAMA[@]}" --tokens 1 --src-tp 3
	assert_failure 2
	assert_output --partial "--src-tp 3 does not fit 8 KV heads"
	run "$RDMACTL" kvxfer plan "${LLAMA[@]}" --tokens 1 --dst-tp 12
	assert_failure 2
	assert_output --partial "--dst-tp 12 does not fit 8 KV heads"
	run "$RDMACTL" kvxfer plan --layers 0 --kv-heads 8 --head-dim 128 --tokens 1
	assert_failure 2
	assert_output --partial "--layers 0"
	run "$RDMACTL" kvxfer plan "${LLAMA[@]}" --tokens 1 --dst-page-tokens 0
	assert_failure 2
	assert_output --partial "--dst-page-tokens 0"
	run "$RDMACTL" kvxfer plan "${LLAMA[@]}" --tokens 1 --page-tokens 16x
	assert_failure 2
	run "$RDMACTL" -j kvxfer plan "${LLAMA[@]}" --tokens 1 --dtype fp4
	assert_failure 2
	[ "$(jq -r .error.code <<<"$output")" = EINVAL ]
	run "$RDMACTL" kvxfer plan --layout mla --layers 2 --kv-heads 8 --latent-dim 4 --tokens 1
	assert_failure 2
	assert_output --partial "mla layout has no heads"
	run "$RDMACTL" kvxfer plan --layers 2 --kv-heads 8 --tokens 1
	assert_failure 2
	assert_output --partial "needs --kv-heads and --head-dim"
}

@test "bad model files are named with the problem" {
	echo '{"layers": 2, "kv_heads": 8, "head_dim": 4, "colour": "red"}' >"$BATS_TEST_TMPDIR/m.json"
	run "$RDMACTL" kvxfer plan --model "$BATS_TEST_TMPDIR/m.json" --tokens 1
	assert_failure 2
	assert_output --partial 'unknown key "colour"'
	echo '{"layers": "2"}' >"$BATS_TEST_TMPDIR/m.json"
	run "$RDMACTL" kvxfer plan --model "$BATS_TEST_TMPDIR/m.json" --tokens 1
	assert_failure 2
	assert_output --partial '"layers" must be a non-negative integer'
	echo '{"layers": 2,' >"$BATS_TEST_TMPDIR/m.json"
	run "$RDMACTL" kvxfer plan --model "$BATS_TEST_TMPDIR/m.json" --tokens 1
	assert_failure 2
	run "$RDMACTL" kvxfer plan --model "$BATS_TEST_TMPDIR/none.json" --tokens 1
	# a file that is not there is a failure (1), not a malformed one (2)
	assert_failure 1
	assert_output "rdmactl: --model '$BATS_TEST_TMPDIR/none.json': No such file or directory"
	run "$RDMACTL" kvxfer plan --model "$BATS_TEST_TMPDIR" --tokens 1
	assert_failure 1
	assert_output "rdmactl: --model '$BATS_TEST_TMPDIR' is a directory: name a file"
}

@test "subcommands: unknown ones, missing ones, and options that do not apply" {
	run "$RDMACTL" kvxfer
	assert_failure 2
	assert_output --partial "give a subcommand: plan, serve or send"
	run "$RDMACTL" kvxfer fly
	assert_failure 2
	run "$RDMACTL" kvxfer plan "${LLAMA[@]}" --tokens 1 --connect 1.2.3.4:5
	assert_failure 2
	assert_output --partial "--connect does not apply here"
	run "$RDMACTL" kvxfer serve "${LLAMA[@]}" --tokens 4 --listen 1.2.3.4:5 --pool-pages 4
	assert_failure 2
	run "$RDMACTL" kvxfer serve "${LLAMA[@]}" --listen 1.2.3.4:5
	assert_failure 2
	assert_output --partial "--pool-pages N are required"
	for n in 0 5; do
		run "$RDMACTL" kvxfer serve "${LLAMA[@]}" --listen 1.2.3.4:5 --pool-pages 4 --land-pages $n
		assert_failure 2
		assert_output --partial "invalid --land-pages $n: expected 1 to the pool's 4 pages"
	done
	run "$RDMACTL" kvxfer send "${LLAMA[@]}" --tokens 4 --connect 1.2.3.4:5 --land-pages 4
	assert_failure 2
	assert_output --partial "--land-pages does not apply here"
	run "$RDMACTL" kvxfer send "${LLAMA[@]}" --tokens 4
	assert_failure 2
	run "$RDMACTL" kvxfer send "${LLAMA[@]}" --tokens 4 --connect 1.2.3.4:5 --src-tp 2 --rank 2
	assert_failure 2
	assert_output --partial "--rank 2, but --src-tp 2"
	run "$RDMACTL" kvxfer send "${LLAMA[@]}" --tokens 4 --connect 1.2.3.4:5 --cancel-request 1
	assert_failure 2
	assert_output --partial "go together"
	RDMACTL_TEST_KV_CORRUPT=first run "$RDMACTL" kvxfer send "${LLAMA[@]}" --tokens 4 --connect 1.2.3.4:5
	assert_failure 2
	assert_output --partial "RDMACTL_TEST_KV_CORRUPT=first: not a request number"
	run "$RDMACTL" __complete kvxfer ''
	assert_output "$(printf 'plan\nserve\nsend')"
}

@test "rails: serve takes an address a rail (and -d a device each), send a device or bind address a rail and a decode rank for each" {
	run "$RDMACTL" -d rxe_b kvxfer serve "${LLAMA[@]}" --listen 192.0.2.1:7500,192.0.2.2:7500 --pool-pages 4
	assert_failure 2
	assert_output --partial "kvxfer serve: -d names 1 device and --listen 2 addresses: give one device per address"
	run "$RDMACTL" kvxfer serve "${LLAMA[@]}" --listen 192.0.2.1:7500,:7500 --pool-pages 4
	assert_failure 2
	assert_output --partial "invalid --listen ':7500'"
	run "$RDMACTL" -d rxe_a,rxe_c kvxfer send "${LLAMA[@]}" --tokens 4 --connect 192.0.2.1:7500
	assert_failure 2
	assert_output --partial "kvxfer send: 2 rails (-d, --bind, --rails) but 1 decode rank (--connect): each rail needs one"
	run "$RDMACTL" -d rxe_a,rxe_c kvxfer send "${LLAMA[@]}" --tokens 4 --connect 192.0.2.1:7500 \
		--connect 192.0.2.2:7500 --bind 192.0.2.3,192.0.2.4,192.0.2.5
	assert_failure 2
	assert_output --partial "kvxfer send: the rails do not pair up: 2 devices (-d) and 3 bind addresses"
	run "$RDMACTL" kvxfer send "${LLAMA[@]}" --tokens 4 --connect 192.0.2.1:7500 \
		--connect 192.0.2.2:7500 --bind 192.0.2.3,,192.0.2.4
	assert_failure 2
	assert_output --partial "kvxfer send: an empty item in the list '192.0.2.3,,192.0.2.4'"
	# well formed: past the parser, to the missing device (exit 1)
	run timeout 20 "$RDMACTL" -d rxe_b,rxe_d kvxfer serve "${LLAMA[@]}" \
		--listen 192.0.2.1:7500,192.0.2.2:7500 --pool-pages 4
	assert_failure 1
	assert_output --partial "rail 1 (192.0.2.1)"
}

@test "send to nothing fails with exit 1 and names the decode rank" {
	run timeout 30 "$RDMACTL" -t 2000 kvxfer send "${LLAMA[@]}" --tokens 4 --connect 127.0.0.1:1
	assert_failure 1
	assert_output --partial "decode rank at 127.0.0.1:1"
}

@test "serve: a pool whose size wraps 64 bits, or that no machine holds, fails at once" {
	# 1000 layers x K,V x 2^32-1 pages x 512 MiB pages is about 2^72 bytes.
	run timeout 20 "$RDMACTL" kvxfer serve --listen 127.0.0.1:7500 --layers 1000 --kv-heads 64 \
		--head-dim 1024 --page-tokens 4096 --pool-pages 4294967295
	[ "$status" -eq 1 ]
	[ "$output" = "rdmactl: a pool of 4294967295 pages of 536870912 bytes for 1000 layers is more memory than the address space holds" ]
	run -1 --separate-stderr timeout 20 "$RDMACTL" -j kvxfer serve --listen 127.0.0.1:7500 \
		--layers 1000 --kv-heads 64 --head-dim 1024 --page-tokens 4096 --pool-pages 4294967295
	[ "$(jq -r .error.code <<<"$output")" = EOVERFLOW ]
	# 2^50 bytes fits 64 bits but no memory: a clear ENOMEM, not minutes of set-up.
	run timeout 20 "$RDMACTL" kvxfer serve --listen 127.0.0.1:7500 "${LLAMA[@]}" --pool-pages 1000000000
	[ "$status" -eq 1 ]
	[ "$output" = "rdmactl: cannot allocate 2097152000000000 bytes: Cannot allocate memory" ]
}

@test "plan's text reads in one pass: the model named, nouns agreeing, ranges, same figures said once, one time unit" {
	run "$RDMACTL" kvxfer plan --model "$MODELS/llama-3-8b.json" --tokens 256 --src-tp 8 --dst-tp 8 \
		--prefill-tokens-per-s 16000 --link-gbps 100Gbit --pool-pages 100
	assert_success
	assert_line --index 0 "Llama-3-8B: paged, 32 layers, 8 KV heads x 128 dims, bf16, nhd pages, TP 8 -> 8, 16 tokens per page"
	assert_line "pages per rank and request: 16 source pages of 4096 bytes, 16 destination pages of 4096 bytes (per layer half)"
	assert_line "  3 -> 3: head 3 (source slot 0, destination slot 0), 65536 bytes in 16 segments per layer half (K or V), lands: no"
	assert_line "  source ranks 0-7, each: 4194304 bytes in 1024 segments, 1024 writes posted"
	assert_line "segments: 8192 per request, each of 4096 bytes"
	assert_line --partial "of each source rank, packed or not: 32 per request on each of the 8 decode ranks"
	assert_line --partial "prefill: 16 ms, 0.5 ms per layer;"
	assert_line --partial "exposed transfer 0.01049 ms streamed layer by layer, 0.3355 ms sent after the last layer"
	assert_line "pool: 100 pages hold 6 such requests"
	# None of the old shapes is left: "0-0" ranges, a count repeated per
	# rank, "1 segments", seconds next to microseconds.
	refute_output --regexp 'heads ([0-9]+)-\1[^0-9]|32 32|: 1 [a-z]+s |[0-9] s,| us[ ,]|source [0-9]+ of'
	# The check can fail: the same regexp finds each in the old text.
	for old in "  0 -> 0: heads 0-0 (source" "packed or not; 32 32 32 per request" "in 1 segments per layer" \
		"prefill: 0.016 s, 500 us per layer" "pages per rank and request: source 16 of 4096 bytes"; do
		grep -qE 'heads ([0-9]+)-\1[^0-9]|32 32|: 1 [a-z]+s |[0-9] s,| us[ ,]|source [0-9]+ of|in 1 [a-z]+s ' <<<"$old" ||
			fail "the regexp misses '$old'"
	done
	# One of everything: singulars, a model named by its file, a range of heads.
	printf '{"layout": "paged", "layers": 1, "kv_heads": 4, "head_dim": 8, "page_tokens": 1}\n' >"$BATS_TEST_TMPDIR/tiny.json"
	run "$RDMACTL" kvxfer plan --model "$BATS_TEST_TMPDIR/tiny.json" --tokens 1 --dst-tp 2 --pool-pages 1 --layer-compute-us 3
	assert_success
	assert_line --index 0 "tiny: paged, 1 layer, 4 KV heads x 8 dims, bf16, nhd pages, TP 1 -> 2, 1 token per page"
	assert_line --partial "request of 1 token: "
	assert_line "pages per rank and request: 1 source page of 64 bytes, 1 destination page of 32 bytes (per layer half)"
	assert_line "  0 -> 1: heads 2-3 (source slot 2, destination slot 0), 32 bytes in 1 segment per layer half (K or V), lands: no"
	assert_line --partial "from each of 1 data QP of each source rank"
	assert_line --partial "prefill: 0.003 ms, 0.003 ms per layer;"
	assert_line "pool: 1 page holds 1 such request"
	run plan --model "$BATS_TEST_TMPDIR/tiny.json" --tokens 1
	assert_equal "$(jq -r .geometry.model <<<"$output")" tiny
}

@test "plan's text where routes land: the pack line is the direct path's, the land line what is posted" {
	local L=(--layers 4 --kv-heads 8 --head-dim 16 --src-page-tokens 4 --dst-page-tokens 8 --src-tp 4 --dst-tp 2
		--tokens 37 --qps 2)
	run "$RDMACTL" kvxfer plan "${L[@]}" --land auto
	assert_success
	assert_line "pack on the direct path (--pack auto, --max-sge 32): never 1184 writes of 64 bytes, always 1184 writes of 64 bytes; chosen 1184 writes of 64 bytes, 0 of 4 routes packed"
	assert_line "land (--land auto): 4 of 4 routes land (path landing); the senders post 32 writes of 2368 bytes"
	# What the text says is posted is what the JSON (and the senders) count.
	run plan "${L[@]}" --land auto
	assert_equal "$(jq -c '[.land.writes, ([.src_ranks[].writes] | add)] | unique' <<<"$output")" "[32]"
	run "$RDMACTL" kvxfer plan "${L[@]}" --land never
	assert_line "pack (--pack auto, --max-sge 32): never 1184 writes of 64 bytes, always 1184 writes of 64 bytes; chosen 1184 writes of 64 bytes, 0 of 4 routes packed"
	assert_line "land (--land never): 0 of 4 routes land (path direct); the senders post 1184 writes of 64 bytes"
}
