#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# The example scripts that move data, run in the SoftRoCE guest, their JSON
# summaries checked with jq:
#   tests/vm/run.sh --two-nics -- bats tests/rxe/examples.bats
# kv-migrate.sh crosses between rxe_a and rxe_b when the guest has two
# devices (--two-nics), and runs once more on one address.

bats_require_minimum_version 1.5.0
load helpers
load '../lib/etcd'
load '../lib/metrics'

EX=$REPO_ROOT/examples

setup() {
	need_guest
	PORT=$(next_port)
}

# What a test put on the veth pair (SLOWED: a qdisc on va; EXTRA: addresses)
# and the README's node_exporter files (NODE_EXPORTER_DIR).
teardown() {
	[ -z "${SLOWED:-}" ] || tc qdisc del dev va root 2>/dev/null || true
	[ -z "${EXTRA:-}" ] || ip addr del 198.18.1.3/24 dev va 2>/dev/null || true
	[ -z "${EXTRA:-}" ] || ip addr del 198.18.1.4/24 dev vb 2>/dev/null || true
	[ -z "${NODE_EXPORTER_DIR:-}" ] || rm -f "$NODE_EXPORTER_DIR/rdma.prom" "$NODE_EXPORTER_DIR/rdmactl-register.prom"
	common_teardown
}

# example NAME ARGS...: run examples/NAME.sh, bounded; its JSON summary in
# $output, its progress in $stderr (shown when the test fails).
example() {
	local name=$1
	shift
	run --separate-stderr timeout --kill-after=10 300 "$EX/$name.sh" "$@"
	printf '%s\n' "$stderr"
}

