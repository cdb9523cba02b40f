#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# rdmactl probe-topology on the fixture trees of tests/fixtures/make-sysfs.sh
# (no device needed), on bad trees, and once on this host.
#   bats tests/cli/probe-topology.bats
# The binary: $RDMACTL, or build/cli/rdmactl of this checkout.

load '../lib/assert'

setup_file() {
	export RDMACTL=${RDMACTL:-$BATS_TEST_DIRNAME/../../build/cli/rdmactl}
	export FX=$BATS_FILE_TMPDIR/fixtures
	bash "$BATS_TEST_DIRNAME/../fixtures/make-sysfs.sh" "$FX"
}

setup() {
	[[ -x "$RDMACTL" ]] || fail "no rdmactl binary at $RDMACTL: build first, or set RDMACTL"
}

# JSON of a fixture: topo FIXTURE [OPTIONS...]
topo() { timeout 30 "$RDMACTL" -j probe-topology --sysfs "$FX/$1" "${@:2}"; }

# The class of GPU $2 and NIC $3 in the JSON $1.
path_of() {
	jq -r --argjson g "$2" --arg n "$3" '.matrix[] | select(.gpu == $g and .nic == $n) | .path' <<<"$1"
}

# A copy of a fixture to break: broken NAME FIXTURE -> its path
broken() {
	rm -rf -- "${BATS_TEST_TMPDIR:?}/$1"
	cp -a -- "$FX/$2" "$BATS_TEST_TMPDIR/$1"
	printf '%s\n' "$BATS_TEST_TMPDIR/$1"
}

# A bad tree: exit status 1 (never a crash, never 0) and a message naming it.
assert_bad_tree() { # DIR MESSAGE
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$1"
	assert_failure 1
	assert_output --partial "$2"
	run timeout 30 "$RDMACTL" -j probe-topology --sysfs "$1"
	assert_failure 1
	jq -e --arg m "$2" '.schema_version == 2 and (.error.message | contains($m))' <<<"$output"
}

@test "two-socket-8gpu: switch mates are PIX, 9 NICs x 8 GPUs in the matrix" {
	local j g
	j=$(topo two-socket-8gpu)
	jq -e '.schema_version == 2 and .source.kind == "sysfs" and (.matrix | length) == 72' <<<"$j"
	for g in 0 1 2 3 4 5 6 7; do
		assert_equal "$(path_of "$j" "$g" "mlx5_$g")" PIX
	done
}

@test "two-socket-8gpu: PHB, NODE, PXB and SYS where the PCIe tree puts them" {
	local j
	j=$(topo two-socket-8gpu)
	assert_equal "$(path_of "$j" 0 mlx5_1)" PHB  # two root ports of pci0000:00
	assert_equal "$(path_of "$j" 0 mlx5_2)" NODE # pci0000:00 and pci0000:40, NUMA 0
	assert_equal "$(path_of "$j" 4 mlx5_6)" NODE
	assert_equal "$(path_of "$j" 4 mlx5_5)" PXB  # sibling leaf switches
	assert_equal "$(path_of "$j" 7 mlx5_6)" PXB
	assert_equal "$(path_of "$j" 0 mlx5_4)" SYS  # across the sockets
	assert_equal "$(path_of "$j" 7 mlx5_0)" SYS
	assert_equal "$(path_of "$j" 0 mlx5_8)" PHB  # management NIC on root port 00:03.0
	assert_equal "$(path_of "$j" 2 mlx5_8)" NODE
	assert_equal "$(path_of "$j" 5 mlx5_8)" SYS
}

@test "two-socket-8gpu: the rail plan gives each GPU its switch mate, never the management NIC" {
	local j
	j=$(topo two-socket-8gpu)
	run jq -r '.rail_plan[] | "\(.gpu) \(.nic) \(.path) \(.shared) \(.cross_socket)"' <<<"$j"
	assert_success
	assert_output "$(for g in 0 1 2 3 4 5 6 7; do echo "$g mlx5_$g PIX false false"; done)"
	jq -e '[.rail_plan[].nic] | index("mlx5_8") == null' <<<"$j"
	jq -e '.rail_plan | all(.shared_with == [] and .gpu_numa == .nic_numa)' <<<"$j"
	jq -e '[.findings[].check] | (index("rail_shared") == null and index("rail_cross_socket") == null)' <<<"$j"
}

