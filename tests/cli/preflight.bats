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
# errors (exit 2); -j, --svg and --metrics. Then several trees given to
# one process (--sysfs again and again), each a node: a healthy node made
# once, and for each fact of the NIC, its partition, QoS, IOMMU, ACS, the
# rail plan and each rail, one node that differs, named with its fix.
# Several ranks met as a group, and the probe, run in
# tests/rxe/preflight.bats; the comparison itself in
# tests/unit/test_preflight.c.

load helpers
load '../lib/metrics'

setup_file() {
	export FX=$BATS_FILE_TMPDIR/fixtures
	bash "$BATS_TEST_DIRNAME/../fixtures/make-sysfs.sh" "$FX" >/dev/null
	# the healthy node, made once; nodes a and c, which no test changes
	export HEALTHY=$BATS_FILE_TMPDIR/healthy A=$BATS_FILE_TMPDIR/a C=$BATS_FILE_TMPDIR/c
	cp -a -- "$FX/two-socket-8gpu" "$HEALTHY"
	plant_healthy "$HEALTHY"
	named_copy "$HEALTHY" "$A" node-a
	named_copy "$HEALTHY" "$C" node-c
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

# acs_config FILE CTRL: a bridge's 4 KiB config space whose one extended
# capability is ACS, its control register CTRL (a byte: 0x0c redirects
# peer-to-peer requests and completions).
acs_config() {
	rm -f -- "$1"
	head -c 4096 /dev/zero >"$1"
	printf "\\x0d\\x00\\x01\\x00\\x1f\\x00\\x$(printf %02x "$2")\\x00" |
		dd of="$1" bs=1 seek=256 conv=notrunc status=none
}

# plant_healthy TREE: what preflight compares beyond the 8-GPU fixture,
# planted in TREE as a healthy node has it: the default pkey on every port,
# traffic class 106 and ECN on every priority on the Ethernet port (mlx5_8,
# eno1), every GPU and NIC in an IOMMU group in pass-through, every bridge
# with ACS and no redirect.
plant_healthy() {
	local t=$1 d w p f i=0
	for d in "$t"/class/infiniband/*; do
		mkdir -p "$d/ports/1/pkeys"
		echo 0xffff >"$d/ports/1/pkeys/0"
	done
	mkdir -p "$t/class/infiniband/mlx5_8/tc/1"
	put "$t/class/infiniband/mlx5_8/tc/1/traffic_class" "Global tclass=106"
	for w in roce_np roce_rp; do
		mkdir -p "$t/class/net/eno1/ecn/$w/enable"
		for p in {0..7}; do
			put "$t/class/net/eno1/ecn/$w/enable/$p" 1
		done
	done
	for f in "$t"/bus/pci/devices/*; do
		mkdir -p "$t/kernel/iommu_groups/$i"
		put "$t/kernel/iommu_groups/$i/type" identity
		ln -s "../../../../kernel/iommu_groups/$i" "$f/iommu_group"
		i=$((i + 1))
	done
	acs_config "$BATS_FILE_TMPDIR/acs-off" 0
	while read -r f; do
		cp -- "$BATS_FILE_TMPDIR/acs-off" "${f%/class}/config"
	done < <(grep -l '^0x0604' -r "$t/devices" --include=class)
}

# named_copy FROM TO HOST: a copy of tree FROM whose hostname is HOST, its
# files hard links to FROM's: what a test changes, it replaces (put).
named_copy() {
	cp -al -- "$1" "$2"
	sed -i "s/^hostname dgx-like$/hostname $3/" "$2/rdmactl/facts"
}

# put FILE LINE...: FILE replaced (a copy's files are links to the
# healthy node's, which a write through them would change).
put() {
	rm -f -- "$1"
	printf '%s\n' "${@:2}" >"$1"
}

# healthy_tree NAME HOST: a copy of the healthy node to break, its path.
healthy_tree() {
	rm -rf -- "${BATS_TEST_TMPDIR:?}/$1"
	named_copy "$HEALTHY" "$BATS_TEST_TMPDIR/$1" "$2"
	printf '%s\n' "$BATS_TEST_TMPDIR/$1"
}

# pf3 [GLOBAL...] -- ARGS...: the three trees a, b and c compared as nodes.
pf3() {
	local g=()
	while (($#)) && [[ $1 != -- ]]; do
		g+=("$1")
		shift
	done
	shift
	pf "${g[@]}" -- --sysfs "$A" --sysfs "$B" --sysfs "$C" "$@"
}

# three_trees: healthy trees in $A, $B and $C (nodes a, b, c); B, this
# test's own, is the one it breaks.
three_trees() {
	B=$(healthy_tree b node-b)
}

# only_one CHECK SETTING SEVERITY: the document's one finding is CHECK of
# SETTING with SEVERITY and names rank 1 (node-b) alone.
only_one() {
	jq -e --arg c "$1" --arg s "$2" --arg v "$3" '(.clean | not) and (.findings | length == 1)
		and .findings[0].check == $c and .findings[0].setting == $s
		and .findings[0].severity == $v and .findings[0].ranks == [1]
		and (.findings[0].nodes | startswith("rank 1 (node-b "))
		and .nodes[1].differs == [$s] and .nodes[0].differs == [] and .nodes[2].differs == []' <<<"$output"
}

@test "several --sysfs trees are compared as nodes: three healthy ones are clean, with every new fact known" {
	three_trees
	pf3 -- --svg "$BATS_TEST_TMPDIR/grid.svg"
	assert_success
	assert_output --partial "preflight: 3 nodes: 0 errors, 0 warnings, 0 notes"
	assert_output --partial "rank 1 (node-b) mlx5_0 port 1 ACTIVE InfiniBand"
	grep -q '>rail_plan<' "$BATS_TEST_TMPDIR/grid.svg"
	pf3 -j -d mlx5_8 --
	assert_success
	jq -e '.clean and .world == 3 and ([.nodes[].rank] == [0, 1, 2])
		and ([.nodes[].hostname] == ["node-a", "node-b", "node-c"])
		and all(.nodes[].settings; .nic_model == "15b3:101d MT4129" and .driver == "mlx5_core"
			and .pkey == "0xffff" and .traffic_class == "106"
			and .roce_ecn == "np 0-7, rp 0-7" and .iommu == "identity" and .acs == "off"
			and (.rail_plan | startswith("GPU0 mlx5_0 PIX, GPU1 mlx5_1 PIX")))' <<<"$output"
	pf3 -j --
	assert_success
	jq -e 'all(.nodes[].settings; .nic_model == "15b3:1021 MT4129" and .roce_ecn == null
		and .traffic_class == null)' <<<"$output"
}

@test "a node whose NIC is another model is named with the fix (exit 1)" {
	three_trees
	put "$B/class/infiniband/mlx5_0/device/device" 0x101b
	put "$B/class/infiniband/mlx5_0/hca_type" MT4123
	pf3 --
	assert_failure 1
	assert_output --partial "WARNING differs (nic_model): nic_model is 15b3:101b MT4123 where 2 of 3 nodes have 15b3:1021 MT4129"
	assert_output --partial "nodes: rank 1 (node-b mlx5_0)"
	assert_output --partial "fix:   run the job on like NICs, or leave mlx5_0 out (NCCL_IB_HCA=^mlx5_0"
	pf3 -j --
	only_one differs nic_model warning
}

@test "a node whose NIC firmware or driver differs is named with the fix (exit 1)" {
	three_trees
	put "$B/class/infiniband/mlx5_0/fw_ver" 28.36.1010
	pf3 -j --
	assert_failure 1
	only_one differs firmware warning
	jq -e '.findings[0].value == "28.36.1010" and .findings[0].reference == "28.39.1002"
		and (.findings[0].fix | startswith("update mlx5_0'"'"'s firmware to 28.39.1002"))' <<<"$output"
	put "$B/class/infiniband/mlx5_0/fw_ver" 28.39.1002
	mkdir -p "$B/bus/pci/drivers/mlx5_other"
	ln -sfn ../../../../../../../../bus/pci/drivers/mlx5_other "$B/class/infiniband/mlx5_0/device/driver"
	pf3 -j --
	assert_failure 1
	only_one differs driver warning
	jq -e '.findings[0].value == "mlx5_other" and .findings[0].reference == "mlx5_core"' <<<"$output"
}

@test "a node whose port is in another partition (pkey entry 0) is an error with the fix (exit 1)" {
	three_trees
	put "$B/class/infiniband/mlx5_0/ports/1/pkeys/0" 0x8001
	pf3 --
	assert_failure 1
	assert_output --partial "ERROR   differs (pkey): pkey is 0x8001 where 2 of 3 nodes have 0xffff"
	assert_output --partial "fix:   make mlx5_0 port 1 a full member of partition 0xffff"
	pf3 -j --
	only_one differs pkey error
}

@test "a node whose RoCE traffic class differs is named with the sysfs fix (exit 1)" {
	three_trees
	put "$B/class/infiniband/mlx5_8/tc/1/traffic_class" "Global tclass=0"
	pf3 -d mlx5_8 --
	assert_failure 1
	assert_output --partial "WARNING differs (traffic_class): traffic_class is 0 where 2 of 3 nodes have 106"
	assert_output --partial "fix:   echo 106 > /sys/class/infiniband/mlx5_8/tc/1/traffic_class (or NCCL_IB_TC=106"
	pf3 -j -d mlx5_8 --
	only_one differs traffic_class warning
}

@test "a node whose RoCE ECN is off for a priority, or absent, is named (exit 1)" {
	three_trees
	put "$B/class/net/eno1/ecn/roce_np/enable/3" 0
	pf3 -d mlx5_8 --
	assert_failure 1
	assert_output --partial "WARNING differs (roce_ecn): roce_ecn is np 0-2,4-7, rp 0-7 where 2 of 3 nodes have np 0-7, rp 0-7"
	assert_output --partial "/sys/class/net/eno1/ecn/roce_np/enable/PRIO"
	pf3 -j -d mlx5_8 --
	only_one differs roce_ecn warning
	# a driver with no ECN knobs says so
	rm -r -- "$B/class/net/eno1/ecn"
	pf3 -j -d mlx5_8 --
	assert_failure 1
	only_one differs roce_ecn warning
	jq -e '.findings[0].value == "absent" and .nodes[1].settings.roce_ecn == "absent"' <<<"$output"
}

@test "a translating IOMMU on the GPU-NIC paths is a warning with the fix; none is off (exit 1, 0)" {
	local t
	t=$(healthy_tree iommu node-a)
	pf -j -- --sysfs "$t"
	assert_success
	jq -e '.nodes[0].settings.iommu == "identity"' <<<"$output"
	put "$t/kernel/iommu_groups/3/type" DMA-FQ
	pf -- --sysfs "$t"
	assert_failure 1
	assert_output --partial "WARNING iommu: the IOMMU translates (DMA-FQ) on the GPU-NIC paths of the rail plan"
	assert_output --partial "fix:   boot with the IOMMU in pass-through (iommu=pt"
	# no group at all: no IOMMU
	rm -r -- "$t/kernel/iommu_groups"
	mkdir "$t/kernel/iommu_groups"
	pf -j -- --sysfs "$t"
	assert_success
	jq -e '.nodes[0].settings.iommu == "off"' <<<"$output"
}

@test "ACS redirect on a bridge between a GPU and its NIC is a warning naming the bridge (exit 1)" {
	local t
	t=$(healthy_tree acs node-a)
	acs_config "$t/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/config" 0x0c
	pf -- --sysfs "$t"
	assert_failure 1
	assert_output --partial "WARNING acs: ACS redirects peer-to-peer on 1 of 8 GPU-NIC paths, first at 0000:02:00.0 (GPU0-mlx5_0)"
	assert_output --partial "fix:   disable ACS redirect on the bridges between GPU and NIC"
	pf -j -- --sysfs "$t"
	jq -e '.findings[0].check == "acs" and .nodes[0].settings.acs == "redirect on 1 of 8 paths"
		and .nodes[0].differs == ["acs"]' <<<"$output"
	# source validation alone (bit 0) redirects nothing
	acs_config "$t/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/config" 0x01
	pf -- --sysfs "$t"
	assert_success
	# a config space cut at 64 bytes (an unprivileged read) leaves ACS unknown
	rm -- "$t/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/config"
	head -c 64 /dev/zero >"$t/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/config"
	pf -j -- --sysfs "$t"
	assert_success
	jq -e '.nodes[0].settings.acs == null' <<<"$output"
}

@test "a node whose rail plan differs (a GPU's NIC missing) is named with the fix (exit 1)" {
	three_trees
	rm -- "$B/class/infiniband/mlx5_3"
	pf3 --
	assert_failure 1
	assert_output --partial "WARNING differs (rail_plan): rail_plan is GPU0 mlx5_0 PIX"
	assert_output --partial "fix:   compare 'rdmactl probe-topology' there with a node of the majority"
	pf3 -j --
	only_one differs rail_plan warning
	jq -e '(.findings[0].value | contains("GPU3 mlx5_2 PXB") or contains("GPU3 mlx5_"))
		and (.findings[0].reference | contains("GPU3 mlx5_3 PIX"))' <<<"$output"
}

@test "several --sysfs trees need --world 1" {
	run "$RDMACTL" preflight --world 2 --rank 0 -R file:/nonexistent --sysfs a --sysfs b
	assert_failure 2
	assert_output --partial "preflight: 2 --sysfs trees are compared by one process (--world 1)"
}

@test "a capture of a tree keeps what preflight compares: pkey, traffic class, ECN, IOMMU, ACS" {
	local t
	t=$(healthy_tree orig node-a)
	acs_config "$t/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/config" 0x0c
	run "$RDMACTL" probe-topology --sysfs "$t" --capture "$BATS_TEST_TMPDIR/cap"
	assert_success
	pf -j -d mlx5_8 -- --sysfs "$t"
	assert_failure 1
	local want=$output
	pf -j -d mlx5_8 -- --sysfs "$BATS_TEST_TMPDIR/cap"
	assert_failure 1
	jq -e --argjson w "$want" '.nodes[0].settings == $w.nodes[0].settings
		and .nodes[0].settings.acs == "redirect on 1 of 8 paths" and .nodes[0].settings.iommu == "identity"
		and .nodes[0].settings.traffic_class == "106" and .nodes[0].settings.roce_ecn == "np 0-7, rp 0-7"
		and .nodes[0].settings.pkey == "0xffff"' <<<"$output"
}

@test "every rail of the rail plan is reported: a port down on a node's rail 3 is named on that NIC (exit 1)" {
	local t
	t=$(healthy_tree rail3 dgx-like)
	pf -j -- --sysfs "$t"
	assert_success
	jq -e '.nodes[0].device == "mlx5_0" and ([.nodes[0].rails[].device]
		== ["mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"])
		and ([.nodes[0].rails[].rail] == [1, 2, 3, 4, 5, 6, 7])' <<<"$output"
	put "$t/class/infiniband/mlx5_3/ports/1/state" "1: DOWN"
	pf -- --sysfs "$t"
	assert_failure 1
	assert_output --partial "ERROR   port_down (port_state): mlx5_3 port 1 is DOWN"
	assert_output --partial "nodes: rank 0 (dgx-like mlx5_3)"
	assert_output --partial "#     rail 3: mlx5_3 port 1 DOWN InfiniBand"
}

@test "rail k of a node is compared with rail k of the others: one NIC's firmware on node b named (exit 1)" {
	three_trees
	put "$B/class/infiniband/mlx5_5/fw_ver" 28.36.1010
	pf3 --
	assert_failure 1
	assert_output --partial "WARNING differs (firmware): firmware is 28.36.1010 where 2 of 3 nodes have 28.39.1002 on their rail 5"
	assert_output --partial "nodes: rank 1 (node-b mlx5_5)"
	assert_output --partial "fix:   update mlx5_5's firmware to 28.39.1002"
	pf3 -j --
	assert_failure 1
	jq -e '(.findings | length == 1) and .findings[0].ranks == [1]
		and .nodes[1].rails[4].differs == ["firmware"] and .nodes[1].differs == []
		and ([.nodes[0, 2].rails[].differs[]] == [])' <<<"$output"
}
