#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdmactl preflight on real SoftRoCE: three ranks as three "nodes", rank 0
# alone on rxe_a (va), ranks 1 and 2 on rxe_b (vb, two addresses), so that
# what is planted on rank 0 (its netdev, its process, its facts) is the
# minority. A healthy set is clean, probed both ways around the ring, exit
# 0; each fault planted on rank 0, one at a time, is named with rank 0 and
# its fix, and every rank exits 1.
#
# Two faults cannot be planted live in the guest, so rank 0 reads them from
# a capture of the guest's own tree (--sysfs), changed: rxe refuses a
# default RoCE mode of RoCE v1 in configfs (the write fails with EINVAL: it
# has RoCE v2 GIDs only), and unloading rdma_ucm would take rdma_cm from
# every rank (the group itself connects through it). The ToS test writes
# the live configfs. A down-trained PCIe link is in tests/cli/preflight.bats
# (rxe has no PCI function). The sanitizer tier runs the healthy set, the
# MTU, the locked-memory limit and rdma_ucm (a captured tree for rank 0):
# the other tests go down the same paths with other values, which
# tests/unit/test_preflight.c judges on that tier too.

bats_require_minimum_version 1.5.0
load helpers
load '../lib/metrics'

EXTRA_B=198.18.1.4
CM=/sys/kernel/config/rdma_cm

