		if [[ $got != "$want" ]]; then
			fail "$sev: the file says '$got', the document '$want'"
			return 1
		fi
#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# preflight on one node (--world 1: no group, no device needed) over the
# fixture trees of tests/fixtures/make-sysfs.sh: the healthy tree is clean
# (exit 0); a tree broken one way at a time (a down-trained PCIe link,
# rdma_ucm missing, a small locked-memory limit, a GID index with no netdev
# behind it) names the node, the check and the fix (exit 1); its usage
# errors (exit 2); -j, --svg and --metrics. Several nodes compared, and the
# probe, run in tests/rxe/preflight.bats; the comparison itself in
# tests/unit/test_preflight.c.

load helpers
load '../lib/metrics'

setup_file() {
	export FX=$BATS_FILE_TMPDIR/fixtures
	bash "$BATS_TEST_DIRNAME/../fixtures/make-sysfs.sh" "$FX" >/dev/null
}

setup() {
	require_binary
}

teardown() {
	common_teardown
}

# pf [GLOBAL...] -- ARGS...: one node's preflight over a tree.
pf() {
	local g=()
	while (($#)) && [[ $1 != -- ]]; do
		g+=("$1")
		shift
	done
	shift
	run timeout 30 "$RDMACTL" "${g[@]}" preflight --world 1 --rank 0 "$@"
}

# A copy of fixture $2 named $1 to break; prints its path.
copy_fixture() {
	rm -rf -- "${BATS_TEST_TMPDIR:?}/$1"
	cp -a -- "$FX/$2" "$BATS_TEST_TMPDIR/$1"
	printf '%s\n' "$BATS_TEST_TMPDIR/$1"
}

@test "the healthy tree is clean: exit 0, no finding, its rail's facts in -j" {
	pf -- --sysfs "$FX/two-socket-8gpu"
	assert_success
	assert_output --partial "preflight: 1 node: 0 errors, 0 warnings, 0 notes"
	assert_output --partial "rank 0 (dgx-like) mlx5_0 port 1 ACTIVE InfiniBand, 400 Gbit/s, MTU 4096"
	assert_output --partial "verdict: clean"
	pf -j -- --sysfs "$FX/two-socket-8gpu"
	assert_success
	jq -e '.clean and .world == 1 and .findings == [] and .probe == null and .rendezvous == null
		and .nodes[0].device == "mlx5_0" and .nodes[0].settings.rdma_ucm == "loaded"
		and .nodes[0].settings.nic_pcie == "32.0 GT/s PCIe x16 of 32.0 GT/s PCIe x16"
		and .nodes[0].settings.memlock == "unlimited" and .nodes[0].differs == []' <<<"$output"
}

@test "a down-trained PCIe link of the NIC is named with its node and fix (exit 1)" {
	local t
	t=$(copy_fixture narrow two-socket-8gpu)
	printf '8\n' >"$t/class/infiniband/mlx5_0/device/current_link_width"
	pf -- --sysfs "$t"
	assert_failure 1
	assert_output --partial "WARNING pcie_link (nic_pcie): mlx5_0 (0000:04:00.0) PCIe link runs at 32.0 GT/s PCIe x8 of 32.0 GT/s PCIe x16"
	assert_output --partial "nodes: rank 0 (dgx-like mlx5_0)"
	assert_output --partial "fix:   reseat the card or move it to a full slot"
	assert_output --partial "verdict: 1 finding to fix (exit 1)"
	pf -j -- --sysfs "$t"
	assert_failure 1
	jq -e '(.clean | not) and .counts == {"error": 0, "warning": 1, "info": 0}
		and .findings[0].check == "pcie_link" and .findings[0].ranks == [0]
		and .nodes[0].differs == ["nic_pcie"]' <<<"$output"
	# the slower speed alone is down-trained too
	printf '16\n' >"$t/class/infiniband/mlx5_0/device/current_link_width"
	printf '16.0 GT/s PCIe\n' >"$t/class/infiniband/mlx5_0/device/current_link_speed"
	pf -- --sysfs "$t"
	assert_failure 1
	assert_output --partial "PCIe link runs at 16.0 GT/s PCIe x16 of 32.0 GT/s PCIe x16"
}

@test "rdma_ucm missing from a tree is an error with its fix; a capture's fact says it is built in" {
	local t
	t=$(copy_fixture no-ucm two-socket-8gpu)
	rm -r -- "$t/module/rdma_ucm"
	pf -- --sysfs "$t"
	assert_failure 1
	assert_output --partial "ERROR   rdma_ucm: the rdma_ucm module is not loaded"
	assert_output --partial "fix:   modprobe rdma_ucm"
	echo "rdma_ucm 1" >>"$t/rdmactl/facts"
	pf -- --sysfs "$t"
	assert_success
}

@test "a locked-memory limit below --buffer is an error, a warning with CAP_IPC_LOCK" {
	local t
	t=$(copy_fixture memlock two-socket-8gpu)
	sed -i 's/^memlock unlimited$/memlock 8388608/' "$t/rdmactl/facts"
	pf -- --sysfs "$t"
	assert_failure 1
	assert_output --partial "ERROR   memlock: the locked-memory limit is 8192 KiB, below the 65536 KiB a rank registers"
	assert_output --partial "fix:   ulimit -l unlimited"
	pf -- --sysfs "$t" --buffer 8M
	assert_success
	sed -i 's/^cap_ipc_lock 0$/cap_ipc_lock 1/' "$t/rdmactl/facts"
	pf -j -- --sysfs "$t"
	assert_failure 1
	jq -e '.findings[0].severity == "warning" and .findings[0].check == "memlock"' <<<"$output"
}

@test "a GID index with no GID or no netdev behind it is an error naming the index" {
	pf -d mlx5_8 -g 9 -- --sysfs "$FX/two-socket-8gpu"
	assert_failure 1
	assert_output --partial "ERROR   gid_netdev (gid_type): GID index 9 of mlx5_8 port 1 holds no GID (no address, no netdev)"
	assert_output --partial "fix:   use a GID index that has an address behind it"
	pf -d mlx5_8 -g 3 -- --sysfs "$FX/two-socket-8gpu"
	assert_success
	local t
	t=$(copy_fixture no-ndev two-socket-8gpu)
	: >"$t/class/infiniband/mlx5_8/ports/1/gid_attrs/ndevs/3"
	pf -d mlx5_8 -g 3 -- --sysfs "$t"
	assert_failure 1
	assert_output --partial "GID index 3 of mlx5_8 port 1 has no netdev behind it"
}

@test "rdma_cm's default RoCE mode and ToS are read from the tree's configfs" {
	local t
	t=$(copy_fixture cm two-socket-8gpu)
	mkdir -p "$t/kernel/config/rdma_cm/mlx5_8/ports/1"
	echo "IB/RoCE v1" >"$t/kernel/config/rdma_cm/mlx5_8/ports/1/default_roce_mode"
	echo 106 >"$t/kernel/config/rdma_cm/mlx5_8/ports/1/default_roce_tos"
	pf -j -d mlx5_8 -- --sysfs "$t"
	assert_success
	jq -e '.nodes[0].settings.roce_mode == "IB/RoCE v1" and .nodes[0].settings.roce_tos == "106"' <<<"$output"
	pf -j -d mlx5_8 -- --sysfs "$FX/two-socket-8gpu"
	jq -e '.nodes[0].settings.roce_mode == "RoCE v2" and .nodes[0].settings.roce_tos == "0"' <<<"$output"
}

@test "--svg draws the grid with the finding's cell marked; --metrics passes promtool" {
	local t
	t=$(copy_fixture svg two-socket-8gpu)
	rm -r -- "$t/module/rdma_ucm"
	pf -- --sysfs "$t" --svg "$BATS_TEST_TMPDIR/grid.svg" --metrics "$BATS_TEST_TMPDIR/m.prom"
	assert_failure 1
	assert_output --partial "# grid: $BATS_TEST_TMPDIR/grid.svg"
	grep -q '<svg' "$BATS_TEST_TMPDIR/grid.svg"
	grep -q '>netdev_mtu<' "$BATS_TEST_TMPDIR/grid.svg"
	grep -q 'stroke="#c00000"' "$BATS_TEST_TMPDIR/grid.svg"
	[[ $(grep -c 'stroke="#c00000"' "$BATS_TEST_TMPDIR/grid.svg") == 1 ]] || fail "one cell should be marked"
	require_promtool
	metrics_check "$BATS_TEST_TMPDIR/m.prom"
	assert_equal "$(metrics_value "$BATS_TEST_TMPDIR/m.prom" rdmactl_preflight_findings 'severity="error"')" 1
	assert_equal "$(metrics_value "$BATS_TEST_TMPDIR/m.prom" rdmactl_preflight_clean)" 0
}

@test "usage errors exit 2 before anything is read" {
	run "$RDMACTL" preflight --world 1 --rank 0 extra
	assert_failure 2
	assert_output --partial "preflight: unexpected argument 'extra'"
	run "$RDMACTL" preflight --world 1 --rank 0 --buffer 0
	assert_failure 2
	assert_output --partial "invalid --buffer 0"
	run "$RDMACTL" -t 1000 preflight --world 1 --rank 0 --duration 2
	assert_failure 2
	assert_output --partial "--duration 2 s needs a timeout (-t) of at least 4000 ms"
	run "$RDMACTL" preflight --world 2 --rank 0
	assert_failure 2
	assert_output --partial "preflight needs --rendezvous"
	run "$RDMACTL" preflight --world 1 --rank 0 --sysfs ""
	assert_failure 2
	run "$RDMACTL" preflight --world 1 --rank 0 --min-percent 101
	assert_failure 2
}

@test "a tree that cannot be read is the node's finding, not a crash (exit 1)" {
	pf -j -- --sysfs "$BATS_TEST_TMPDIR/none"
	assert_failure 1
	jq -e '.findings[0].check == "facts" and (.findings[0].message | test("none"))
		and (.nodes[0].loaded | not)' <<<"$output"
}

# pf_metrics_match FILE JSON: each figure of the --metrics file is the
# document's: the nodes, the verdict and each severity's count.
pf_metrics_match() {
	local sev want got
	assert_equal "$(metrics_value "$1" rdmactl_preflight_nodes)" "$(jq -r .world <<<"$2")"
	assert_equal "$(metrics_value "$1" rdmactl_preflight_clean)" "$(jq -r 'if .clean then 1 else 0 end' <<<"$2")"
	for sev in error warning info; do
		want=$(jq -r --arg s "$sev" '.counts[$s]' <<<"$2")
		got=$(metrics_value "$1" rdmactl_preflight_findings "severity=\"$sev\"")
		if [[ $got != "$want" ]]; then
			fail "$sev: the file says '$got', the document '$want'"
			return 1
		fi
	done
}

@test "--metrics renders the report: its figures are the JSON document's of the same run, text or -j" {
	require_promtool
	local t doc
	t=$(copy_fixture same two-socket-8gpu)
	rm -r -- "$t/module/rdma_ucm"
	pf -j -- --sysfs "$t" --metrics "$BATS_TEST_TMPDIR/j.prom"
	assert_failure 1
	doc=$output
	jq -e '.counts.error == 1 and .clean == false' <<<"$doc"
	metrics_check "$BATS_TEST_TMPDIR/j.prom"
	pf_metrics_match "$BATS_TEST_TMPDIR/j.prom" "$doc"
	# in text mode the file renders the same report, built all the same
	pf -- --sysfs "$t" --metrics "$BATS_TEST_TMPDIR/t.prom"
	assert_failure 1
	metrics_check "$BATS_TEST_TMPDIR/t.prom"
	pf_metrics_match "$BATS_TEST_TMPDIR/t.prom" "$doc"
	# the wrong answer: a document with another count does not match
	run pf_metrics_match "$BATS_TEST_TMPDIR/t.prom" "$(jq -c '.counts.error = 2' <<<"$doc")"
	assert_failure
	assert_output --partial "error: the file says '1', the document '2'"
}
