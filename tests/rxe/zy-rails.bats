#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Several rails: a server on rxe_b and rxe_d (one region, registered on
# each), a client on rxe_a and rxe_c, striping over the two veth pairs
# (tests/vm/run.sh --four-nics). The file runs last of the rxe tier but
# the schema check, and its failover test last in it: it downs vc, and
# kernel 6.1's rxe wedges a device whose link drops under an active QP.

load helpers

bats_require_minimum_version 1.5.0

setup() {
	need_four_nics
	IN=$BATS_TEST_TMPDIR/in
	OUT=$BATS_TEST_TMPDIR/out
	SLOWED=
}

teardown() {
	local d
	for d in ${SLOWED:-}; do tc qdisc del dev "$d" root 2>/dev/null || true; done
	common_teardown
}

# serve_rails SIZE [ARGS...]: region kv of SIZE on rxe_b and rxe_d, with
# register's ARGS; RAILS, the target.
serve_rails() {
	local size=$1
	shift
	PORT=$(next_port)
	start_server 1 --listen "$RDMACTL_VM_ADDR_B:$PORT,$RDMACTL_VM_ADDR_D:$PORT" --name kv --size "$size" "$@"
	RAILS="$RDMACTL_VM_ADDR_B,$RDMACTL_VM_ADDR_D:$PORT/kv"
}

# within_half BYTES TOTAL PERCENT: BYTES is within PERCENT% of TOTAL / 2.
within_half() {
	local half=$(($2 / 2))
	(($1 * 100 >= half * (100 - $3) && $1 * 100 <= half * (100 + $3)))
}

# bats test_tags=plain-only
@test "within_half tells an even split from an uneven one" {
	within_half 33554432 67108864 10
	within_half 31000000 67108864 10
	run within_half 25000000 67108864 10
	assert_failure
	run within_half 42000000 67108864 10
	assert_failure
}

@test "a region on two rails: the descriptor lists each with its own rkey; 4 MiB striped in and out" {
	serve_rails 4M
	run jq -r '[.rails[].device] | join(",")' <<<"$(descriptor kv)"
	assert_output "$RDMACTL_VM_DEV_B,$RDMACTL_VM_DEV_D"
	run jq -r '.rails | length == 2 and .[0].rkey == (input | .rkey) and .[1].address == $d' \
		--arg d "$RDMACTL_VM_ADDR_D" <<<"$(descriptor kv) $(descriptor kv)"
	assert_output true
	head -c 4M /dev/urandom >"$IN"
	run rdmactl -j -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" write "$RAILS" --file "$IN" --stripe 256K
	assert_success
	local doc=$output
	assert_equal "$(jq -r '[.rails[].device] | join(",")' <<<"$doc")" "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C"
	assert_equal "$(jq -r '[.rails[].bytes] | add' <<<"$doc")" 4194304
	# 256 KiB chunks of one 256 KiB RDMA WRITE each
	assert_equal "$(jq -r '[.rails[].writes] | add' <<<"$doc")" 16
	# both rails carried some: the server saw a client on each
	jq -e '.rails | all(.bytes > 0 and .errors == 0 and (.failed | not))' <<<"$doc"
	jq -s -e --arg c "$RDMACTL_VM_ADDR_C" \
		'any(.[]; .event == "connected" and (.peer | startswith($c + ":")))' "$SERVER_OUT"
	run rdmactl -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" read "$RAILS" --out "$OUT" --stripe 256K
	assert_success
	assert_line --regexp "^  rail 2 $RDMACTL_VM_DEV_C -> "
	cmp "$IN" "$OUT"
	# one rail reads what the two wrote
	run rdmactl -d "$RDMACTL_VM_DEV_C" read "$RDMACTL_VM_ADDR_D:$PORT/kv" \
		--bind "$RDMACTL_VM_ADDR_C" --out "$OUT.c"
	assert_success
	cmp "$IN" "$OUT.c"
}

# stripes LABEL TARGET DEVS: 600 KiB ($IN) written over the rails of DEVS
# to TARGET in 128 KiB stripes and read back: five chunks, the last 88 KiB,
# an odd count that the rails do not share evenly.
stripes() {
	run rdmactl -j -d "$3" write "$2" --file "$IN" --stripe 128K
	assert_success
	assert_equal "$(jq -r '[.rails[].bytes] | add' <<<"$output")" 614400
	assert_equal "$(jq -r '[.rails[].chunks] | add' <<<"$output")" 5
	jq -e '.rails | all(.errors == 0 and (.failed | not))' <<<"$output"
	run rdmactl -d "$3" read "$2" --size 600K --out "$OUT.$1" --stripe 128K
	assert_success
	cmp "$IN" "$OUT.$1"
}

