#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# rdmactl probe-topology on a live SoftRoCE device. These run inside the
# guest that tests/vm/run.sh boots (rxe0 on dummy d0, 198.18.0.1/24, MTU 9000):
#   tests/vm/run.sh -- bats tests/rxe/probe-topology.bats
# What rdmactl reports is checked against rdma(8) and ibv_devinfo(1), parsed
# here, not against rdmactl itself. Outside the guest every test skips.

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

setup() {
	[[ -n "${RDMACTL_VM:-}" ]] || skip "needs the SoftRoCE guest (tests/vm/run.sh)"
	RDMACTL=${RDMACTL:-$BATS_TEST_DIRNAME/../../build/cli/rdmactl}
	[[ -x "$RDMACTL" ]] || fail "no rdmactl binary at $RDMACTL: build first, or set RDMACTL"
	DEV=${RDMACTL_VM_DEV:-rxe0}
	ADDR=${RDMACTL_VM_ADDR:-198.18.0.1}
}

# rdmactl's JSON for the live host: probe [OPTIONS...]
probe() { timeout 120 "$RDMACTL" -j probe-topology "$@"; }

# The port object of $DEV port 1 in the JSON $1.
port_of() { jq -c --arg d "$DEV" '.devices[] | select(.name == $d) | .ports[0]' <<<"$1"; }

# "INDEX GID, TYPE" for every GID ibv_devinfo lists on port 1 of $DEV.
devinfo_gids() {
	ibv_devinfo -v -d "$DEV" -i 1 |
		sed -n 's/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*\(.*\)$/\1 \2/p'
}

# A field of ibv_devinfo -v: devinfo_field NAME -> its first word
devinfo_field() {
	ibv_devinfo -v -d "$DEV" -i 1 | sed -n "s/^[[:space:]]*$1:[[:space:]]*\([^[:space:]]*\).*/\1/p" | head -n 1
}

@test "the rxe device and its port, as rdma link shows them" {
	local j link
	j=$(probe)
	link=$(rdma -j link show "$DEV/1")
	jq -e --arg d "$DEV" '.devices[] | select(.name == $d) | .provider == "rxe" and .pci == null
		and .parent_netdev == "d0" and .verbs == true and .node_type == "ca"' <<<"$j"
	assert_equal "$(port_of "$j" | jq -r .state)" "$(jq -r '.[0].state' <<<"$link")"
	assert_equal "$(port_of "$j" | jq -r .netdev)" "$(jq -r '.[0].netdev' <<<"$link")"
	[[ "$(jq -r '.[0].physical_state' <<<"$link")" == LINK_UP ]]
	assert_equal "$(port_of "$j" | jq -r .phys_state)" LinkUp
	# rdma's and ibv_devinfo's spellings: LINK_UP, and fw_ver 0.0.0 where sysfs has none
	assert_equal "$(port_of "$j" | jq -r .physical_state)" "$(jq -r '.[0].physical_state' <<<"$link")"
	assert_equal "$(jq -r --arg d "$DEV" '.devices[] | select(.name == $d) | .fw_ver' <<<"$j")" \
		"$(ibv_devinfo -d "$DEV" | sed -n 's/^[[:space:]]*fw_ver:[[:space:]]*//p')"
	port_of "$j" | jq -e '.port == 1 and .link_layer == "Ethernet" and .lid == null and .netdev_mtu == 9000'
	jq -e '.source.kind == "live" and .summary.devices >= 1' <<<"$j"
}

@test "completion offers the live devices, as rdma link names them" {
	local want
	want=$(rdma -j link show | jq -r '.[].ifname' | sort -u)
	[[ -n "$want" ]] || fail "rdma link shows no device"
	run "$RDMACTL" __complete -d ""
	assert_success
	assert_equal "$(sort <<<"$output")" "$want"
	run "$RDMACTL" __complete --device "${DEV:0:2}"
	assert_line "$DEV"
}

@test "node GUID, active MTU and link layer agree with ibv_devinfo" {
	local j
	j=$(probe)
	assert_equal "$(jq -r --arg d "$DEV" '.devices[] | select(.name == $d) | .node_guid' <<<"$j")" \
		"$(ibv_devinfo -v -d "$DEV" | sed -n 's/^[[:space:]]*node_guid:[[:space:]]*//p')"
	assert_equal "$(port_of "$j" | jq -r .active_mtu)" "$(devinfo_field active_mtu)"
	assert_equal "$(port_of "$j" | jq -r .link_layer)" "$(devinfo_field link_layer)"
	assert_equal "$(port_of "$j" | jq -r .width)" "$(devinfo_field active_width)"
	assert_equal "$(port_of "$j" | jq -r .active_mtu)" 4096
}

@test "the GID table, types included, is the one ibv_devinfo lists" {
	local j want got
	j=$(probe)
	want=$(devinfo_gids)
	got=$(port_of "$j" | jq -r '.gids[] | "\(.index) \(.gid), \(.type)"')
	[[ -n "$want" ]] || fail "ibv_devinfo lists no GID on $DEV"
	assert_equal "$got" "$want"
	port_of "$j" | jq -e '.gids | all(.netdev == "d0")'
}