@test "two-socket-8gpu: devices, ports, GIDs and GPUs as the tree has them" {
	local j
	j=$(topo two-socket-8gpu)
	jq -e '(.devices | length) == 9 and (.gpus | length) == 8' <<<"$j"
	jq -e '.devices[0] | .name == "mlx5_0" and .provider == "mlx5" and .driver == "mlx5_core" and .node_type == "ca"
		and .fw_ver == "28.39.1002" and .node_guid == "b83f:d203:00a1:0000"
		and .pci.address == "0000:04:00.0" and .pci.numa_node == 0
		and .pci.local_cpulist == "0-55,112-167"
		and .pci.link == {current_speed: "32.0 GT/s PCIe", current_width: 16,
				  max_speed: "32.0 GT/s PCIe", max_width: 16}' <<<"$j"
	jq -e '.devices[0].ports[0] | .port == 1 and .state == "ACTIVE" and .phys_state == "LinkUp" and .physical_state == "LINK_UP"
		and .link_layer == "InfiniBand" and .rate_gbit_per_s == 400 and .width == "4X"
		and .speed == "NDR" and .active_mtu == 4096 and .lid == 1 and .sm_lid == 1
		and .netdev == "ibp04s0" and .addresses == ["10.1.0.1/16"]
		and .gids == [{index: 0, type: "IB", gid: "fe80::b83f:d203:a1:0", netdev: null}]
		and .recommended_gid_index == 0 and .verify == null' <<<"$j"
	# The management NIC: RoCE, its recommended GID the RoCE v2 one of its IPv4 address.
	jq -e '.devices[8].ports[0] | .link_layer == "Ethernet" and .lid == null
		and ([.gids[].type] == ["RoCE v1", "RoCE v2", "RoCE v1", "RoCE v2"])
		and .recommended_gid_index == 3 and .recommended_gid == "::ffff:192.168.10.5"
		and .netdev == "eno1" and .netdev_mtu == 1500' <<<"$j"
	# GPUs from PCI (the NVSwitch is no GPU), names and UUIDs from the capture.
	jq -e '.gpus | all(.pci.vendor == "0x10de" and .name == "NVIDIA H100 80GB HBM3")
		and ([.[].pci.address] | index("0000:cb:00.0") == null)' <<<"$j"
	jq -e '.host.numa_nodes == [{node: 0, cpulist: "0-55,112-167"}, {node: 1, cpulist: "56-111,168-223"}]
		and .host.nvidia_peermem == true and .host.memlock_unlimited == true' <<<"$j"
}

@test "shared-nic: a shared NIC and a cross-socket pairing are flagged; the NIC that is down is not chosen" {
	local j
	j=$(topo shared-nic)
	run jq -r '.rail_plan[] | "\(.gpu) \(.nic) \(.path) \(.shared) \(.shared_with) \(.cross_socket)"' <<<"$j"
	assert_success
	# mlx5_1 is as close to GPU2 as mlx5_0, but its port is down.
	assert_line --index 0 '0 mlx5_0 PIX true [1,2] false'
	assert_line --index 1 '1 mlx5_0 PIX true [0,2] false'
	assert_line --index 2 '2 mlx5_0 SYS true [0,1] true'
	jq -e '[.findings[] | select(.check == "rail_shared")] | length == 1
		and (.[0].message | contains("mlx5_0 serves 3 GPUs"))' <<<"$j"
	jq -e '[.findings[] | select(.check == "rail_cross_socket")] | length == 1
		and (.[0].message | contains("GPU2"))' <<<"$j"
}

@test "shared-nic: rxe0 has no PCI parent: provider rxe, N/A in the matrix, not in the plan" {
	local j
	j=$(topo shared-nic)
	jq -e '.devices[] | select(.name == "rxe0") | .provider == "rxe" and .driver == null
		and .pci == null and .parent_netdev == "d0" and .ports[0].netdev == "d0"
		and .ports[0].recommended_gid_index == 3 and .ports[0].addresses == ["198.18.0.1/24"]' <<<"$j"
	jq -e '[.matrix[] | select(.nic == "rxe0") | .path] == ["N/A", "N/A", "N/A"]' <<<"$j"
	jq -e '[.rail_plan[].nic] | index("rxe0") == null' <<<"$j"
}

@test "shared-nic: doctor findings, each with severity, check, message and fix" {
	local j
	j=$(topo shared-nic)
	jq -e '[.findings[].check] | contains(["memlock", "port_down", "roce_v2_gid", "gpudirect",
		"pcie_link", "mtu", "rail_shared", "rail_cross_socket"])' <<<"$j"
	jq -e '.findings | all((.severity | IN("error", "warning", "info"))
		and (.check | length) > 0 and (.message | length) > 0 and (.fix | length) > 0)' <<<"$j"
	jq -e '.findings[] | select(.check == "port_down") | .message | contains("mlx5_1 port 1 is DOWN")' <<<"$j"
	jq -e '.findings[] | select(.check == "roce_v2_gid") | .message | contains("mlx5_1")' <<<"$j"
	jq -e '.findings[] | select(.check == "memlock") | .severity == "warning"' <<<"$j"
	# hugepages only when asked
	jq -e '[.findings[].check] | index("hugepages") == null' <<<"$j"
	topo shared-nic --hugepages | jq -e '[.findings[].check] | index("hugepages") != null'
	jq -e '.summary == {devices: 3, ports: 3, ports_active: 2, gpus: 3, errors: 0,
		warnings: ([.findings[] | select(.severity == "warning")] | length), infos: 0}' <<<"$j"
}