# bats test_tags=plain-only
@test "600 KiB in 128 KiB stripes, a last chunk short and an odd count, over two rails and over three: in and out whole" {
	head -c 600K /dev/urandom >"$IN"
	PORT=$(next_port)
	# a third rail: the first pair the other way round (rxe_b to rxe_a)
	start_server 1 --listen "$RDMACTL_VM_ADDR_B:$PORT,$RDMACTL_VM_ADDR_D:$PORT,$RDMACTL_VM_ADDR_A:$PORT" \
		--name kv --size 1M
	stripes two "$RDMACTL_VM_ADDR_B,$RDMACTL_VM_ADDR_D:$PORT/kv" "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C"
	stripes three "$RDMACTL_VM_ADDR_B,$RDMACTL_VM_ADDR_D,$RDMACTL_VM_ADDR_A:$PORT/kv" \
		"$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C,$RDMACTL_VM_DEV_B"
}

@test "GPU memory (fake driver) on two rails: peer memory, then a bounce buffer, registered on both devices; 4 MiB striped in and out" {
	local reg protect fake=$BUILD_DIR/tests/unit/libfakecuda.so
	jq -e '.features.gpu_memory' <<<"$(rdmactl -j help)" >/dev/null ||
		skip "this rdmactl was built without CUDA"
	[ -f "$fake" ] || fail "no fake CUDA driver at $fake"
	head -c 4M /dev/urandom >"$IN"
	# the fake driver's device memory is host memory (tests/unit/fake_cuda.c);
	# closed to the CPU (PROTECT), peer memory cannot register it: the bounce
	# buffer, one for both rails
	for reg in peermem bounce; do
		protect=0
		[[ $reg == peermem ]] || protect=1
		RDMACTL_CUDA_LIB=$fake RDMACTL_FAKE_CUDA_PROTECT=$protect serve_rails 4M --mem cuda:0
		jq -e --arg r "$reg" '.mem == "cuda" and .registration == $r
			and (.rails | length == 2 and .[0].rkey != .[1].rkey)' <<<"$(descriptor kv)"
		run rdmactl -j -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" write "$RAILS" --file "$IN" --stripe 256K
		assert_success
		jq -e '.rails | length == 2 and all(.bytes > 0 and .errors == 0)' <<<"$output"
		run rdmactl -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" read "$RAILS" --out "$OUT" --stripe 256K
		assert_success
		cmp "$IN" "$OUT"
		rm -f "$OUT"
		stop_server
		assert_equal "$reg: $SERVER_RC" "$reg: 0"
	done
}

@test "a region on two rails published in etcd: its record lists both, and a client resolving through etcd stripes over them" {
	load '../lib/etcd'
	need_etcd
	start_etcd
	serve_rails 4M --publish "etcd://$ETCD_EP/rails"
	# the key is put after the descriptors are printed; the lease event follows it
	wait_events lease 1 "$SERVER_OUT"
	local rec
	rec=$(curl -s --noproxy '*' -m 5 -X POST "http://$ETCD_EP/v3/kv/range" \
		-d "{\"key\":\"$(printf %s rdmactl/rails/region/kv | base64 -w0)\"}" | jq -r '.kvs[0].value // empty | @base64d')
	run jq -r '[.rails[] | .host + ":" + .port] | join(",")' <<<"$rec"
	assert_output "$RDMACTL_VM_ADDR_B:$PORT,$RDMACTL_VM_ADDR_D:$PORT"
	head -c 4M /dev/urandom >"$IN"
	run rdmactl -j -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" write "etcd://$ETCD_EP/rails/kv" --file "$IN" --stripe 256K
	assert_success
	jq -e '(.rails | length) == 2 and (.rails | all(.bytes > 0 and .errors == 0))' <<<"$output"
	run rdmactl -j -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" read "etcd://$ETCD_EP/rails/kv" --out "$OUT" --stripe 256K
	assert_success
	jq -e '.rails | map(.peer) | (.[0] | startswith($b + ":")) and (.[1] | startswith($d + ":"))' \
		--arg b "$RDMACTL_VM_ADDR_B" --arg d "$RDMACTL_VM_ADDR_D" <<<"$output"
	cmp "$IN" "$OUT"
	# the check sees a wrong copy
	printf 'x' | dd of="$OUT" bs=1 seek=4000000 conv=notrunc status=none
	run cmp "$IN" "$OUT"
	assert_failure
	# three devices for a region on two rails do not pair up
	run rdmactl -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C,$RDMACTL_VM_DEV_A" read "etcd://$ETCD_EP/rails/kv" --out "$OUT"
	assert_failure 2
	assert_output --partial "the rails do not pair up: 2 server addresses, 3 devices (-d)"
}