@test "the recommended GID is the RoCE v2 one of the guest's IPv4 address" {
	local j idx
	j=$(probe)
	idx=$(devinfo_gids | sed -n "s/^\([0-9]*\) ::ffff:${ADDR//./\\.}, RoCE v2\$/\1/p" | head -n 1)
	[[ -n "$idx" ]] || fail "ibv_devinfo shows no RoCE v2 GID for $ADDR"
	assert_equal "$(port_of "$j" | jq -r .recommended_gid_index)" "$idx"
	assert_equal "$(port_of "$j" | jq -r .recommended_gid)" "::ffff:$ADDR"
	[[ -z "${RDMACTL_VM_GID_INDEX:-}" ]] || assert_equal "$idx" "$RDMACTL_VM_GID_INDEX"
	run timeout 120 "$RDMACTL" -d "$DEV" probe-topology
	assert_success
	assert_line --regexp "^    gid +$idx  RoCE v2  ::ffff:${ADDR//./\\.}  \\(d0\\)  <- recommended\$"
}

@test "the netdev's addresses come from the live host" {
	local j
	j=$(probe)
	port_of "$j" | jq -e --arg a "$ADDR/24" '.addresses | index($a) != null'
	port_of "$j" | jq -e '.netdev_state | IN("up", "unknown")'
}

@test "--verify carries traffic on the live port and reports a rate" {
	local j
	run timeout 120 "$RDMACTL" -d "$DEV" -j probe-topology --verify
	assert_success
	j=$output
	port_of "$j" | jq -e '.verify.ok == true and .verify.written_bytes == 8388608 and .verify.bytes == 1048576 and .verify.error == null
		and .verify.seconds > 0 and .verify.gbit_per_s > 0'
	assert_equal "$(port_of "$j" | jq -r .verify.gid_index)" "$(port_of "$j" | jq -r .recommended_gid_index)"
	jq -e '[.findings[] | select(.check == "verify")] == [] and .error == null' <<<"$j"
	run timeout 120 "$RDMACTL" -d "$DEV" probe-topology --verify --verify-size 2M
	assert_success
	assert_line --regexp '^    verify: yes, 2MiB written in [0-9.]+ s \([0-9.]+ Gb/s\), 1MiB checked, gid index [0-9]+$'
	# Less than the buffer: all of it checked, and nothing past it written.
	run timeout 120 "$RDMACTL" -d "$DEV" -j probe-topology --verify --verify-size 4K
	assert_success
	port_of "$output" | jq -e '.verify.ok == true and .verify.written_bytes == 4096 and .verify.bytes == 4096'
}

@test "--verify, the negative: a port whose loopback data arrives wrong fails, named, exit 1" {
	# The hook flips the first byte of the second 64 KiB chunk written.
	RDMACTL_TEST_TOPO_VERIFY_CORRUPT=1 run timeout 120 "$RDMACTL" -d "$DEV" -j probe-topology --verify \
		--verify-size 256K
	assert_failure 1
	port_of "$output" | jq -e '.verify.ok == false and (.verify.error
		| startswith("the written data does not match what was sent: byte 65536 (chunk 1) is 0x"))'
	jq -e --arg d "$DEV" '.error.message == "1 port failed the loopback verification (see the findings)"
		and ([.findings[] | select(.check == "verify" and .severity == "error")] | length == 1
			and (.[0].message | startswith("\($d) port 1 carried no loopback traffic: the written data does not match")))' <<<"$output"
	RDMACTL_TEST_TOPO_VERIFY_CORRUPT=1 run timeout 120 "$RDMACTL" -d "$DEV" probe-topology --verify --verify-size 4K
	assert_failure 1
	assert_line --regexp '^    verify: no'
	assert_output --partial "rdmactl: 1 port failed the loopback verification"
}

@test "a doctor finding about memlock under ulimit -l 64" {
	run bash -c 'ulimit -l 64 && exec timeout 120 "$0" -j probe-topology' "$RDMACTL"
	assert_success
	jq -e '.host.memlock_bytes == 65536 and .host.memlock_unlimited == false' <<<"$output"
	jq -e '[.findings[] | select(.check == "memlock")] | length == 1
		and (.[0].message | contains("64 KiB")) and (.[0].fix | contains("ulimit -l"))' <<<"$output"
	# Unlimited, as the guest runs its tests: no such finding.
	run bash -c 'ulimit -l unlimited && exec timeout 120 "$0" -j probe-topology' "$RDMACTL"
	assert_success
	jq -e '[.findings[].check] | index("memlock") == null' <<<"$output"
}

@test "a healthy rxe port: no port, GID or MTU finding about it" {
	local j
	j=$(probe)
	jq -e --arg d "$DEV" '[.findings[] | select((.check | IN("port_down", "roce_v2_gid", "mtu", "provider", "device"))
		and (.message | contains($d)))] == []' <<<"$j"
}