@test "JSON keys are stable" {
	local j
	j=$(topo two-socket-8gpu --hugepages)
	jq -e 'keys == ["devices", "findings", "gpu_matrix", "gpudirect", "gpus", "host", "matrix",
		"numbering", "nvswitches", "rail_plan", "schema_version", "source", "summary"]' <<<"$j"
	jq -e '.numbering | keys == ["gpus", "nics", "nics_pci_order", "nvml"]' <<<"$j"
	jq -e '.gpu_matrix[0] | keys == ["gpu", "link", "nvlinks", "path", "peer"]' <<<"$j"
	jq -e '.gpudirect[0] | keys == ["advice", "dmabuf", "dmabuf_why", "gpu", "nic", "path", "peermem",
		"ready"]' <<<"$j"
	jq -e '.host | keys == ["hostname", "hugepages", "kernel", "memlock_bytes", "memlock_unlimited",
		"numa_nodes", "nvidia_driver", "nvidia_loaded", "nvidia_peermem"]' <<<"$j"
	jq -e '.devices[0] | keys == ["driver", "fw_ver", "name", "node_guid", "node_type", "parent_netdev",
		"pci", "ports", "provider", "verbs"]' <<<"$j"
	jq -e '.devices[0].pci | keys == ["address", "class", "device", "driver", "link", "local_cpulist",
		"numa_node", "path", "vendor"]' <<<"$j"
	jq -e '.devices[0].ports[0] | keys == ["active_mtu", "addresses", "gids", "lid", "link_layer",
		"netdev", "netdev_mtu", "netdev_state", "phys_state", "physical_state", "port", "rate", "rate_gbit_per_s",
		"recommended_gid", "recommended_gid_index", "sm_lid", "speed", "state", "verify", "width"]' <<<"$j"
	jq -e '.gpus[0] | keys == ["index", "name", "nvml_index", "nvswitch_links", "pci", "uuid"]' <<<"$j"
	jq -e '.matrix[0] | keys == ["gpu", "gpu_pci", "nic", "nic_pci", "path"]' <<<"$j"
	jq -e '.rail_plan[0] | keys == ["best_nic", "best_path", "cross_socket", "gpu", "gpu_numa", "gpu_pci",
		"nic", "nic_numa", "nic_pci", "path", "shared", "shared_by_design", "shared_with"]' <<<"$j"
	jq -e '.findings[0] | keys == ["check", "fix", "message", "severity"]' <<<"$j"
	jq -e '.summary | keys == ["devices", "errors", "gpus", "infos", "ports", "ports_active", "warnings"]' <<<"$j"
}

# The fake NVML of the unit tests, answering from FIXTURE.nvml:
# with_nvml CONFIG CMD...
with_nvml() {
	local lib=${RDMACTL_BUILD_DIR:-$(dirname -- "$RDMACTL")/..}/tests/unit/libfakenvml.so
	[[ -f "$lib" ]] || fail "no fake NVML at $lib: build the unit tests (RDMACTL_TESTS=ON)"
	RDMACTL_NVML_LIB=$lib RDMACTL_FAKE_NVML=$FX/$1 "${@:2}"
}

@test "hex-bus: GPUs numbered in PCI bus order (34 before 3b), NIC order stated" {
	local j
	j=$(topo hex-bus)
	run jq -r '.gpus[] | "\(.index) \(.pci.address)"' <<<"$j"
	assert_output "$(printf '%s\n' '0 0000:34:00.0' '1 0000:3b:00.0' '2 0000:85:00.0' '3 0000:8a:00.0')"
	jq -e '.numbering == {gpus: "pci_bus_id", nics: "name", nics_pci_order: ["mlx5_1", "mlx5_0"], nvml: false}' <<<"$j"
	jq -e '[.devices[].name] == ["mlx5_0", "mlx5_1"] and .nvswitches == 0' <<<"$j"
	jq -e '.gpus | all(.nvml_index == null)' <<<"$j"
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/hex-bus"
	assert_success
	assert_line --partial 'Numbering: GPUs in PCI bus order (as nvidia-smi, and CUDA with CUDA_DEVICE_ORDER=PCI_BUS_ID)'
	assert_line '  NICs by name (mlx5 names follow probe order); in PCI bus order: mlx5_1 mlx5_0'
	assert_line --regexp '^GPU0  NVIDIA A100-SXM4-80GB  GPU-hexb0000-0000-0000-0000-340000000000$'
	# the same tree on a host where names are PCI order says so
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/nvswitch-4gpu"
	assert_line --partial 'which here is also PCI bus order'
}

@test "hex-bus: GPU x GPU matrix, NV4 from NVML, and NVML's order checked against PCI's" {
	local j
	j=$(topo hex-bus)
	jq -e '[.gpu_matrix[] | select(.gpu == 0) | "\(.peer) \(.link)"] == ["1 PIX", "2 SYS", "3 SYS"]' <<<"$j"
	j=$(with_nvml hex-bus.nvml timeout 30 "$RDMACTL" -j probe-topology --sysfs "$FX/hex-bus")
	jq -e '.numbering.nvml == true and ([.gpus[].nvml_index] == [0, 1, 2, 3])' <<<"$j"
	jq -e '.gpus[1].uuid == "GPU-nvml0000-0000-0000-0000-3b0000000000"' <<<"$j"
	jq -e '[.gpu_matrix[] | select(.gpu == 0) | "\(.peer) \(.link) \(.path) \(.nvlinks)"]
		== ["1 NV4 PIX 4", "2 SYS SYS 0", "3 SYS SYS 0"]' <<<"$j"
	jq -e '[.findings[].check] | index("gpu_order") == null' <<<"$j"
	run with_nvml hex-bus.nvml timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/hex-bus"
	assert_success
	assert_line 'GPU x GPU paths'
	assert_line --regexp '^GPU0 +X +NV4 +SYS +SYS *$'
	assert_line --regexp '^GPU3 +SYS +SYS +NV4 +X *$'
	assert_line --partial 'Legend: X itself, NV# joined by # NVLinks'
	j=$(with_nvml hex-bus-misordered.nvml timeout 30 "$RDMACTL" -j probe-topology --sysfs "$FX/hex-bus")
	jq -e '[.gpus[].nvml_index] == [1, 0, 2, 3] and .gpus[0].pci.address == "0000:34:00.0"' <<<"$j"
	jq -e '[.findings[] | select(.check == "gpu_order")] | length == 1
		and (.[0].message | contains("GPU0 (0000:34:00.0) is NVML 1"))' <<<"$j"
}