@test "64 MiB written and read over two rails: cmp, each rail within 10% of half" {
	heavy_sibling "a region on two rails: the descriptor lists each with its own rkey; 4 MiB striped in and out"
	serve_rails 64M
	head -c 64M /dev/urandom >"$IN"
	# Both rails shaped to one rate, under what the guest's CPUs move on a
	# rail: equal rails even on a loaded host (unshaped, the rail whose rxe
	# work got less CPU once carried 24 MiB, its peer's stealing the rest,
	# as it should). Both ways: the write's data leaves va and vc, the
	# read's vb and vd.
	local d
	for d in va vb vc vd; do
		tc qdisc add dev "$d" root tbf rate 200mbit burst 64kb latency 400ms
	done
	SLOWED="va vb vc vd"
	run rdmactl -j -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" write "$RAILS" --file "$IN"
	assert_success
	local doc=$output a c
	assert_equal "$(jq -r .bytes <<<"$doc")" 67108864
	a=$(jq -r '.rails[0].bytes' <<<"$doc")
	c=$(jq -r '.rails[1].bytes' <<<"$doc")
	within_half "$a" 67108864 10 || fail "rail 1 carried $a bytes of 64 MiB"
	within_half "$c" 67108864 10 || fail "rail 2 carried $c bytes of 64 MiB"
	run rdmactl -j -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" read "$RAILS" --out "$OUT"
	assert_success
	doc=$output
	a=$(jq -r '.rails[0].bytes' <<<"$doc")
	c=$(jq -r '.rails[1].bytes' <<<"$doc")
	within_half "$a" 67108864 10 || fail "read: rail 1 carried $a bytes of 64 MiB"
	within_half "$c" 67108864 10 || fail "read: rail 2 carried $c bytes of 64 MiB"
	cmp "$IN" "$OUT"
	# cmp catches one byte changed
	printf 'x' | dd of="$OUT" bs=1 seek=40000000 conv=notrunc status=none
	run cmp "$IN" "$OUT"
	assert_failure
}

@test "--metrics per rail: a striped write and read, and the server on two rails, each rail's figures labelled" {
	load '../lib/metrics'
	require_promtool
	local m=$BATS_TEST_TMPDIR i sum
	serve_rails 4M --metrics "$m/srv.prom" --metrics-interval 1
	head -c 4M /dev/urandom >"$IN"
	run rdmactl -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" write "$RAILS" --file "$IN" --stripe 256K --metrics "$m/w.prom"
	assert_success
	run rdmactl -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" read "$RAILS" --out "$OUT" --stripe 256K --metrics "$m/r.prom"
	assert_success
	cmp "$IN" "$OUT"
	for i in w r; do
		metrics_check "$m/$i.prom"
		assert_equal "$(metrics_value "$m/$i.prom" rdmactl_transfer_rails)" 2
		assert_equal "$(metrics_value "$m/$i.prom" rdmactl_transfer_bytes_total)" 4194304
		# each rail carried some, under its own device, and the rails add up
		[[ $(metrics_value "$m/$i.prom" rdmactl_transfer_rail_bytes_total "rail=\"1\",device=\"$RDMACTL_VM_DEV_A\"") -gt 0 ]]
		[[ $(metrics_value "$m/$i.prom" rdmactl_transfer_rail_bytes_total "rail=\"2\",device=\"$RDMACTL_VM_DEV_C\"") -gt 0 ]]
		sum=$(awk '/^rdmactl_transfer_rail_bytes_total\{/ { s += $NF } END { print s }' "$m/$i.prom")
		assert_equal "$sum" 4194304
		assert_equal "$(metrics_value "$m/$i.prom" rdmactl_transfer_rail_errors_total 'rail="2"')" 0
		# no third rail
		assert_equal "$(metrics_value "$m/$i.prom" rdmactl_transfer_rail_bytes_total 'rail="3"')" ""
	done
	[[ $(metrics_value "$m/r.prom" rdmactl_transfer_rail_operations_total 'operation="read",rail="1"') -gt 0 ]]
	# the server's file: the writes announced through each rail add up to the 4 MiB
	for i in $(seq 1 50); do
		sum=$(awk '/^rdmactl_server_rail_written_bytes_total\{/ { s += $NF } END { print s + 0 }' "$m/srv.prom" 2>/dev/null)
		if [[ $sum == 4194304 ]]; then break; fi
		sleep 0.2
	done
	metrics_check "$m/srv.prom"
	assert_equal "$sum" 4194304
	[[ $(metrics_value "$m/srv.prom" rdmactl_server_rail_written_bytes_total "rail=\"1\",device=\"$RDMACTL_VM_DEV_B\"") -gt 0 ]]
	[[ $(metrics_value "$m/srv.prom" rdmactl_server_rail_written_bytes_total "rail=\"2\",device=\"$RDMACTL_VM_DEV_D\"") -gt 0 ]]
	[[ $(metrics_value "$m/srv.prom" rdmactl_server_rail_connections_total 'rail="2"') -ge 2 ]]
	assert_equal "$(metrics_value "$m/srv.prom" rdmactl_server_rail_errors_total 'rail="1"')" 0
}