# bats test_tags=plain-only
@test "a capture of the guest reads back with the same device" {
	local tgz=$BATS_TEST_TMPDIR/guest.tgz live back
	run timeout 120 "$RDMACTL" probe-topology --capture "$tgz"
	assert_success
	live=$(probe | jq -S --arg d "$DEV" '.devices[] | select(.name == $d) | del(.verbs)')
	back=$(timeout 120 "$RDMACTL" -j probe-topology --sysfs "$tgz" |
		jq -S --arg d "$DEV" '.devices[] | select(.name == $d) | del(.verbs)')
	assert_equal "$back" "$live"
}

@test "register uses the GID that probe-topology recommends, on the live port" {
	local j out pid i gid=
	j=$(probe)
	out=$BATS_TEST_TMPDIR/register.out
	# A wildcard listen on the device: register picks its GID itself.
	"$RDMACTL" -d "$DEV" -j register --listen "0.0.0.0:18999" --size 64K >"$out" 2>"$out.err" &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		gid=$(jq -r 'select(.event == "region") | .gid_index' "$out" 2>/dev/null | head -n 1)
		[[ -z "$gid" ]] || break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" || true
	[[ -n "$gid" ]] || fail "register printed no region: $(cat "$out.err")"
	assert_equal "$gid" "$(port_of "$j" | jq -r .recommended_gid_index)"
}

@test "--export ucx, nccl and mooncake work on the SoftRoCE guest (no GPU): the rail plan by NUMA node, rxe in it" {
	local devs
	devs=$(rdma -j link show | jq -r '[.[] | select(.state == "ACTIVE") | "\(.ifname):\(.port)"] | join(",")')
	[[ $devs == *"$DEV:1"* ]] || fail "rdma link shows no active $DEV: $devs"
	run timeout 60 "$RDMACTL" probe-topology --export ucx
	assert_success
	assert_line "*) export UCX_NET_DEVICES='$devs' ;; # any other node: every NIC that is up"
	# sourced, as a job's wrapper would, on the guest's one node
	run sh -c "$output"'
		echo "$UCX_NET_DEVICES"'
	assert_output "$devs"
	run timeout 60 "$RDMACTL" -j probe-topology --export nccl
	assert_success
	jq -e --arg v "=$devs" '.gpus == [] and .any_node == $v and (.numa_nodes | all(.value == $v))' <<<"$output"
	run timeout 60 "$RDMACTL" -j probe-topology --export mooncake
	assert_success
	jq -e --arg d "$DEV" '.matrix | to_entries | length >= 1 and all(.key | test("^cpu:[0-9]+$"))
		and all(.value[0] | index($d))' <<<"$output"
}

# rdmactl's side (offers.c, topo_fabrics.c) runs under the sanitizers in the
# cli-asan tier; here only libfabric's verbs provider is new
# bats test_tags=plain-only
@test "--fabrics on rxe: libfabric's verbs provider on the device, its RDM endpoint (verbs;ofi_rxm) opened by --fabric ofi:verbs, as fi_info lists them; auto picks verbs" {
	local j
	j=$(probe --fabrics)
	# the device's rows, as fi_info -p verbs lists them
	run sort -u <<<"$(jq -r --arg d "$DEV" '.fabrics.list[] | select(.provider | startswith("verbs"))
		| select(.nic == $d) | .provider as $p | .domain as $m | .endpoints[] | "\($p) \($m) \(.)"' <<<"$j")"
	local want
	want=$(fi_info -p verbs | awk -v d="$DEV" '/^provider:/ { p = $2 } /^ *domain:/ { m = $2 }
		/^ *type:/ { t = tolower($2); sub(/^fi_ep_/, "", t); if (m == d || index(m, d "-") == 1) print p, m, t }' | sort -u)
	[[ -n $want ]] || fail "fi_info -p verbs lists nothing on $DEV"
	assert_output "$want"
	jq -e --arg d "$DEV" '.fabrics.auto == "verbs"
		and (.fabrics.list[] | select(.provider == "verbs;ofi_rxm" and .domain == $d)
			| .nic == $d and .endpoints == ["rdm"] and .fabric_option == "ofi:verbs" and .rma)
		and (.fabrics.list[] | select(.provider == "verbs" and .domain == $d)
			| .nic == $d and (.endpoints | index("msg")) and .fabric_option == null)' <<<"$j"
	# the netdev's tcp rows name the device too
	jq -e --arg d "$DEV" '[.fabrics.list[] | select(.provider == "tcp;ofi_rxm" and .nic == $d)] | length == 1' <<<"$j"
	run timeout 120 "$RDMACTL" probe-topology --fabrics
	assert_success
	assert_line --regexp "^  verbs;ofi_rxm +$DEV +$DEV +rdm .*--fabric ofi:verbs\$"
	assert_line --regexp '^--fabric auto picks verbs \([0-9]+ RDMA devices?\)$'
}