@test "nvswitch-4gpu: NVSwitches are no GPUs; NV18 through them; the rail plan and GPUDirect" {
	local j
	j=$(topo nvswitch-4gpu)
	jq -e '.nvswitches == 2 and (.gpus | length) == 4
		and ([.gpus[].pci.address] == ["0000:03:00.0", "0000:06:00.0", "0000:83:00.0", "0000:86:00.0"])' <<<"$j"
	jq -e '[.gpu_matrix[] | select(.gpu == 0) | .link] == ["PIX", "SYS", "SYS"]' <<<"$j"
	j=$(with_nvml nvswitch-4gpu.nvml timeout 30 "$RDMACTL" -j probe-topology --sysfs "$FX/nvswitch-4gpu")
	jq -e '.gpu_matrix | length == 12 and all(.link == "NV18" and .nvlinks == 18)' <<<"$j"
	jq -e '.gpus | all(.nvswitch_links == 18 and .name == "NVIDIA H100 80GB HBM3")' <<<"$j"
	run jq -r '.rail_plan[] | "\(.gpu) \(.nic) \(.path) \(.shared) \(.best_path)"' <<<"$j"
	assert_output "$(printf '%s\n' '0 mlx5_0 PIX false PIX' '1 mlx5_1 PIX false PIX' '2 mlx5_2 PIX false PIX' '3 mlx5_3 PIX false PIX')"
	jq -e '[.gpudirect[] | select(.gpu == 0)] | length == 4
		and all(.dmabuf == true and .peermem == false and .ready == true)' <<<"$j"
	jq -e '.gpudirect[] | select(.gpu == 0 and .nic == "mlx5_2") | .path == "SYS" and (.advice | contains("slow"))' <<<"$j"
	run with_nvml nvswitch-4gpu.nvml timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/nvswitch-4gpu"
	assert_line 'NVSwitches on PCI: 2 (not GPUs)'
	assert_line --regexp '^GPU1 +NV18 +X +NV18 +NV18 *$'
}

@test "hex-bus and shared-nic: sharing by design, each GPU's best NIC kept, GPUDirect not ready" {
	local j
	j=$(topo hex-bus)
	jq -e '.rail_plan | all(.shared == true and .shared_by_design == true and .best_nic == .nic)' <<<"$j"
	jq -e '[.rail_plan[].nic] == ["mlx5_1", "mlx5_1", "mlx5_0", "mlx5_0"]' <<<"$j"
	jq -e '[.findings[] | select(.check == "rail_shared") | .message | contains("by design")] == [true, true]' <<<"$j"
	j=$(topo shared-nic)
	jq -e '.gpudirect[] | select(.gpu == 0 and .nic == "mlx5_0") | .ready == false and .dmabuf == false
		and (.dmabuf_why | contains("proprietary")) and (.advice | contains("bounce"))' <<<"$j"
	jq -e '.gpudirect[] | select(.nic == "rxe0") | .path == "N/A" and .ready == false' <<<"$j"
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/shared-nic"
	assert_line --regexp '^  GPU0 +mlx5_0 +PIX +dma-buf no, peermem no, ready no$'
}

@test "human output: devices, the GPU x NIC table, the rail plan, the doctor" {
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/two-socket-8gpu"
	assert_success
	assert_line --regexp '^mlx5_0  provider mlx5 \(driver mlx5_core\)'
	assert_line --regexp '^  port 1: ACTIVE \(LINK_UP\)  InfiniBand  400 Gb/sec \(4X NDR\)  mtu 4096  lid 1'
	assert_line --regexp '^    gid   3  RoCE v2  ::ffff:192\.168\.10\.5  \(eno1\)  <- recommended$'
	assert_line 'GPU x NIC paths'
	assert_line --regexp '^ +mlx5_0 +mlx5_1 +mlx5_2 +mlx5_3 +mlx5_4 +mlx5_5 +mlx5_6 +mlx5_7 +mlx5_8 *$'
	assert_line --regexp '^GPU0 +PIX +PHB +NODE +NODE +SYS +SYS +SYS +SYS +PHB *$'
	assert_line --regexp '^GPU4 +SYS +SYS +SYS +SYS +PIX +PXB +NODE +NODE +SYS *$'
	assert_line --regexp '^  GPU0 +0000:03:00\.0 \(NUMA 0\) -> mlx5_0 0000:04:00\.0 \(NUMA 0\)  PIX$'
	assert_line --partial 'Doctor (1 finding)'
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/shared-nic"
	assert_success
	assert_line --regexp '^  GPU1 .* -> mlx5_0 .*PIX  shared with GPU0, GPU2 \(by design: more GPUs than NICs\)$'
	assert_line --regexp '^  GPU2 .* -> mlx5_0 .*SYS  shared with GPU0, GPU1 \(by design: more GPUs than NICs\)  cross-socket$'
	assert_line --regexp '^  warning memlock: '
	assert_line --regexp '^ +fix: '
}