# bats test_tags=plain-only
@test "--rails auto: the client's rails from the rail plan of the guest's tree, less all but two devices" {
	# a plan of rxe_a and rxe_c
	rail_trees
	serve_rails 4M
	head -c 4M /dev/urandom >"$IN"
	run --separate-stderr env RDMACTL_SYSFS="$TREE_AC" "$RDMACTL" -j write "$RAILS" --rails auto --file "$IN" --stripe 256K
	assert_success
	[[ $stderr == *"(this process's CPUs): $RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C (2 rails)"* ]] || fail "no plan of two rails: $stderr"
	assert_equal "$(jq -r '[.rails[].device] | join(",")' <<<"$output")" "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C"
	jq -e '.rails | all(.bytes > 0)' <<<"$output"
	run rdmactl -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" read "$RAILS" --out "$OUT"
	assert_success
	cmp "$IN" "$OUT"
}

@test "a rail slowed to a crawl carries little, and the report says so" {
	serve_rails 8M
	head -c 8M /dev/urandom >"$IN"
	# 4 Mb/s: a chunk takes the slowed rail half a second, far over the
	# 0.1 s that a finding needs (rdmactl-write(8)); the queue holds one
	tc qdisc add dev vc root tbf rate 4mbit burst 32kb latency 800ms
	SLOWED=vc
	run rdmactl -j -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" write "$RAILS" --file "$IN" --stripe 256K
	assert_success
	local doc=$output
	jq -e '.rails[1].share < 0.25 and .rails[0].share > 0.75' <<<"$doc" ||
		fail "the slowed rail carried $(jq -c '[.rails[].share]' <<<"$doc")"
	run jq -r '.findings[]' <<<"$doc"
	assert_output --regexp "^rail 2 \\($RDMACTL_VM_DEV_C\\) carried .* far below its peers"
	# the even rail of the first test has no finding
	tc qdisc del dev vc root
	SLOWED=
	run rdmactl -j -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" write "$RAILS" --file "$IN" --stripe 256K
	assert_success
	assert_equal "$(jq -r '.findings | length' <<<"$output")" 0
	run rdmactl -d "$RDMACTL_VM_DEV_A" read "$RDMACTL_VM_ADDR_B:$PORT/kv" --bind "$RDMACTL_VM_ADDR_A" --out "$OUT"
	assert_success
	cmp "$IN" "$OUT"
}

@test "a live move of a region on two rails: refused by name; a write through rail 2 is kept and an admin HASH through rail 2 answered" {
	# sanitizer tier: always (a move's steps against memory that another rail registers)
	local t=$BATS_TEST_TMPDIR adm dst mig lost=0
	adm=$t/admin.token
	(umask 077 && echo "adm-$RANDOM$RANDOM" >"$adm")
	serve_rails 1M --admin-token-file "$adm"
	local src_pid=$SERVER_PID src_out=$SERVER_OUT
	dst=$RDMACTL_VM_ADDR_A:$(next_port)
	start_server 1 --listen "$dst" --name kv --size 1M --admin-token-file "$adm"
	started "$SERVER_PID"
	SERVER_PID=$src_pid SERVER_OUT=$src_out
	head -c 1M /dev/urandom >"$IN"
	rdmactl write "$RDMACTL_VM_ADDR_B:$PORT/kv" --file "$IN" >/dev/null
	# a verified live move through rail 1
	run rdmactl -j migrate --admin-token-file "$adm" "$RDMACTL_VM_ADDR_B:$PORT/kv" "$dst/kv"
	mig="$status: $output"
	echo "migrate: $mig"
	# then a write through rail 2, read back through rail 1 (which follows a moved region)
	printf 'written through rail 2\n' >"$t/w"
	run rdmactl -d "$RDMACTL_VM_DEV_C" write "$RDMACTL_VM_ADDR_D:$PORT/kv" --bind "$RDMACTL_VM_ADDR_C" \
		--offset 8192 --file "$t/w"
	echo "write through rail 2: $status $output"
	run rdmactl -j read "$RDMACTL_VM_ADDR_B:$PORT/kv" --offset 8192 --size 23 --out "$t/back"
	echo "read through rail 1: $status $output"
	cmp "$t/w" "$t/back" || lost=1
	# and an admin HASH through rail 2
	run "$MIG_CTL" "$RDMACTL_VM_ADDR_D:$PORT/kv" "$(cat "$adm")" hash
	echo "hash through rail 2: $status $output"
	kill -0 "$SERVER_PID" || fail "the server died: $(tail -5 "$SERVER_OUT.err")"
	assert_success
	((lost == 0)) || fail "the write through rail 2 was lost"
	# the whole region, as written but for the rail 2 write, is still here
	rdmactl -d "$RDMACTL_VM_DEV_C" read "$RDMACTL_VM_ADDR_D:$PORT/kv" --bind "$RDMACTL_VM_ADDR_C" --out "$OUT" >/dev/null
	cmp -l "$IN" "$OUT" | awk '$1 <= 8192 || $1 > 8192 + 23 { bad = 1 } END { exit bad }'
	# the move was refused, by name, at its start
	[[ $mig == "1: "* ]] || fail "migrate did not fail: $mig"
	[[ $mig == *"region 'kv' is served on several rails"* ]] || fail "no refusal by name: $mig"
}