@test "kv-migrate: blocks move to another device (with --two-nics), verified block by block" {
	heavy_sibling "kv-migrate: on one address, two ports, another layout"
	if [[ -n "${RDMACTL_VM_ADDR_A:-}" ]]; then
		mode=two-devices src_dev=$RDMACTL_VM_DEV_A dst_dev=$RDMACTL_VM_DEV_B
	else
		mode=one-device src_dev=${RDMACTL_VM_DEV:-rxe0} dst_dev=${RDMACTL_VM_DEV:-rxe0}
	fi
	example kv-migrate --port "$PORT" --keep
	assert_success
	# The destination's final dump, at each migrated block: source block i
	# holds random:(1000+i) at offset i*64K, whose sha256 is pinned here
	# (worked out once from the pattern), not taken from the script.
	local work got pair
	work=$(jq -r .work <<<"$output")
	[[ -f "$work/dst.after" ]] || fail "no destination dump in $work"
	declare -A want=([1]=bf931b4629f66c73984778835c93107e8370a077f5c533e974655fba39d472b5
		[2]=2dbf26877f2c5675618dc407f5cb2ae13eb9964e84675c8c269eccf8dca8b2a6
		[5]=0ee57a97b33d56457777e3012d750ac79f47e2ae7370d294f3ec24fc32d9a82d
		[6]=712a076494da83febcfa8cb3beaef4882481fc5528b6979aeb00da8a9e1191d8)
	for pair in 1:2 2:4 5:5 6:6; do
		got=$(tail -c +$((4096 + ${pair#*:} * 65536 + 1)) "$work/dst.after" | head -c 65536 | sha256sum)
		assert_equal "block ${pair%:*} at ${pair#*:}: ${got%% *}" "block ${pair%:*} at ${pair#*:}: ${want[${pair%:*}]}"
	done
	rm -rf -- "$work"
	jq -e --arg mode "$mode" --arg s "$src_dev" --arg d "$dst_dev" '
		.ok and .exit_status == 0 and .mode == $mode
		and .source.device == $s and .destination.device == $d
		and .source.blocks == 8 and .source.block_size == 65536
		and ([.blocks[] | [.src_block, .dst_block]] == [[1, 2], [2, 4], [5, 5], [6, 6]])
		and (.blocks | all(.match and .bytes == 65536 and .src_sha256 == .dst_sha256))
		and (.blocks | all(.dst_offset == 4096 + .dst_block * 65536 and .src_offset == .src_block * 65536))
		and ([.blocks[].src_sha256] | unique | length) == 4
		and .destination.used_after == [0, 1, 2, 3, 4, 5, 6]
		and .destination.free_after == [7, 8, 9, 10, 11]
		and .total.blocks == 4 and .total.bytes == 262144 and .total.wall_seconds > 0
		and .checks.others_unchanged and .checks.table_committed
		and ([.checks.servers[] | .exit_status == 0 and .stopped_event] | all)' <<<"$output"
	if [[ $mode == two-devices ]]; then
		# Each transfer crossed the veth pair: reads from rxe_b, writes from rxe_a.
		jq -e --arg a "$RDMACTL_VM_DEV_A" --arg b "$RDMACTL_VM_DEV_B" \
			'.blocks | all(.read_device == $b and .write_device == $a)' <<<"$output"
	fi
}

# bats test_tags=plain-only
@test "kv-migrate: on one address, two ports, another layout" {
	example kv-migrate --src "$ADDR:$PORT" --dst "$ADDR:$((PORT + 1))" \
		--blocks 3,0 --src-blocks 4 --dst-blocks 4 --dst-used 1 \
		--block-size 16K --seed 7
	assert_success
	jq -e --arg dev "${RDMACTL_VM_DEV:-rxe0}" '
		.ok and .mode == "one-device" and .source.device == $dev and .destination.device == $dev
		and ([.blocks[] | [.src_block, .dst_block]] == [[3, 0], [0, 2]])
		and (.blocks | all(.match and .bytes == 16384))
		and .destination.used_after == [0, 1, 2] and .destination.free_after == [3]
		and .total.bytes == 32768' <<<"$output"
}

@test "kv-migrate: a destination that cannot start fails cleanly, the source stopped" {
	# Something else holds the destination's port.
	start_server 1 --listen "$ADDR:$((PORT + 1))" --name other --size 4K
	example kv-migrate --src "$ADDR:$PORT" --dst "$ADDR:$((PORT + 1))"
	assert_failure 1
	jq -e '(.ok | not) and .exit_status == 1
		and (.error | startswith("the destination server did not start"))' <<<"$output"
	# The source server it had started is gone; the foreign one still serves.
	run pgrep -f -- "register --listen $ADDR:$PORT "
	assert_failure
	kill -0 "$SERVER_PID"
}

# bats test_tags=plain-only
@test "orchestrate: a server's life cycle, every write checked, a clean stop" {
	example orchestrate --listen "$ADDR:$PORT"
	assert_success
	jq -e --arg dev "${RDMACTL_VM_DEV:-rxe0}" --arg listen "$ADDR:$PORT" '
		.ok and .exit_status == 0
		and .server.listen == $listen and .server.device == $dev and .server.token
		and ([.server.regions[].name] == ["data", "ctr", "scratch"])
		and .server.exit_status == 0 and .server.stopped_event
		and ([.writes[].name] == ["blob", "seq", "random", "manifest"])
		and (.writes | all(.verified and .sha256 == .expected_sha256))
		and ([.writes[].generation] == [1, 2, 3, 4])
		and .generation.final == 4 and .generation.in_order
		and .writes[3].imm == 4 and .notify.imm == 4 and .notify.received
		and .events.imm == 1 and .events.rejected == 0
		and .events.connected == .events.disconnected' <<<"$output"
}

@test "orchestrate: clients on another device than the server" {
	heavy_sibling "orchestrate: a server's life cycle"
	need_two_nics
	example orchestrate --listen "$RDMACTL_VM_ADDR_B:$PORT" --bind "$RDMACTL_VM_ADDR_A"
	assert_success
	jq -e --arg b "$RDMACTL_VM_DEV_B" --arg a "$RDMACTL_VM_DEV_A" \
		'.ok and .server.device == $b and (.writes | all(.device == $a))' <<<"$output"
}

@test "health-check: every live port passes --verify" {
	example health-check --verify --verify-size 1M
	assert_success
	jq -e '.healthy and .verify and .ports_not_ok == [] and .summary.ports_active >= 1
		and (.ports | all(.state == "ACTIVE" and .verify.ok))' <<<"$output"
	# rxe0, and rxe_a and rxe_b (--two-nics), and rxe_c and rxe_d (--four-nics)
	local devs=1
	[[ -z "${RDMACTL_VM_ADDR_A:-}" ]] || devs=$((devs + 2))
	[[ -z "${RDMACTL_VM_ADDR_C:-}" ]] || devs=$((devs + 2))
	jq -e --argjson n "$devs" '.summary.devices == $n' <<<"$output"
	example health-check -d "${RDMACTL_VM_DEV:-rxe0}" --verify --verify-size 1M
	assert_success
	jq -e --arg dev "${RDMACTL_VM_DEV:-rxe0}" '[.ports[] | select(.verify != null) | .device] == [$dev]' <<<"$output"
}

# bats test_tags=plain-only
@test "roundtrip: the README's main job, on a small region" {
	RDMACTL_DEMO_SIZE=1M RDMACTL_DEMO_PORT=$PORT run --separate-stderr timeout 120 "$EX/roundtrip.sh" "$ADDR"
	assert_success
	jq -e '.verified and .write.bytes == 1048576 and .read.bytes == 1048576' <<<"$output"
}

# bats test_tags=plain-only
@test "moe-dispatch: a skewed dispatch launched by mpirun, its report read as JSON" {
	command -v mpirun >/dev/null || skip "needs Open MPI's mpirun (openmpi-bin)"
	example moe-dispatch --ranks 4 --addr "$ADDR" --skew zipf:1.5 --hidden 256 --tokens 32 \
		--iters 3
	assert_success
	jq -e '.ok == true and .ranks == 4 and .rank_source == "openmpi" and .wrong == 0
		and .imbalance > 1.5 and (.verdict | startswith("skew-bound"))' <<<"$output"
	# figures as a reader takes them in: 3 significant digits, not 0.022193036164892006
	local n3='(0\.0*[1-9][0-9]{0,2}|[1-9][0-9]{0,2}(\.[0-9]{1,2}|0*))'
	grep -Eq "^moe-dispatch: busbw $n3 GB/s, p99 $n3 us, imbalance $n3," <<<"$stderr" ||
		fail "the figures are not rounded: $stderr"
	example moe-dispatch --ranks 2 --addr "$ADDR" --skew uniform --algo ring --hidden 256 \
		--tokens 32 --iters 3
	assert_success
	jq -e '.ok == true and .algo == "ring" and (.verdict | startswith("balanced"))' <<<"$output"
}

@test "sweep-mpirun: 3 ranks launched by mpirun, every pair measured, the verdict read as JSON" {
	command -v mpirun >/dev/null || skip "needs Open MPI's mpirun (openmpi-bin)"
	# the guest's rxe bandwidth varies tenfold (tests/rxe/sweep.bats): judge loosely
	example sweep-mpirun --ranks 3 --addr "$ADDR" --duration 0.2 --svg "$BATS_TEST_TMPDIR/s.svg" \
		-- --slow-ratio 0 --lat-ratio 20 --lat-iters 30
	assert_success
	jq -e '.ok == true and .ranks == 3 and .rounds == 3 and .rank_source == "openmpi"
		and .median_gbit_per_s > 0 and .outliers == [] and .bad_nodes == []' <<<"$output"
	grep -q "<svg" "$BATS_TEST_TMPDIR/s.svg"
}

# bats test_tags=plain-only
@test "sweep-mpirun: 4 ranks on one healthy device, as the README runs it, judged as shipped: healthy, exit 0" {
	command -v mpirun >/dev/null || skip "needs Open MPI's mpirun (openmpi-bin)"
	# no loose judging: the defaults (issue 48: "NOT healthy ... outliers"
	# here, on a device with nothing wrong, in 7 sweeps of 7)
	example sweep-mpirun --ranks 4
	echo "$output"
	assert_success
	jq -e '.ok == true and .ranks == 4 and .outliers == [] and .bad_nodes == []
		and .failed_pairs == [] and .median_gbit_per_s > 0' <<<"$output"
	[[ $stderr == *"sweep-mpirun: healthy, 12 directions measured"* ]] || fail "the verdict line: $stderr"
}

# bats test_tags=plain-only
@test "sweep-mpirun: a link slowed for real is named, the example says NOT healthy" {
	command -v mpirun >/dev/null || skip "needs Open MPI's mpirun (openmpi-bin)"
	need_two_nics
	local xa=198.18.1.3 xb=198.18.1.4 i
	EXTRA=1
	ip addr add "$xa/24" dev va
	ip addr add "$xb/24" dev vb
	for i in $(seq 50); do
		grep -qs "0000:0000:0000:0000:0000:ffff:c612:0103" /sys/class/infiniband/"$RDMACTL_VM_DEV_A"/ports/1/gids/* &&
			grep -qs "0000:0000:0000:0000:0000:ffff:c612:0104" /sys/class/infiniband/"$RDMACTL_VM_DEV_B"/ports/1/gids/* &&
			break
		sleep 0.1
	done
	# rank 1 (.3) to rank 3 (.4): 20 ms more each way than every other pair
	SLOWED=1
	tc qdisc add dev va root handle 1: prio
	tc qdisc add dev va parent 1:3 handle 30: netem delay 20ms limit 5000
	tc filter add dev va parent 1: protocol ip u32 match ip src "$xa/32" match ip dst "$xb/32" flowid 1:3
	example sweep-mpirun --ranks 4 --addr "$RDMACTL_VM_ADDR_A,$xa,$RDMACTL_VM_ADDR_B,$xb"
	assert_failure 1
	jq -e '.ok == false and (.outliers | any(test("^(1 -> 3|3 -> 1): .*latency")))' <<<"$output" ||
		fail "the slowed pair 1 - 3 is not named: $output"
	[[ $stderr == *"sweep-mpirun: NOT healthy"* ]] || fail "the verdict line: $stderr"
}

# bats test_tags=plain-only
@test "push-weights: a made-up model to 3 replicas, every copy equal, read as JSON" {
	need_guest
	example push-weights --replicas 3 --layers 4 --layer-size 128K --chunk 32K --addr "$ADDR"
	assert_success
	jq -e '.ok == true and .replicas == 3 and .bytes == 524288 and .algo == "tree"
		and (.per_replica | length) == 3 and all(.per_replica[]; .ok and .first_layer_ms <= .all_ms)
		and .first_layer_ready_ms <= .all_ready_ms and .ideal_seconds > 0' <<<"$output"
}

# The README's example session: the lines of its first code block after
# "## An example session".
readme_session() {
	awk '/^## An example session/ { on = 1; next }
	     on && /^```/ { if (++n == 2) exit; next }
	     on && n == 1' "$REPO_ROOT/README.md"
}

# shows WANT OUTPUT: OUTPUT holds a line of WANT's shape: as many words, each
# the same, but that a word holding a digit (a number, an address, a key, a
# device name) may be any word. For a JSON line: a document with the same
# keys, and the same words and booleans. (No forks: the guest is slow at them.)
shows() {
	local line i ok
	local -a ww gw
	if [[ $1 == '{'* ]]; then
		local keep='[to_entries[] | select((.value | type) == "boolean"
			or ((.value | type) == "string" and (.value | test("[0-9]") | not)))] | from_entries'
		jq -e --argjson w "$1" "select((keys == (\$w | keys)) and ($keep) == (\$w | $keep))" \
			<<<"$2" >/dev/null 2>&1
		return
	fi
	read -ra ww <<<"$1"
	while IFS= read -r line; do
		read -ra gw <<<"$line"
		((${#gw[@]} == ${#ww[@]})) || continue
		ok=1
		for i in "${!ww[@]}"; do
			[[ ${ww[i]} == *[0-9]* || ${ww[i]} == "${gw[i]}" ]] || { ok=0; break; }
		done
		((ok)) && return 0
	done <<<"$2"
	return 1
}

@test "the README's example session runs as shown, against a real register server, printing what the README shows" {
	heavy_sibling "roundtrip: the README's main job, on a small region"
	local t=$BATS_TEST_TMPDIR line cmd out want i n
	local -a lines cmds=() wants=() w
	cd "$t"
	head -c 8M /dev/urandom >layer0.bin
	mapfile -t lines < <(readme_session)
	for line in "${lines[@]}"; do
		if [[ $line == '$ '* ]]; then
			cmds+=("${line#'$ '}")
			wants+=("")
		elif [[ -n $line ]]; then
			((${#cmds[@]})) || fail "the session shows output before any command: $line"
			wants[-1]+=$line$'\n'
		fi
	done
	((${#cmds[@]} >= 7)) || fail "the README's session has ${#cmds[@]} commands: its block was not found"
	for i in "${!cmds[@]}"; do
		# The README's address and port, here: this guest's, a fresh port.
		cmd=${cmds[i]//198.18.0.1:7471/$ADDR:$PORT}
		read -ra w <<<"$cmd"
		[[ ${w[0]} == rdmactl ]] || fail "not an rdmactl command: ${cmds[i]}"
		w[0]=$RDMACTL
		if [[ ${w[-1]} == '&' ]]; then
			unset 'w[-1]'
			"${w[@]}" >"$t/bg.out" 2>"$t/bg.err" 3>&- &
			SERVER_PID=$!
			for ((n = 0; n < 300; n++)); do
				grep -q '^region ' "$t/bg.out" && grep -q 'serving' "$t/bg.err" && break
				kill -0 "$SERVER_PID" || fail "'${cmds[i]}' exited: $(cat "$t/bg.err")"
				sleep 0.1
			done
			out=$(cat "$t/bg.out" "$t/bg.err")
		else
			run timeout 120 "${w[@]}"
			((status == 0)) || fail "'${cmds[i]}' exited $status: $output"
			out=$output
		fi
		while IFS= read -r want; do
			[[ -n $want ]] || continue
			shows "$want" "$out" || fail "'${cmds[i]}' printed
$out
where the README shows
$want"
		done <<<"${wants[i]}"
	done
	# What was written came back.
	cmp layer0.bin back.bin
	# The checks can fail: another word, a missing JSON key.
	out=$(printf '%s\n' 'wrote to 198.18.0.1:7500/kv at offset 1048576 via rxe0: 8388608 bytes in 0.2 s, 0.04 GB/s (0.3 Gb/s)')
	shows 'wrote to 198.18.0.1:7471/kv at offset 1048576 via rxe0: 8388608 bytes in 0.121 s, 0.069 GB/s (0.555 Gb/s)' "$out"
	run shows 'written to 198.18.0.1:7471/kv at offset 1048576 via rxe0: 8388608 bytes in 0.121 s, 0.069 GB/s (0.555 Gb/s)' "$out"
	assert_failure
	run shows '{"schema_version":2,"operation":"cas","swapped":true,"new":7}' '{"schema_version":2,"operation":"cas","swapped":true}'
	assert_failure
	run shows '{"schema_version":2,"operation":"cas","swapped":true}' '{"schema_version":2,"operation":"faa","swapped":true}'
	assert_failure
}

# readme_commands TEXT: the commands ("$ " lines) of the README's first code
# block after the line that holds TEXT.
readme_commands() {
	awk -v t="$1" 'index($0, t) && !on { on = 1; next }
	     on && /^```/ { if (++n == 2) exit; next }
	     on && n == 1 && /^\$ / { print substr($0, 3) }' "$REPO_ROOT/README.md"
}

# readme_run TEXT...: run the commands of each block as the README's reader
# would, in this test's folder, one shell, rdmactl on PATH: what ends in &
# in the background (a register server: waited for until it serves, then
# stopped with SIGTERM at the end, which it must survive to exit 0), every
# command and every background one must exit 0. $output: what they said.
readme_run() {
	local t script=$BATS_TEST_TMPDIR/readme.sh line n=0
	printf 'set -e\ncd %q\npids=() servers=()\n' "$BATS_TEST_TMPDIR" >"$script"
	for t in "$@"; do
		local got=0
		while IFS= read -r line; do
			got=1
			n=$((n + 1))
			printf 'printf "%%s\\n" %q >&2\n' "\$ $line" >>"$script"
			if [[ $line == *"rdmactl "*"register "*"&" || $line == *"kvxfer serve "*"&" ]]; then
				# a server: the next command once it listens, as the reader
				# who reads its first lines before typing on
				printf '%s\n' "${line%&} >srv.$n.out 2>&1 &" \
					"for i in \$(seq 300); do grep -q 'serving\\|listening' srv.$n.out && break; kill -0 \$! || { cat srv.$n.out >&2; exit 1; }; sleep 0.1; done" >>"$script"
				if [[ $line == *"register "* ]]; then
					printf '%s\n' 'servers+=($!)' >>"$script"
				else
					printf '%s\n' 'pids+=($!)' >>"$script"
				fi
			elif [[ $line == *"& done" ]]; then
				printf '%s\n' "${line%done}pids+=(\$!); done" >>"$script"
			elif [[ $line == *"&" ]]; then
				printf '%s\n' "$line" 'pids+=($!)' >>"$script"
			else
				printf '%s\n' "$line" >>"$script"
			fi
		done < <(readme_commands "$t")
		((got)) || fail "the README has no commands after '$t'"
	done
	cat >>"$script" <<'END'
rc=0
for p in "${pids[@]}"; do wait "$p" || { echo "a command in the background exited $?" >&2; rc=1; }; done
for p in "${servers[@]}"; do kill -TERM "$p"; wait "$p" || { echo "a server exited $? on SIGTERM" >&2; rc=1; }; done
cat srv.*.out 2>/dev/null
exit $rc
END
	ln -sfn "$REPO_ROOT/examples" "$BATS_TEST_TMPDIR/examples"
	PATH=$(dirname -- "$RDMACTL"):$PATH run timeout --kill-after=10 400 bash "$script"
}

# bats test_tags=plain-only
@test "the README's examples of kvxfer, alltoall, multicast and tokens run as written, with a 2 GiB guest's memory" {
	local r docs
	[[ ${ADDR:-} == 198.18.0.1 ]] || skip "the README's address is 198.18.0.1; this guest's is ${ADDR:-none}"
	readme_run "A KV-cache transfer from two prefill ranks"
	((status == 0)) || fail "kvxfer: $output"
	[[ $output == *'"verified"'* || $output == *verified* ]] || fail "kvxfer verified nothing: $output"
	readme_run "An MoE dispatch and combine between four ranks" "What a job of 4096 ranks" \
		"Weights pushed from rank 0"
	((status == 0)) || fail "alltoall, multicast: $output"
	docs=$(grep '^{' <<<"$output")
	jq -es '[.[] | select(.wrong == 0 and .ranks == 4)] | length == 1' <<<"$docs" >/dev/null ||
		fail "no alltoall report of 4 ranks with every token right: $output"
	jq -es '[.[] | select(.ok_count == 3 and (.receivers | all(.blocks_usable_ms | length == 3)))]
		| length == 1' <<<"$docs" >/dev/null || fail "no multicast report with the blocks usable: $output"
	for r in 1 2 3; do
		cmp "$BATS_TEST_TMPDIR/model.bin" "/tmp/w.$r" || fail "replica $r differs"
	done
	rm -f /tmp/w.1 /tmp/w.2 /tmp/w.3
	readme_run "Every command that takes a token"
	((status == 0)) || fail "tokens: $output"
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/out.bin")" = 4096 ]
}

# bats test_tags=plain-only
@test "the README's --metrics block runs as written: a register server, then a benchmark against it, both files pass promtool" {
	local d=/var/lib/node_exporter
	[[ ${ADDR:-} == 198.18.0.1 ]] || skip "the README's address is 198.18.0.1; this guest's is ${ADDR:-none}"
	# the node_exporter's textfile folder, which the README's reader has
	mkdir -p "$d"
	rm -f "$d/rdma.prom" "$d/rdmactl-register.prom"
	NODE_EXPORTER_DIR=$d
	readme_run "Figures for monitoring"
	((status == 0)) || fail "the --metrics block: $output"
	metrics_check "$d/rdma.prom"
	metrics_check "$d/rdmactl-register.prom"
	grep -q '^rdmactl_bench_bytes_total{command="write",' "$d/rdma.prom" ||
		fail "no write benchmark in rdma.prom: $(cat "$d/rdma.prom")"
	# the server's last figures, written as it stopped: its region, the benchmark's connection
	grep -q '^rdmactl_server_regions{command="register",listen="198.18.0.1:7471",.*} 1$' \
		"$d/rdmactl-register.prom" || fail "no region in the server's figures: $(cat "$d/rdmactl-register.prom")"
	grep -q '^rdmactl_server_connections_total{command="register",.*} [1-9]' "$d/rdmactl-register.prom" ||
		fail "the benchmark's connection is not counted: $(cat "$d/rdmactl-register.prom")"
}

# readme_block TEXT: the lines of the README's first code block after the
# line that holds TEXT, continuation lines joined.
readme_block() {
	awk -v t="$1" 'index($0, t) && !on { on = 1; next }
	     on && /^```/ { if (++n == 2) exit; next }
	     on && n == 1 { print }' "$REPO_ROOT/README.md"
}

# bats test_tags=plain-only
@test "the README's etcd-over-TLS block runs as written against etcd with TLS, client certificates and a user: the region read through etcd" {
	local t=$BATS_TEST_TMPDIR block
	need_etcd
	command -v openssl >/dev/null || skip "needs openssl (tests/deps.sh)"
	ETCD_CERTS=$t/certs
	etcd_certs "$ETCD_CERTS"
	start_etcd_tls_auth s3cret
	# the README's user rdmactl, allowed rdmactl's keys
	etcdctl_tls --user root:s3cret user add rdmactl --new-user-password=etcdpw >/dev/null
	etcdctl_tls --user root:s3cret role add rdmactl >/dev/null
	etcdctl_tls --user root:s3cret role grant-permission rdmactl --prefix=true readwrite rdmactl/ >/dev/null
	etcdctl_tls --user root:s3cret user grant-role rdmactl rdmactl >/dev/null
	printf 'etcdpw\n' >"$t/etcd-password"
	chmod 600 "$t/etcd-password"
	# the region the block reads, published in etcd as prod/kv over TLS
	RDMACTL_ETCD_CA=$ETCD_CERTS/ca.pem RDMACTL_ETCD_CERT=$ETCD_CERTS/client.pem \
		RDMACTL_ETCD_KEY=$ETCD_CERTS/client.key RDMACTL_ETCD_USER=rdmactl \
		RDMACTL_ETCD_PASSWORD_FILE=$t/etcd-password \
		start_server 1 --listen "$ADDR:$PORT" --name kv --size 64K --publish "etcd://$ETCD_EP/prod"
	wait_events published 1 "$SERVER_OUT"
	# the block as written, its paths and etcd's address this test's
	block=$(readme_block "etcd is reached over plain HTTP")
	[[ $block == *"rdmactl read etcd://10.0.0.5:2379/prod/kv --out kv.bin"* ]] ||
		fail "the README's TLS block is not found: $block"
	block=${block//\/etc\/etcd\/ca.pem/$ETCD_CERTS/ca.pem}
	block=${block//=client.pem/=$ETCD_CERTS/client.pem}
	block=${block//=client.key/=$ETCD_CERTS/client.key}
	block=${block//\/run\/secrets\/etcd/$t/etcd-password}
	block=${block//10.0.0.5:2379/$ETCD_EP}
	cd "$t"
	PATH=$(dirname -- "$RDMACTL"):$PATH run timeout 60 bash -c "$block"
	assert_success
	# the region's 64 KiB, read through etcd
	[ "$(stat -c %s "$t/kv.bin")" = 65536 ]
}