@test "--capture: a folder and a tarball read back as the tree itself" {
	local dir=$BATS_TEST_TMPDIR/cap tgz=$BATS_TEST_TMPDIR/cap.tar.gz want
	want=$(topo shared-nic | jq -S 'del(.source)')
	run "$RDMACTL" probe-topology --sysfs "$FX/shared-nic" --capture "$dir"
	assert_success
	assert_output --partial "captured $dir"
	run "$RDMACTL" -j probe-topology --sysfs "$FX/shared-nic" --capture "$tgz"
	assert_success
	jq -e --arg p "$tgz" '.capture == $p and .files > 100' <<<"$output"
	assert_equal "$("$RDMACTL" -j probe-topology --sysfs "$dir" | jq -S 'del(.source)')" "$want"
	assert_equal "$("$RDMACTL" -j probe-topology --sysfs "$tgz" | jq -S 'del(.source)')" "$want"
	# The PCIe tree survives as relative links.
	[[ -L "$dir/bus/pci/devices/0000:05:00.0" && -L "$dir/class/infiniband/mlx5_0" ]]
	[[ "$(readlink "$dir/class/infiniband/mlx5_0")" == ../../devices/* ]]
	# Never overwrites.
	run "$RDMACTL" probe-topology --sysfs "$FX/shared-nic" --capture "$tgz"
	assert_failure 1
	assert_output --partial 'not overwriting'
}

@test "--capture of this host reads back with --sysfs" {
	local tgz=$BATS_TEST_TMPDIR/host.tgz
	run timeout 60 "$RDMACTL" probe-topology --capture "$tgz"
	assert_success
	run timeout 30 "$RDMACTL" -j probe-topology --sysfs "$tgz"
	assert_success
	jq -e '.schema_version == 2 and .source.kind == "sysfs" and (.devices | type) == "array"' <<<"$output"
}

@test "bad input: --sysfs /nonexistent" {
	assert_bad_tree /nonexistent 'cannot read the sysfs tree /nonexistent'
}

@test "bad input: an empty folder is no sysfs tree" {
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	assert_bad_tree "$BATS_TEST_TMPDIR/empty" 'is not a sysfs tree'
}

@test "bad input: a device folder without its ports" {
	local t
	t=$(broken noports shared-nic)
	rm -rf "$t/devices/pci0000:00/0000:00:02.0/0000:06:00.0/infiniband/mlx5_1/ports"
	assert_bad_tree "$t" 'mlx5_1 has no ports directory'
}

@test "bad input: a port without its state file, or a FIFO in its place" {
	local t
	t=$(broken nostate shared-nic)
	rm "$t/devices/virtual/infiniband/rxe0/ports/1/state"
	assert_bad_tree "$t" 'rxe0 port 1 has no readable state file'
	mkfifo "$t/devices/virtual/infiniband/rxe0/ports/1/state"
	assert_bad_tree "$t" 'rxe0 port 1 has no readable state file'
}

@test "bad input: a dangling device link, and a link out of the tree" {
	local t
	t=$(broken dangling shared-nic)
	rm -rf "$t/devices/virtual/infiniband/rxe0"
	assert_bad_tree "$t" 'class/infiniband/rxe0 is not a directory'
	t=$(broken escape shared-nic)
	rm -rf "$t/devices/virtual/infiniband/rxe0/ports/1/gids"
	ln -s /etc "$t/devices/virtual/infiniband/rxe0/ports/1/gids"
	assert_bad_tree "$t" 'a symlink leads out of the tree'
}

@test "bad input: a tarball that is none, a plain file" {
	echo junk >"$BATS_TEST_TMPDIR/junk.tar.gz"
	assert_bad_tree "$BATS_TEST_TMPDIR/junk.tar.gz" 'cannot extract'
	assert_bad_tree /etc/hostname 'neither a directory nor a .tar.gz'
}

@test "a capture tarball is named in findings and errors by itself and the path inside it, never by the folder it was extracted to" {
	local tmp=$BATS_TEST_TMPDIR/tmp tree=$BATS_TEST_TMPDIR/nodev
	mkdir -p "$tmp"
	# A tree with no RDMA device: the no_devices finding names where it looked.
	cp -a -- "$FX/shared-nic" "$tree"
	rm -rf -- "$tree/class/infiniband"
	tar -czf "$BATS_TEST_TMPDIR/top.tgz" -C "$BATS_TEST_TMPDIR" nodev
	tar -czf "$BATS_TEST_TMPDIR/flat.tar.gz" -C "$tree" .
	TMPDIR=$tmp run timeout 30 "$RDMACTL" -j probe-topology --sysfs "$BATS_TEST_TMPDIR/top.tgz"
	assert_success
	refute_output --partial "$tmp"
	jq -e --arg w "no RDMA devices found under $BATS_TEST_TMPDIR/top.tgz:/nodev/class/infiniband" \
		'any(.findings[]; .check == "no_devices" and .message == $w)' <<<"$output"
	TMPDIR=$tmp run timeout 30 "$RDMACTL" probe-topology --sysfs "$BATS_TEST_TMPDIR/flat.tar.gz"
	assert_success
	refute_output --partial "$tmp"
	assert_output --partial "no RDMA devices found under $BATS_TEST_TMPDIR/flat.tar.gz:/class/infiniband"
	# An error of the tree names the tarball too.
	rm -rf -- "$tree"
	cp -a -- "$FX/shared-nic" "$tree"
	rm -rf -- "$tree/class/infiniband/mlx5_0/ports"
	tar -czf "$BATS_TEST_TMPDIR/bad.tgz" -C "$tree" .
	TMPDIR=$tmp run timeout 30 "$RDMACTL" probe-topology --sysfs "$BATS_TEST_TMPDIR/bad.tgz"
	assert_failure 1
	refute_output --partial "$tmp"
	assert_output --partial "($BATS_TEST_TMPDIR/bad.tgz:/class/infiniband/mlx5_0/ports)"
	# The check sees a path when one is there: the tree as a folder in $tmp.
	mv -- "$tree" "$tmp/"
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$tmp/nodev"
	assert_failure 1
	assert_output --partial "$tmp/nodev/class/infiniband/mlx5_0/ports"
}

@test "--verify with no port to verify exits 1, and a finding says no port was verified" {
	[[ -z $(ls -A /sys/class/infiniband 2>/dev/null) ]] ||
		skip "this host has RDMA devices (tests/rxe/probe-topology.bats verifies them)"
	run timeout 30 "$RDMACTL" -j probe-topology --verify
	assert_failure 1
	jq -e '.error.code == "ENODEV"
		and any(.findings[]; .check == "verify" and .severity == "error"
			and .message == "no port was verified: no RDMA device")' <<<"$output"
	run timeout 30 "$RDMACTL" probe-topology --verify
	assert_failure 1
	assert_line --regexp "^  error +verify: no port was verified: no RDMA device\$"
	assert_line --partial "rdmactl: no port was verified"
	# Without --verify nothing was promised: the same host exits 0.
	run timeout 30 "$RDMACTL" -j probe-topology
	assert_success
	jq -e 'all(.findings[]; .check != "verify")' <<<"$output"
}

@test "usage errors exit 2" {
	run "$RDMACTL" probe-topology --sysfs "$FX/shared-nic" --verify
	assert_failure 2
	assert_output --partial '--verify needs the live host'
	run "$RDMACTL" probe-topology --verify-size 1M
	assert_failure 2
	run "$RDMACTL" probe-topology --verify --verify-size 0
	assert_failure 2
	run "$RDMACTL" probe-topology --capture "$BATS_TEST_TMPDIR/x" --verify
	assert_failure 2
	run "$RDMACTL" probe-topology extra
	assert_failure 2
	run "$RDMACTL" probe-topology --bogus
	assert_failure 2
}

@test "-d shows one device; an unknown one fails" {
	run "$RDMACTL" -j -d mlx5_3 probe-topology --sysfs "$FX/two-socket-8gpu"
	assert_success
	jq -e '[.devices[].name] == ["mlx5_3"] and (.matrix | length) == 72' <<<"$output"
	run "$RDMACTL" -d mlx5_9 probe-topology --sysfs "$FX/two-socket-8gpu"
	assert_failure 1
	assert_output --partial "no RDMA device named 'mlx5_9'"
}

@test "this host: a valid result and exit 0, with or without RDMA devices" {
	run timeout 60 "$RDMACTL" -j probe-topology
	assert_success
	jq -e '.schema_version == 2 and .source == {kind: "live", path: "/sys"}
		and (.devices | type) == "array" and (.findings | type) == "array"' <<<"$output"
	if jq -e '.devices == []' <<<"$output" >/dev/null; then
		jq -e '[.findings[].check] | index("no_devices") != null' <<<"$output"
	fi
	run timeout 60 "$RDMACTL" probe-topology
	assert_success
	assert_output --partial 'Source: live /sys'
	assert_output --partial 'Summary:'
}

@test "the help and the man page's OPTIONS name every option, and no other" {
	local man=$BATS_TEST_DIRNAME/../../man/rdmactl-probe-topology.8 opt documented
	run "$RDMACTL" probe-topology --help
	assert_success
	for opt in sysfs capture verify verify-size hugepages fabrics export gpu; do
		assert_output --partial "--$opt"
		grep -qF -- "\\-\\-${opt//-/\\-}" "$man" || fail "$man does not mention --$opt"
	done
	documented=$(awk '/^\.SH/ { on = ($0 ~ /^\.SH "?OPTIONS"?$/); next } on' "$man" |
		grep -oE '\\-\\-[a-z0-9]+(\\-[a-z0-9]+)*' | sed 's/\\-/-/g; s/^--//' | sort -u | xargs)
	assert_equal "$documented" "capture export fabrics gpu hugepages sysfs verify verify-size"
	grep -q '^\.TH RDMACTL\\-PROBE\\-TOPOLOGY 8 ' "$man"
	assert_equal "$(head -1 "$man")" '.\" SPDX-License-Identifier: MIT'
	if command -v groff >/dev/null; then
		run groff -man -ww -z "$man"
		assert_success
		assert_output ""
	fi
}

# --export: the rail plan as other tools' settings (issue: the plan beyond rdmactl)
@test "--export nccl: the sourced fragment gives each local rank its rail's NIC, as the report's plan says" {
	local frag plan g got
	frag=$BATS_TEST_TMPDIR/nccl.sh
	timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/two-socket-8gpu" --export nccl >"$frag"
	plan=$(topo two-socket-8gpu)
	for g in 0 1 2 3 4 5 6 7; do
		got=$(env -u RDMACTL_GPU LOCAL_RANK="$g" sh -c '. "$1"; printf %s "$NCCL_IB_HCA"' sh "$frag")
		assert_equal "$got" "=$(jq -r --argjson g "$g" '.rail_plan[] | select(.gpu == $g) | .nic' <<<"$plan"):1"
	done
	# RDMACTL_GPU wins over LOCAL_RANK
	got=$(RDMACTL_GPU=5 LOCAL_RANK=1 sh -c '. "$1"; printf %s "$NCCL_IB_HCA"' sh "$frag")
	assert_equal "$got" "=mlx5_5:1"
	# a rank with no GPU of this host: told on stderr, nothing exported
	run env -u RDMACTL_GPU LOCAL_RANK=9 sh -c '. "$1"; printf "[%s]" "${NCCL_IB_HCA-unset}"' sh "$frag"
	assert_success
	assert_output --partial 'set RDMACTL_GPU or LOCAL_RANK'
	assert_output --partial '[unset]'
}

@test "--export ucx --gpu N: one KEY=VALUE line; the shared NIC of shared-nic for GPUs 0 to 2" {
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/two-socket-8gpu" --export ucx --gpu 2
	assert_success
	assert_output "UCX_NET_DEVICES=mlx5_2:1"
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/shared-nic" --export nccl --gpu 1
	assert_success
	assert_output "NCCL_IB_HCA==mlx5_0:1"
	run timeout 30 "$RDMACTL" -j probe-topology --sysfs "$FX/shared-nic" --export ucx
	assert_success
	jq -e '.schema_version == 2 and .export == "ucx" and .variable == "UCX_NET_DEVICES"
		and ([.gpus[].value] == ["mlx5_0:1", "mlx5_0:1", "mlx5_0:1"])
		and ([.gpus[].port_active] | all) and ([.gpus[].path] == ["PIX", "PIX", "SYS"])' <<<"$output"
}

@test "--export mooncake: each GPU's rail first, then the other NICs with an active port (a port that is down is left out)" {
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/shared-nic" --export mooncake
	assert_success
	jq -e '. == {"cuda:0": [["mlx5_0"], ["rxe0"]], "cuda:1": [["mlx5_0"], ["rxe0"]], "cuda:2": [["mlx5_0"], ["rxe0"]]}' <<<"$output"
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/hex-bus" --export mooncake --gpu 0
	assert_success
	jq -e 'keys == ["cuda:0"] and .["cuda:0"][0] == ["mlx5_1"] and (.["cuda:0"][1] | index("mlx5_1") == null)' <<<"$output"
	run timeout 30 "$RDMACTL" -j probe-topology --sysfs "$FX/hex-bus" --export mooncake
	assert_success
	jq -e '.export == "mooncake" and .variable == "MC_CUSTOM_TOPO_JSON" and (.matrix | keys | length) == 4' <<<"$output"
}

@test "--export: a bad kind or --gpu without --export is a usage error; no such GPU, or no GPU at all, exits 1 naming it" {
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/shared-nic" --export nvshmem
	assert_failure 2
	assert_output --partial "invalid --export 'nvshmem': expected nccl, ucx or mooncake"
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/shared-nic" --gpu 1
	assert_failure 2
	assert_output --partial -- "--gpu goes with --export"
	run timeout 30 "$RDMACTL" probe-topology --export nccl --verify
	assert_failure 2
	assert_output --partial -- "--export prints the plan only"
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/shared-nic" --export nccl --gpu 3
	assert_failure 1
	assert_output --partial "no GPU 3 (3 GPUs found"
	run timeout 30 "$RDMACTL" -j probe-topology --sysfs "$FX/shared-nic" --export nccl --gpu 3
	assert_failure 1
	jq -e '.error.message | contains("no GPU 3")' <<<"$output"
	local gpus
	gpus=$(timeout 60 "$RDMACTL" -j probe-topology | jq '.summary.gpus')
	[[ $gpus == 0 ]] || skip "this host has $gpus GPUs (the no-GPU case needs a host without)"
	# no GPU: --gpu N names that; without it the plan is by NUMA node, and
	# a host without RDMA devices either is told what to load
	run timeout 60 "$RDMACTL" probe-topology --export nccl --gpu 0
	assert_failure 1
	assert_output --partial "probe-topology --export --gpu 0: this host has no GPU"
	local devs
	devs=$(timeout 60 "$RDMACTL" -j probe-topology | jq '.devices | length')
	[[ $devs == 0 ]] || skip "this host has RDMA devices (covered by tests/rxe/probe-topology.bats)"
	run timeout 60 "$RDMACTL" probe-topology --export nccl
	assert_failure 1
	assert_output --partial "no RDMA device under /sys/class/infiniband"
	refute_output --partial "binds GPUs"
}

@test "--export on a host without GPUs (CPU-only, SoftRoCE): the rail plan by NUMA node, rxe included" {
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/cpu-only" --export ucx
	assert_success
	assert_line "0) export UCX_NET_DEVICES='mlx5_0:1' ;; # NUMA node 0"
	assert_line "1) export UCX_NET_DEVICES='mlx5_1:1' ;; # NUMA node 1"
	assert_line "*) export UCX_NET_DEVICES='mlx5_0:1,mlx5_1:1,rxe0:1' ;; # any other node: every NIC that is up"
	# the fragment, sourced, sets each node's value
	local frag=$BATS_TEST_TMPDIR/ucx.sh
	printf '%s\n' "$output" >"$frag"
	run env RDMACTL_NUMA=1 sh -c '. "$1"; echo "$UCX_NET_DEVICES"' _ "$frag"
	assert_output mlx5_1:1
	run env -u RDMACTL_NUMA sh -c '. "$1"; echo "$UCX_NET_DEVICES"' _ "$frag"
	assert_output mlx5_0:1,mlx5_1:1,rxe0:1
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/softroce" --export nccl
	assert_success
	assert_line "0) export NCCL_IB_HCA='=rxe0:1,rxe1:1' ;; # NUMA node 0"
	run timeout 30 "$RDMACTL" -j probe-topology --sysfs "$FX/cpu-only" --export nccl
	assert_success
	jq -e '.gpus == [] and .numa_nodes == [{"node": 0, "nics": ["mlx5_0"], "value": "=mlx5_0:1"},
		{"node": 1, "nics": ["mlx5_1"], "value": "=mlx5_1:1"}]
		and .any_node == "=mlx5_0:1,mlx5_1:1,rxe0:1"' <<<"$output"
	run timeout 30 "$RDMACTL" -j probe-topology --sysfs "$FX/cpu-only" --export mooncake
	assert_success
	jq -e '.matrix == {"cpu:0": [["mlx5_0"], ["mlx5_1", "rxe0"]], "cpu:1": [["mlx5_1"], ["mlx5_0", "rxe0"]]}' <<<"$output"
	run timeout 30 "$RDMACTL" probe-topology --sysfs "$FX/softroce" --export ucx --gpu 0
	assert_failure 1
	assert_output --partial "this host has no GPU"
}

# rows OFFERS: "PROVIDER DOMAIN FI_EP_TYPE" a line, sorted, of libfabric's
# offers as fi_info lists them (OFFERS empty) or as the document on stdin
# lists them (OFFERS "doc").
rows() {
	if [[ -n ${1:-} ]]; then
		jq -r '.fabrics.list[] | .provider as $p | .domain as $d
			| .endpoints[] | "\($p) \($d) FI_EP_\(ascii_upcase)"'
	else
		fi_info | awk '/^provider:/ { p = $2 } /^ *domain:/ { d = $2 } /^ *type:/ { print p, d, $2 }'
	fi | sort -u
}

@test "--fabrics lists what fi_info lists, a provider and domain a row, each with the --fabric that opens it where rdmactl can" {
	command -v fi_info >/dev/null || fail "no fi_info: tests/deps.sh installs libfabric-bin"
	local doc want
	doc=$(timeout 30 "$RDMACTL" -j probe-topology --fabrics)
	want=$(rows)
	[[ -n $want ]] || fail "fi_info lists nothing"
	run rows doc <<<"$doc"
	assert_output "$want"
	# the same under FI_PROVIDER, which libfabric reads: tcp, and tcp;ofi_rxm over it
	want=$(FI_PROVIDER=tcp rows)
	run rows doc <<<"$(FI_PROVIDER=tcp timeout 30 "$RDMACTL" -j probe-topology --fabrics)"
	assert_output "$want"
	[[ $output == *"tcp;ofi_rxm lo FI_EP_RDM"* && $output != *sockets* ]] || fail "FI_PROVIDER=tcp: $output"
	# tcp;ofi_rxm's RDM endpoint opens with --fabric ofi:tcp, atomics and
	# all (ofi.bats moves data over it); plain tcp's MSG endpoint is none of
	# rdmactl's: no option
	jq -e '.fabrics | .offers == (.list | length) and .left_out == 0
		and (.list[] | select(.provider == "tcp;ofi_rxm" and .domain == "lo")
			| .fabric_option == "ofi:tcp" and .rma and .atomic and .endpoints == ["rdm"])
		and (.list[] | select(.provider == "tcp" and .domain == "lo")
			| .fabric_option == null and .endpoints == ["msg"])
		and (.libfabric | test("^1\\.[0-9]+$"))' <<<"$doc"
	# no RDMA device on this host: auto picks nothing, and no row has a NIC
	[[ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]] ||
		jq -e '.fabrics.auto == null and all(.fabrics.list[]; .nic == null)' <<<"$doc"
	# the text: a row a pair, the option quoted where the shell needs it
	run timeout 30 "$RDMACTL" probe-topology --fabrics
	assert_success
	assert_line --regexp '^  tcp;ofi_rxm +lo +- +rdm +rma atomic imm +--fabric ofi:tcp$'
	assert_line --regexp '^  tcp +lo +- +msg +rma imm$'
}

@test "--fabrics: a libfabric that cannot be opened is named, exit 1; with --sysfs, --capture or --export a usage error" {
	local lib=$BATS_TEST_TMPDIR/lib
	mkdir "$lib"
	: >"$lib/libfabric.so.1" # not a library: dlopen refuses it
	run env LD_LIBRARY_PATH="$lib" timeout 30 "$RDMACTL" probe-topology --fabrics
	assert_failure 1
	assert_output --partial "--fabrics: cannot open libfabric.so.1 (install libfabric1)"
	# without --fabrics it is not opened at all
	run env LD_LIBRARY_PATH="$lib" timeout 30 "$RDMACTL" probe-topology
	assert_success
	run timeout 30 "$RDMACTL" probe-topology --fabrics --sysfs "$FX/softroce"
	assert_failure 2
	assert_output --partial "--fabrics lists this host's libfabric: it goes without --sysfs and --capture"
	run timeout 30 "$RDMACTL" probe-topology --fabrics --export nccl
	assert_failure 2
	assert_output --partial "--export prints the plan only: it goes without --capture, --verify and --fabrics"
}