@test "every rail failed: the server killed mid-write is an error naming each rail" {
	serve_rails 24M
	head -c 24M /dev/urandom >"$IN"
	local base i
	# both rails slowed, so that the write is still on when the server dies
	tc qdisc add dev va root tbf rate 40mbit burst 64kb latency 400ms
	tc qdisc add dev vc root tbf rate 40mbit burst 64kb latency 400ms
	SLOWED="va vc"
	base=$(counter_of rxe_c sent_pkts)
	rdmactl -t 3000 -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" write "$RAILS" --file "$IN" \
		--stripe 256K >"$BATS_TEST_TMPDIR/w.out" 2>"$BATS_TEST_TMPDIR/w.err" 3>&- &
	local wpid=$! status=0
	started "$wpid"
	for ((i = 0; i < 200; i++)); do
		(($(counter_of rxe_c sent_pkts) > base + 200)) && break
		sleep 0.05
	done
	stop_server KILL
	wait "$wpid" || status=$?
	assert_equal "$status" 1
	run cat "$BATS_TEST_TMPDIR/w.err"
	assert_output --partial "every rail failed"
	assert_output --partial "rail 1 ($RDMACTL_VM_DEV_A)"
	assert_output --partial "rail 2 ($RDMACTL_VM_DEV_C)"
	assert_output --regexp "after [0-9]+ bytes\)$"
}

# a2a_two_rails NAME ARGS...: a 2-rank alltoall over etcd job NAME, rank 0
# on rxe_a and rxe_c, rank 1 on rxe_b and rxe_d, each rank with its own
# ("host") rail plan and ARGS, and rank R with its own global options
# A2A_PRE_R and alltoall options A2A_POST_R (arrays: R 0 or 1); the size
# A2A_SIZE when set, else --hidden 256 --tokens 64 --iters 3;
# A2A_STATUS[R], and a.NAME.R.out/.err.
a2a_two_rails() {
	local name=$1 r tree pids=() pre post size=(--hidden 256 --tokens 64 --iters 3)
	[[ -z ${A2A_SIZE+set} ]] || size=("${A2A_SIZE[@]}")
	shift
	A2A_STATUS=()
	for r in 0 1; do
		tree=$TREE_AC pre=("${A2A_PRE_0[@]}") post=("${A2A_POST_0[@]}")
		((r == 0)) || tree=$TREE_BD pre=("${A2A_PRE_1[@]}") post=("${A2A_POST_1[@]}")
		RDMACTL_SYSFS=$tree "$RDMACTL" -j -t 20000 "${pre[@]}" alltoall -r "$r" -w 2 \
			--local-rank 0 -R "etcd://$ETCD_EP/$name" "${size[@]}" "$@" "${post[@]}" \
			>"$BATS_TEST_TMPDIR/a.$name.$r.out" \
			2>"$BATS_TEST_TMPDIR/a.$name.$r.err" 3>&- &
		pids+=($!)
		started "$!"
	done
	for r in 0 1; do
		A2A_STATUS[r]=0
		wait "${pids[r]}" || A2A_STATUS[r]=$?
	done
}