setup() {
	need_two_nics
	ip addr add "$EXTRA_B/24" dev vb 2>/dev/null || true
	ADDRS=("$RDMACTL_VM_ADDR_A" "$RDMACTL_VM_ADDR_B" "$EXTRA_B")
	local i
	for i in $(seq 50); do
		grep -qs "0000:0000:0000:0000:0000:ffff:c612:0104" /sys/class/infiniband/"$RDMACTL_VM_DEV_B"/ports/1/gids/* &&
			return 0
		sleep 0.1
	done
}

teardown() {
	started "${PIDS[@]}"
	ip link set va mtu 9000 2>/dev/null || true
	rmdir "$CM/$RDMACTL_VM_DEV_B" 2>/dev/null || true
	ip addr del "$EXTRA_B/24" dev vb 2>/dev/null || true
	common_teardown
}

# pf_start ARGS...: the three ranks in the background (-j, stdout in
# rank.I.out, stderr in .err), each with ARGS; rank 0 also with
# ${R0_GLOBAL[@]} before the command, ${R0_ARGS[@]} after it, and under
# ${R0_WRAP[@]}. PIDS holds them.
pf_start() {
	local i
	PEERS=$BATS_TEST_TMPDIR/peers
	PORT_BASE=$((27000 + BATS_TEST_NUMBER * 100 + ${PORT_SEQ:-0} * 10))
	PORT_SEQ=$((${PORT_SEQ:-0} + 1))
	: >"$PEERS"
	for ((i = 0; i < 3; i++)); do
		echo "$i ${ADDRS[i]}:$((PORT_BASE + i)) node$i" >>"$PEERS"
	done
	PIDS=()
	for ((i = 0; i < 3; i++)); do
		local wrap=() glob=() own=()
		if ((i == 0)); then
			wrap=("${R0_WRAP[@]}") glob=("${R0_GLOBAL[@]}") own=("${R0_ARGS[@]}")
		fi
		timeout --kill-after=5 60 "${wrap[@]}" "$RDMACTL" -j -t 20000 "${glob[@]}" preflight \
			--rank "$i" --world 3 --rendezvous "file:$PEERS" "$@" "${own[@]}" \
			>"$BATS_TEST_TMPDIR/rank.$i.out" 2>"$BATS_TEST_TMPDIR/rank.$i.err" &
		PIDS+=($!)
	done
}

# only_finding CHECK SETTING: the document's one error or warning is CHECK
# (of SETTING, "" for none) and names rank 0 alone, on its device.
only_finding() {
	jq -e --arg c "$1" --arg s "$2" --arg d "$RDMACTL_VM_DEV_A" '(.clean | not)
		and ([.findings[] | select(.severity != "info")] | length == 1)
		and .findings[0].check == $c and (.findings[0].setting // "") == $s
		and .findings[0].ranks == [0]
		and (.findings[0].nodes | startswith("rank 0 (") and endswith(" " + $d + ")"))
		and (.findings[0].fix | length > 0) and (.findings[0].why | length > 0)' <<<"$DOC" ||
		{ ranks_dump; fail "not one finding $1 naming rank 0"; }
}

# every_rank_same: each rank printed a document naming its own rank, and
# its comparison (all but rank, group and rank 0's own svg) is rank 0's.
every_rank_same() {
	local i ref
	ref=$(jq -c 'del(.rank, .group, .svg)' <<<"$DOC") || { ranks_dump; fail "rank 0 printed no document"; }
	for i in 1 2; do
		[ "$(jq -c 'del(.rank, .group, .svg)' "$BATS_TEST_TMPDIR/rank.$i.out")" = "$ref" ] ||
			{ ranks_dump; fail "rank $i's comparison is not rank 0's"; }
	done
	for i in 0 1 2; do
		[ "$(jq -r .rank "$BATS_TEST_TMPDIR/rank.$i.out")" = "$i" ] ||
			{ ranks_dump; fail "rank $i's document does not name rank $i"; }
	done
}

# capture_tree: this guest's tree as probe-topology captures it, in $TREE.
capture_tree() {
	TREE=$BATS_TEST_TMPDIR/tree
	rdmactl probe-topology --capture "$TREE" >/dev/null
}

@test "healthy: three nodes agree, each probed both ways against the next, exit 0 on every rank" {
	pf_start --svg "$BATS_TEST_TMPDIR/grid.svg" --metrics "$BATS_TEST_TMPDIR/pf.prom"
	ranks_wait
	echo "$DOC" # bats --show-output-of-passing-tests shows the report
	all_exit 0
	jq -e '.clean and .world == 3 and .findings == [] and .rendezvous == "file"
		and ([.nodes[].device] == [env.RDMACTL_VM_DEV_A, env.RDMACTL_VM_DEV_B, env.RDMACTL_VM_DEV_B])
		and ([.nodes[].settings.netdev_mtu] | unique == ["9000"])
		and ([.nodes[].settings.rdma_ucm] | unique == ["loaded"])
		and ([.nodes[].differs[]] == [])' <<<"$DOC" || { ranks_dump; fail "not a clean verdict"; }
	# a ring of three: every ordered pair, each with its figure against the link's
	jq -e '(.probe.directions | length == 6) and all(.probe.directions[]; .ok
		and .gbit_per_s > 0 and .expected_gbit_per_s > 0 and .percent_of_expected > 0
		and .percent_of_expected == 100 * .gbit_per_s / .expected_gbit_per_s
		and .write_lat_p50_us > 0)' <<<"$DOC" || { ranks_dump; fail "the probe is not complete"; }
	every_rank_same
	metrics_check "$BATS_TEST_TMPDIR/pf.prom"
	grep -qE '^rdmactl_preflight_clean\{.*\} 1$' "$BATS_TEST_TMPDIR/pf.prom"
	[ "$(grep -c '^rdmactl_preflight_probe_write_bytes_per_second{' "$BATS_TEST_TMPDIR/pf.prom")" = 6 ]
	grep -q '>roce_mode<' "$BATS_TEST_TMPDIR/grid.svg"
	[ "$(grep -c 'stroke="#c00000"' "$BATS_TEST_TMPDIR/grid.svg")" = 0 ]
}

@test "one node's netdev MTU 1500 against 9000: named with its node and fix, exit 1 on every rank" {
	ip link set va mtu 1500
	pf_start --no-probe
	ranks_wait
	all_exit 1
	only_finding differs netdev_mtu
	jq -e '.findings[0].value == "1500" and .findings[0].reference == "9000" and .findings[0].severity == "error"
		and (.findings[0].fix | contains("ip link set va mtu 9000"))
		and .nodes[0].differs == ["netdev_mtu"] and .nodes[1].differs == []' <<<"$DOC" ||
		{ ranks_dump; fail "the MTU finding is not right"; }
	# every rank's document names it (rank 0's finding, in each rank's -j)
	every_rank_same
	for i in 1 2; do
		[ "$(jq -c '[.clean, .counts.error, .findings[0].setting, .findings[0].ranks]' "$BATS_TEST_TMPDIR/rank.$i.out")" = '[false,1,"netdev_mtu",[0]]' ] ||
			{ ranks_dump; fail "rank $i's document does not name the MTU"; }
	done
}

# bats test_tags=plain-only
@test "one node whose rdma_cm default RoCE mode differs (its captured tree): named with the configfs fix" {
	capture_tree
	mkdir -p "$TREE/kernel/config/rdma_cm/$RDMACTL_VM_DEV_A/ports/1"
	echo "IB/RoCE v1" >"$TREE/kernel/config/rdma_cm/$RDMACTL_VM_DEV_A/ports/1/default_roce_mode"
	R0_ARGS=(--sysfs "$TREE")
	pf_start --no-probe
	ranks_wait
	all_exit 1
	only_finding differs roce_mode
	jq -e --arg d "$RDMACTL_VM_DEV_A" '.findings[0].value == "IB/RoCE v1" and .findings[0].reference == "RoCE v2"
		and (.findings[0].fix | contains("echo '\''RoCE v2'\'' > /sys/kernel/config/rdma_cm/" + $d + "/ports/1/default_roce_mode"))' <<<"$DOC" ||
		{ ranks_dump; fail "the RoCE mode finding is not right"; }
}

# bats test_tags=plain-only
@test "rdma_cm's default ToS set on the others' device in the live configfs: the odd node named" {
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	mkdir -p "$CM/$RDMACTL_VM_DEV_B"
	echo 106 >"$CM/$RDMACTL_VM_DEV_B/ports/1/default_roce_tos"
	pf_start --no-probe
	ranks_wait
	all_exit 1
	only_finding differs roce_tos
	jq -e '.findings[0].value == "0" and .findings[0].reference == "106"' <<<"$DOC" ||
		{ ranks_dump; fail "the ToS finding is not right"; }
}

@test "a locked-memory limit too small for the job's buffers (ulimit -l, no CAP_IPC_LOCK): named, exit 1" {
	command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
	# shellcheck disable=SC2016
	R0_WRAP=(setpriv --bounding-set -ipc_lock bash -c 'ulimit -l 16384 && exec "$@"' limited)
	pf_start --no-probe --buffer 64M
	ranks_wait
	all_exit 1
	only_finding memlock memlock
	jq -e '.findings[0].severity == "error" and .findings[0].value == "16384 KiB"
		and (.findings[0].fix | contains("ulimit -l unlimited"))' <<<"$DOC" ||
		{ ranks_dump; fail "the memlock finding is not right"; }
	# the same limit with buffers that fit it: clean
	pf_start --no-probe --buffer 8M
	ranks_wait
	all_exit 0
}

# bats test_tags=plain-only
@test "a GID index with no netdev behind it (-g 7 on rank 0): named with the index and its fix" {
	R0_GLOBAL=(-g 7)
	pf_start --no-probe
	ranks_wait
	all_exit 1
	only_finding gid_netdev gid_type
	jq -e --arg d "$RDMACTL_VM_DEV_A" '.findings[0].message == "GID index 7 of " + $d + " port 1 holds no GID (no address, no netdev)"
		and (.findings[0].fix | contains("NCCL_IB_GID_INDEX"))' <<<"$DOC" ||
		{ ranks_dump; fail "the GID finding is not right"; }
}

# bats test_tags=plain-only
@test "one node without rdma_ucm (its captured tree, the module gone): named with modprobe, exit 1" {
	capture_tree
	[ -d "$TREE/module/rdma_ucm" ] || fail "the capture lacks module/rdma_ucm: rdma_ucm is loaded here"
	rm -r -- "$TREE/module/rdma_ucm"
	sed -i '/^rdma_ucm /d' "$TREE/rdmactl/facts"
	R0_ARGS=(--sysfs "$TREE")
	pf_start --no-probe
	ranks_wait
	all_exit 1
	only_finding rdma_ucm rdma_ucm
	jq -e '(.findings[0].fix | startswith("modprobe rdma_ucm")) and .nodes[0].settings.rdma_ucm == "missing"
		and .nodes[1].settings.rdma_ucm == "loaded"' <<<"$DOC" ||
		{ ranks_dump; fail "the rdma_ucm finding is not right"; }
}