@test "alltoall on two rails a rank (--rails auto --rails-per-rank all, and -d with --listen): a slice of every block on each rail, each rail carrying half, no wrong token; a corrupted token is caught" {
	load '../lib/etcd'
	need_etcd
	rail_trees
	start_etcd
	local port a0 c0 r doc
	port=$(next_port)
	a0=$(counter_of rxe_a sent_pkts)
	c0=$(counter_of rxe_c sent_pkts)
	A2A_PRE_0=() A2A_PRE_1=() A2A_POST_0=() A2A_POST_1=()
	a2a_two_rails both --rails auto --rails-per-rank all --listen "0.0.0.0:$port"
	for r in 0 1; do
		((A2A_STATUS[r] == 0)) || fail "rank $r: $(cat "$BATS_TEST_TMPDIR/a.both.$r.err")"
	done
	run cat "$BATS_TEST_TMPDIR/a.both.0.err"
	assert_output --partial "rank 0, local rank 0: rails 1,2 of 2, $RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C"
	assert_output --partial "rail 1 listening on $RDMACTL_VM_ADDR_A:$port ($RDMACTL_VM_DEV_A)"
	assert_output --partial "rail 2 listening on $RDMACTL_VM_ADDR_C:$port ($RDMACTL_VM_DEV_C)"
	doc=$(cat "$BATS_TEST_TMPDIR/a.both.0.out")
	jq -e --arg d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" \
		'.wrong == 0 and .checked_tokens > 0 and .device == $d and (.rails | length) == 2' \
		<<<"$doc" || fail "the document: $doc"
	jq -e --arg a "$RDMACTL_VM_DEV_A" --arg c "$RDMACTL_VM_DEV_C" \
		'.rails[0].device == $a and .rails[1].device == $c and .rails[0].bytes > 0 and
		 ([.rails[].share] | all(. > 0.45 and . < 0.55)) and ([.rails[].finding] | all(. == null))' \
		<<<"$doc" || fail "the rails: $(jq -c .rails <<<"$doc")"
	# both devices sent packets: each rail carried its slice itself
	(($(counter_of rxe_a sent_pkts) > a0 + 10)) || fail "rxe_a sent nothing"
	(($(counter_of rxe_c sent_pkts) > c0 + 10)) || fail "rxe_c sent nothing"
	# the same by -d and --listen, and a token of rail 1's slice corrupted:
	# rank 0 says how many arrived wrong, and both ranks fail
	port=$(next_port)
	A2A_PRE_0=(-d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C")
	A2A_PRE_1=(-d "$RDMACTL_VM_DEV_B,$RDMACTL_VM_DEV_D")
	A2A_POST_0=(--listen "$RDMACTL_VM_ADDR_A:$port,$RDMACTL_VM_ADDR_C:$port")
	A2A_POST_1=(--listen "$RDMACTL_VM_ADDR_B:$port,$RDMACTL_VM_ADDR_D:$port")
	RDMACTL_TEST_A2A_CORRUPT=dispatch:1:0 a2a_two_rails wrong
	assert_equal "${A2A_STATUS[0]}" 1
	assert_equal "${A2A_STATUS[1]}" 1
	doc=$(cat "$BATS_TEST_TMPDIR/a.wrong.0.out")
	jq -e '.wrong == 1 and .error.message == "1 tokens arrived wrong" and (.rails | length) == 2' \
		<<<"$doc" || fail "rank 0's document: $doc"
	run cat "$BATS_TEST_TMPDIR/a.wrong.1.out" "$BATS_TEST_TMPDIR/a.wrong.1.err"
	assert_output --partial "1 tokens arrived wrong"
	# ranks on unequal rails: refused on rail 1's group, before the others join
	port=$(next_port)
	A2A_PRE_0=() A2A_PRE_1=() A2A_POST_0=(--rails-per-rank all) A2A_POST_1=(--rails-per-rank 1)
	a2a_two_rails unequal --rails auto --listen "0.0.0.0:$port"
	assert_equal "${A2A_STATUS[0]}" 1
	assert_equal "${A2A_STATUS[1]}" 1
	run cat "$BATS_TEST_TMPDIR/a.unequal.0.out" "$BATS_TEST_TMPDIR/a.unequal.0.err"
	assert_output --partial "rank 1 runs on 1 rail and rank 0 on 2: every rank needs as many"
}

# bats test_tags=plain-only
@test "alltoall on two rails a rank, rail 2 slowed to a crawl: the report names it as far slower than rail 1" {
	load '../lib/etcd'
	need_etcd
	rail_trees
	start_etcd
	local doc
	# 8 Mb/s on rxe_c's link: rail 2's slice of an iteration (about 100 KB
	# each way at --hidden 1024) takes it a tenth of a second, rail 1 a few
	# ms; the slowest rail's time is well over the 0.1 s a finding needs
	tc qdisc add dev vc root tbf rate 8mbit burst 32kb latency 800ms
	SLOWED=vc
	A2A_PRE_0=() A2A_PRE_1=() A2A_POST_0=() A2A_POST_1=() A2A_SIZE=(--hidden 1024 --tokens 64 --iters 4)
	a2a_two_rails slow --rails auto --rails-per-rank all --listen "0.0.0.0:$(next_port)"
	assert_equal "${A2A_STATUS[0]}" 0
	assert_equal "${A2A_STATUS[1]}" 0
	doc=$(cat "$BATS_TEST_TMPDIR/a.slow.0.out")
	jq -e '.wrong == 0 and .rails[0].finding == null and .rails[1].seconds > 0.1' <<<"$doc" ||
		fail "the document: $doc"
	run jq -r '.rails[1].finding' <<<"$doc"
	assert_output --regexp "^rail 2 \\($RDMACTL_VM_DEV_C\\) ran at 0\\.[0-4][0-9]x the fastest rail's rate$"
}

# mc_two_rails NAME ARGS...: a 3-rank multicast chain over etcd job NAME,
# two rails a rank by --rails auto: the root (rank 0) on rxe_a and rxe_c,
# ranks 1 and 2 on rxe_b and rxe_d (the other "host"), each receiver's copy
# in out.NAME.R; rank 2 flips the byte at MC_FLIP (when set) of its own
# copy. MC_STATUS[R], and m.NAME.R.out/.err.
mc_two_rails() {
	local name=$1 r tree pids=() flip port
	shift
	MC_STATUS=()
	for r in 0 1 2; do
		tree=$TREE_BD flip=
		((r != 0)) || tree=$TREE_AC
		((r != 2)) || flip=${MC_FLIP:-}
		# in this shell, not $(...): a port a rank, the counter moved on
		next_port >"$BATS_TEST_TMPDIR/port"
		port=$(<"$BATS_TEST_TMPDIR/port")
		RDMACTL_SYSFS=$tree RDMACTL_TEST_CORRUPT_BYTE=$flip "$RDMACTL" -j -t 20000 multicast \
			-r "$r" -w 3 --local-rank 0 -R "etcd://$ETCD_EP/$name" --rails auto --rails-per-rank all \
			--listen "0.0.0.0:$port" --algo chain --chunk 256K \
			--out "$BATS_TEST_TMPDIR/out.$name.%r" "$@" \
			>"$BATS_TEST_TMPDIR/m.$name.$r.out" 2>"$BATS_TEST_TMPDIR/m.$name.$r.err" 3>&- &
		pids+=($!)
		started "$!"
	done
	for r in 0 1 2; do
		MC_STATUS[r]=0
		wait "${pids[r]}" || MC_STATUS[r]=$?
	done
}

@test "multicast on two rails a rank: a chain of three, each rail a slice of the blob, its digest the slice's; the copies whole; a flipped byte in rail 2's slice is named" {
	load '../lib/etcd'
	need_etcd
	rail_trees
	start_etcd
	local r doc h1 h2 a0 c0
	command -v xxhsum >/dev/null || fail "no xxhsum: tests/deps.sh installs xxhash"
	head -c 8M /dev/urandom >"$IN"
	h1=$(head -c 4M "$IN" | xxhsum -H1 | cut -d' ' -f1)
	h2=$(tail -c 4M "$IN" | xxhsum -H1 | cut -d' ' -f1)
	a0=$(counter_of rxe_a sent_pkts)
	c0=$(counter_of rxe_c sent_pkts)
	mc_two_rails whole --file "$IN"
	for r in 0 1 2; do
		((MC_STATUS[r] == 0)) || fail "rank $r: $(cat "$BATS_TEST_TMPDIR"/m.whole.*)"
	done
	cmp "$IN" "$BATS_TEST_TMPDIR/out.whole.1"
	cmp "$IN" "$BATS_TEST_TMPDIR/out.whole.2"
	doc=$(cat "$BATS_TEST_TMPDIR/m.whole.0.out")
	jq -e --arg d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" '.ok_count == 2 and .size_bytes == 8388608
		and .device == $d and .digest_value == null and all(.receivers[]; .ok and .bytes == 8388608)' \
		<<<"$doc" || fail "the document: $doc"
	jq -e --arg a "$RDMACTL_VM_DEV_A" --arg c "$RDMACTL_VM_DEV_C" --arg h1 "$h1" --arg h2 "$h2" '
		.rails[0].device == $a and .rails[1].device == $c
		and .rails[0].bytes == 4194304 and .rails[1].bytes == 4194304
		and .rails[0].digest_value == $h1 and .rails[1].digest_value == $h2
		and all(.rails[]; .ok_count == 2)' <<<"$doc" || fail "the rails: $(jq -c .rails <<<"$doc")"
	(($(counter_of rxe_a sent_pkts) > a0 + 100)) || fail "rxe_a sent nothing"
	(($(counter_of rxe_c sent_pkts) > c0 + 100)) || fail "rxe_c sent nothing"
	# rank 2 flips a byte of rail 2's slice: it and the root fail, naming it
	MC_FLIP=$((6 << 20)) mc_two_rails flip --file "$IN"
	assert_equal "${MC_STATUS[0]}" 1
	assert_equal "${MC_STATUS[1]}" 0
	assert_equal "${MC_STATUS[2]}" 1
	doc=$(cat "$BATS_TEST_TMPDIR/m.flip.0.out")
	jq -e '.ok_count == 1 and (.receivers[] | select(.rank == 2) | (.ok | not)
		and (.error | test("^rail 2: ")))
		and (.error.message | test("rank 2 did not get the whole blob"))
		and .rails[0].ok_count == 2 and .rails[1].ok_count == 1' <<<"$doc" ||
		fail "the root's document: $doc"
	[ "$(cmp -l "$IN" "$BATS_TEST_TMPDIR/out.flip.2" | wc -l)" = 1 ] || fail "rank 2's copy is not one byte off"
	cmp "$IN" "$BATS_TEST_TMPDIR/out.flip.1"
}

# Last: it downs vc under an active QP (see the top of the file).
# bats test_tags=plain-only
@test "alltoall --rails auto, two hosts' plans: each rank on rail (local rank mod 2), publishing its rail's address in etcd; the rails meet rail to rail, no wrong byte" {
	load '../lib/etcd'
	need_etcd
	rail_trees
	start_etcd
	local lr r tree dev want out dev0
	# local rank 0 of each "host" on its first rail (rxe_a, rxe_b), local
	# rank 1 on its second (rxe_c, rxe_d): no --listen address, no peers
	# file; each rank's rail gives the address it listens on and publishes
	for lr in 0 1; do
		local pids=()
		for r in 0 1; do
			tree=$TREE_AC
			((r == 0)) || tree=$TREE_BD
			RDMACTL_SYSFS=$tree "$RDMACTL" -j -t 20000 alltoall -r "$r" -w 2 --local-rank "$lr" \
				-R "etcd://$ETCD_EP/rails$lr" --rails auto --listen "0.0.0.0:$(next_port)" \
				--hidden 256 --tokens 32 --iters 2 >"$BATS_TEST_TMPDIR/a.$lr.$r.out" \
				2>"$BATS_TEST_TMPDIR/a.$lr.$r.err" 3>&- &
			pids+=($!)
			started "$!"
		done
		for r in 0 1; do
			wait "${pids[r]}" || fail "local rank $lr, rank $r: $(cat "$BATS_TEST_TMPDIR/a.$lr.$r.err")"
		done
	done
	for lr in 0 1; do
		for r in 0 1; do
			case $r$lr in
			00) dev=$RDMACTL_VM_DEV_A want=$RDMACTL_VM_ADDR_A ;;
			01) dev=$RDMACTL_VM_DEV_C want=$RDMACTL_VM_ADDR_C ;;
			10) dev=$RDMACTL_VM_DEV_B want=$RDMACTL_VM_ADDR_B ;;
			11) dev=$RDMACTL_VM_DEV_D want=$RDMACTL_VM_ADDR_D ;;
			esac
			out=$(cat "$BATS_TEST_TMPDIR/a.$lr.$r.err")
			[[ $out == *"rank $r, local rank $lr: rail $((lr + 1)) of 2, $dev"* ]] ||
				fail "rank $r, local rank $lr: not on $dev: $out"
			[[ $out == *"listening on $want:"*" ($dev)"* ]] ||
				fail "rank $r, local rank $lr: not listening on $want: $out"
			((r)) || dev0=$dev
		done
		jq -e --arg d "$dev0" '.wrong == 0 and .ranks == 2 and .rendezvous == "etcd" and .device == $d' \
			"$BATS_TEST_TMPDIR/a.$lr.0.out"
	done
}

@test "failover: rail 2's link goes down mid-write; the write completes over rail 1, the bytes verified" {
	local base
	serve_rails 32M
	head -c 32M /dev/urandom >"$IN"
	# Four chunks of 8 MiB: rail 1 takes chunks 0 and 2, rail 2 chunk 1,
	# and rail 1 then helps with chunk 3. Rail 2 is slowed to 20 Mbit/s,
	# so its chunk 1 takes 3.4 s of wall time whatever the CPUs do (no
	# other rail can take a chunk in flight): the write cannot end before
	# the link goes down, however long this loop takes under load.
	tc qdisc add dev vc root tbf rate 20mbit burst 64kb latency 400ms
	SLOWED=vc
	base=$(counter_of rxe_c sent_pkts)
	rdmactl -j -t 4000 -d "$RDMACTL_VM_DEV_A,$RDMACTL_VM_DEV_C" write "$RAILS" --file "$IN" \
		--stripe 8M >"$BATS_TEST_TMPDIR/w.json" 2>"$BATS_TEST_TMPDIR/w.err" 3>&- &
	local wpid=$! i
	started "$wpid"
	# once rail 2 is into its chunk
	for ((i = 0; i < 200; i++)); do
		(($(counter_of rxe_c sent_pkts) > base + 40)) && break
		sleep 0.05
	done
	ip link set vc down
	wait "$wpid" || fail "the write failed: $(cat "$BATS_TEST_TMPDIR/w.err")"
	ip link set vc up || true
	local doc
	doc=$(cat "$BATS_TEST_TMPDIR/w.json")
	# shown only if an assertion below fails
	echo "$doc"
	assert_equal "$(jq -r .bytes <<<"$doc")" 33554432
	assert_equal "$(jq -r .failover.rail <<<"$doc")" 2
	assert_equal "$(jq -r .failover.device <<<"$doc")" "$RDMACTL_VM_DEV_C"
	jq -e '.failover.bytes_after > 0 and .failover.at_s > 0 and .rails[1].failed
		and .rails[1].errors >= 1 and (.rails[0].failed | not)' <<<"$doc"
	run rdmactl -d "$RDMACTL_VM_DEV_A" read "$RDMACTL_VM_ADDR_B:$PORT/kv" --bind "$RDMACTL_VM_ADDR_A" --out "$OUT"
	assert_success
	cmp "$IN" "$OUT"
}
