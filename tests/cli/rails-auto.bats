#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# --rails auto|gpu:N|numa:N (register, write, read, kvxfer serve and send):
# the devices of probe-topology's rail plan, read from the fixture trees of
# tests/fixtures/make-sysfs.sh through RDMACTL_SYSFS. The plan is said on
# stderr before any device is opened; this host has none, so each run ends
# at the device (exit 1) after it. The data path: tests/rxe/zy-rails.bats.

load helpers

setup_file() {
	export FX=$BATS_FILE_TMPDIR/fixtures
	bash "$BATS_TEST_DIRNAME/../fixtures/make-sysfs.sh" "$FX"
}

setup() {
	require_binary
	unset RDMACTL_GPU LOCAL_RANK CUDA_VISIBLE_DEVICES RDMACTL_SYSFS RDMACTL_TOKEN
	out=$BATS_TEST_TMPDIR/out
}

# plan FIXTURE [ENV=VALUE...] -- ARGS...: rdmactl ARGS on the fixture's tree.
plan() {
	local tree=$FX/$1
	shift
	local envs=()
	while [[ $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	run env RDMACTL_SYSFS="$tree" "${envs[@]}" "$RDMACTL" "$@"
}

@test "--rails numa:N: the plan's NICs of the node's GPUs, never the management NIC; several rails" {
	plan two-socket-8gpu -- write --rails numa:1 --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "write: --rails numa:1: the rail plan of NUMA node 1: mlx5_4,mlx5_5,mlx5_6,mlx5_7 (4 rails)"
	# four rails to one server address: the striped path, which names its rail
	assert_output --partial "rail 1"
	plan two-socket-8gpu -- read --rails numa:0 --out "$out" 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "the rail plan of NUMA node 0: mlx5_0,mlx5_1,mlx5_2,mlx5_3 (4 rails)"
	# mlx5_8 sits on node 0 too, but the plan gives it no GPU
	refute_output --partial mlx5_8
}

@test "--rails auto: the GPU of RDMACTL_GPU, else LOCAL_RANK through CUDA_VISIBLE_DEVICES: one rail, no stripes" {
	plan two-socket-8gpu RDMACTL_GPU=3 -- read --rails auto --out "$out" 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "read: --rails auto: the rail plan of GPU 3 (RDMACTL_GPU): mlx5_3 (1 rail)"
	# one rail is the one-client path: no rail named in its error
	refute_output --partial "rail 1"
	plan two-socket-8gpu LOCAL_RANK=1 CUDA_VISIBLE_DEVICES=6,7 -- write --rails auto --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "GPU 7 (LOCAL_RANK 1 through CUDA_VISIBLE_DEVICES): mlx5_7 (1 rail)"
	plan two-socket-8gpu LOCAL_RANK=5 -- write --rails auto --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "GPU 5 (LOCAL_RANK 5): mlx5_5 (1 rail)"
	# RDMACTL_GPU before LOCAL_RANK
	plan two-socket-8gpu RDMACTL_GPU=2 LOCAL_RANK=5 -- write --rails auto --pattern zero --size 4K 192.0.2.1/kv
	assert_output --partial "GPU 2 (RDMACTL_GPU): mlx5_2 (1 rail)"
	# three GPUs share one NIC in shared-nic: each of them gets that NIC
	plan shared-nic -- write --rails gpu:1 --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "the rail plan of GPU 1: mlx5_0 (1 rail)"
}

@test "--rails auto without a GPU: the node whose CPUs this process runs on" {
	local tree=$BATS_TEST_TMPDIR/swapped cpus
	cpus=$(taskset -pc $$ | sed 's/.*: //')
	# this process on node 0's CPUs, then the same tree with node 1 holding them
	cp -a "$FX/two-socket-8gpu" "$tree"
	echo "$cpus" >"$tree/devices/system/node/node0/cpulist"
	echo 100000-100001 >"$tree/devices/system/node/node1/cpulist"
	run env RDMACTL_SYSFS="$tree" "$RDMACTL" write --rails auto --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "the rail plan of NUMA node 0 (this process's CPUs): mlx5_0,mlx5_1,mlx5_2,mlx5_3 (4 rails)"
	echo 100000-100001 >"$tree/devices/system/node/node0/cpulist"
	echo "$cpus" >"$tree/devices/system/node/node1/cpulist"
	run env RDMACTL_SYSFS="$tree" "$RDMACTL" write --rails auto --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "the rail plan of NUMA node 1 (this process's CPUs): mlx5_4,mlx5_5,mlx5_6,mlx5_7 (4 rails)"
	# CPUs on both nodes: every node's plan
	echo "${cpus%%[,-]*}" >"$tree/devices/system/node/node0/cpulist"
	echo "${cpus#*[,-]}" >"$tree/devices/system/node/node1/cpulist"
	run env RDMACTL_SYSFS="$tree" "$RDMACTL" write --rails auto --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "the rail plan of every NUMA node"
	assert_output --partial "(8 rails)"
}

@test "register --rails: each rail listens on its device's address at --listen's port" {
	plan two-socket-8gpu -- register --rails numa:1 -S 4K --listen 0.0.0.0:7600
	assert_failure 1
	assert_output --partial "register: --rails numa:1: listening on 10.1.4.1:7600,10.1.5.1:7600,10.1.6.1:7600,10.1.7.1:7600"
	plan two-socket-8gpu RDMACTL_GPU=0 -- register --rails auto -S 4K
	assert_failure 1
	assert_output --partial "listening on 10.1.0.1:7471"
	refute_output --partial "10.1.1.1"
	# a concrete --listen address is the plan's to pick
	plan two-socket-8gpu -- register --rails auto -S 4K --listen 192.0.2.1
	assert_failure 2
	assert_output --partial "give the port as --listen 0.0.0.0:PORT"
}

@test "--rails: with -d or --bind, or a plan that is no plan, is a usage error before the tree is read" {
	plan two-socket-8gpu -- -d mlx5_0 write --rails auto --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 2
	assert_output --partial "write: --rails auto picks the devices: give it or -d, not both"
	plan two-socket-8gpu -- write --rails auto --bind 10.1.0.1 --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 2
	assert_output --partial "give it or --bind, not both"
	plan two-socket-8gpu -- -d mlx5_0 register --rails auto -S 4K
	assert_failure 2
	assert_output --partial "register: --rails auto picks the devices"
	plan two-socket-8gpu -- read --rails gpu:x --out "$out" 192.0.2.1/kv
	assert_failure 2
	assert_output --partial "read: invalid --rails 'gpu:x': expected auto, gpu:N or numa:N"
	refute_output --partial "rail plan"
	plan two-socket-8gpu RDMACTL_GPU=first -- write --rails auto --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 2
	assert_output --partial "RDMACTL_GPU='first' is no GPU number"
}

@test "--rails: no RDMA device, no such GPU, or a node without NICs fails naming the fix" {
	local empty=$BATS_TEST_TMPDIR/nodev
	cp -a "$FX/shared-nic" "$empty"
	rm -rf "${empty:?}"/class/infiniband/*
	run env RDMACTL_SYSFS="$empty" "$RDMACTL" register --rails auto -S 4K
	assert_failure 1
	assert_output --partial "no RDMA device under $empty/class/infiniband: load the NIC's RDMA driver"
	assert_output --partial "rdma link add rxe0 type rxe netdev IF"
	plan two-socket-8gpu -- write --rails gpu:9 --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "no GPU 9 here (8 GPUs"
	plan two-socket-8gpu -- write --rails numa:5 --pattern zero --size 4K 192.0.2.1/kv
	assert_failure 1
	assert_output --partial "no RDMA device with an active port on NUMA node 5"
}

@test "kvxfer serve and send --rails: serve on each rail's address at --listen's port, send over the plan's devices" {
	local geom=(--layers 2 --kv-heads 1 --head-dim 8)
	plan two-socket-8gpu -- kvxfer serve "${geom[@]}" --pool-pages 4 --rails numa:1 --listen 0.0.0.0:7600
	assert_failure 1
	assert_output --partial "kvxfer serve: --rails numa:1: the rail plan of NUMA node 1: mlx5_4,mlx5_5,mlx5_6,mlx5_7 (4 rails)"
	assert_output --partial "kvxfer serve: --rails numa:1: listening on 10.1.4.1:7600,10.1.5.1:7600,10.1.6.1:7600,10.1.7.1:7600"
	plan two-socket-8gpu RDMACTL_GPU=6 -- kvxfer serve "${geom[@]}" --pool-pages 4 --rails auto --listen 0.0.0.0:7600
	assert_failure 1
	assert_output --partial "listening on 10.1.6.1:7600"
	refute_output --partial "10.1.7.1"
	# kvxfer serve has no default port, and a concrete address is the plan's to pick
	plan two-socket-8gpu -- kvxfer serve "${geom[@]}" --pool-pages 4 --rails auto --listen 192.0.2.1:7600
	assert_failure 2
	assert_output --partial "kvxfer serve: --rails auto serves each rail on its device's address: give the port as --listen 0.0.0.0:PORT"
	refute_output --partial "leave --listen out"
	plan two-socket-8gpu -- -d mlx5_0 kvxfer serve "${geom[@]}" --pool-pages 4 --rails auto --listen 0.0.0.0:7600
	assert_failure 2
	assert_output --partial "kvxfer serve: --rails auto picks the devices: give it or -d, not both"
	# send: decode rank i over rail i modulo the rails, so as many decode ranks as rails
	plan two-socket-8gpu -- kvxfer send "${geom[@]}" --tokens 4 --rails numa:0 \
		--connect 192.0.2.1:7600 --connect 192.0.2.2:7600 --connect 192.0.2.3:7600 --connect 192.0.2.4:7600
	assert_failure 1
	assert_output --partial "kvxfer send: --rails numa:0: the rail plan of NUMA node 0: mlx5_0,mlx5_1,mlx5_2,mlx5_3 (4 rails)"
	plan two-socket-8gpu -- kvxfer send "${geom[@]}" --tokens 4 --rails numa:0 --connect 192.0.2.1:7600
	assert_failure 2
	assert_output --partial "kvxfer send: 4 rails (-d, --bind, --rails) but 1 decode rank (--connect)"
	plan two-socket-8gpu -- kvxfer send "${geom[@]}" --tokens 4 --rails auto --bind 10.1.0.1 --connect 192.0.2.1:7600
	assert_failure 2
	assert_output --partial "kvxfer send: --rails auto picks the devices: give it or --bind, not both"
	plan two-socket-8gpu -- kvxfer send "${geom[@]}" --tokens 4 --rails gpu:x --connect 192.0.2.1:7600
	assert_failure 2
	assert_output --partial "kvxfer send: invalid --rails 'gpu:x': expected auto, gpu:N or numa:N"
}

@test "alltoall, multicast and sweep --rails: one device a rank, rail (local rank mod rails) of a node's plan, listening on its address" {
	printf '0 10.1.4.1:7000\n1 10.1.5.1:7000\n' >"$BATS_TEST_TMPDIR/peers"
	# a peers file gives the address; local rank 1 of node 1's four rails: the second
	plan two-socket-8gpu -- alltoall -r 1 -w 2 --local-rank 1 -R "file:$BATS_TEST_TMPDIR/peers" --rails numa:1
	assert_failure 1
	assert_output --partial "alltoall: --rails numa:1: the rail plan of NUMA node 1: mlx5_4,mlx5_5,mlx5_6,mlx5_7 (4 rails)"
	assert_output --partial "alltoall: --rails numa:1: rank 1, local rank 1: rail 2 of 4, mlx5_5"
	refute_output --partial "listening on"
	# local rank 6 wraps to the third rail; etcd wants an address: the rail's
	plan two-socket-8gpu -- multicast -r 6 -w 8 --local-rank 6 -R etcd://127.0.0.1:9/job --rails numa:1
	assert_failure 1
	assert_output --partial "multicast: --rails numa:1: rank 6, local rank 6: rail 3 of 4, mlx5_6"
	assert_output --partial "multicast: --rails numa:1: listening on 10.1.6.1 (mlx5_6)"
	# --listen 0.0.0.0:PORT: the rail's address at PORT; no local rank: the first rail
	plan two-socket-8gpu -- sweep -r 0 -w 2 -R etcd://127.0.0.1:9/job --rails numa:0 --listen 0.0.0.0:9000
	assert_failure 1
	assert_output --partial "sweep: --rails numa:0: rank 0, no local rank (--local-rank, or the launcher's): rail 1 of 4, mlx5_0"
	assert_output --partial "sweep: --rails numa:0: listening on 10.1.0.1:9000 (mlx5_0)"
	# [::]:PORT too, as register and kvxfer serve take it
	plan two-socket-8gpu -- sweep -r 0 -w 2 -R etcd://127.0.0.1:9/job --rails numa:0 --listen '[::]:9001'
	assert_failure 1
	assert_output --partial "sweep: --rails numa:0: listening on 10.1.0.1:9001 (mlx5_0)"
	# a GPU's plan is its one rail, whatever the local rank
	plan two-socket-8gpu RDMACTL_GPU=2 -- alltoall -r 0 -w 2 --local-rank 1 -R etcd://127.0.0.1:9/job --rails auto
	assert_failure 1
	assert_output --partial "alltoall: --rails auto: the rail plan of GPU 2 (RDMACTL_GPU): mlx5_2 (1 rail)"
	assert_output --partial "listening on 10.1.2.1 (mlx5_2)"
	refute_output --partial "rail 1 of"
	# --listen ADDR is kept
	plan two-socket-8gpu RDMACTL_GPU=2 -- alltoall -r 0 -w 2 -R etcd://127.0.0.1:9/job --rails auto --listen 10.9.9.9
	assert_failure 1
	refute_output --partial "listening on"
	plan two-socket-8gpu -- -d mlx5_0 alltoall -r 0 -w 2 -R etcd://127.0.0.1:9/job --rails auto
	assert_failure 2
	assert_output --partial "alltoall: --rails auto picks the devices: give it or -d, not both"
}

@test "alltoall and multicast --rails-per-rank: several of the plan's rails a rank, each on its address; its usage errors" {
	# local rank 1, two rails a rank of node 1's four: the third and fourth
	plan two-socket-8gpu -- alltoall -r 1 -w 2 --local-rank 1 -R etcd://127.0.0.1:9/job --rails numa:1 \
		--rails-per-rank 2 --listen 0.0.0.0:9100
	assert_failure 1
	assert_output --partial "alltoall: --rails numa:1: rank 1, local rank 1: rails 3,4 of 4, mlx5_6,mlx5_7"
	assert_output --partial "alltoall: --rails numa:1: rail 1 listening on 10.1.6.1:9100 (mlx5_6)"
	assert_output --partial "alltoall: --rails numa:1: rail 2 listening on 10.1.7.1:9100 (mlx5_7)"
	# all: every rail of the plan, from the first
	plan two-socket-8gpu -- alltoall -r 0 -w 2 --local-rank 0 -R etcd://127.0.0.1:9/job --rails numa:0 \
		--rails-per-rank all
	assert_failure 1
	assert_output --partial "rank 0, local rank 0: rails 1,2,3,4 of 4, mlx5_0,mlx5_1,mlx5_2,mlx5_3"
	assert_output --partial "rail 4 listening on 10.1.3.1 (mlx5_3)"
	# more than the plan has
	plan two-socket-8gpu -- alltoall -r 0 -w 2 -R etcd://127.0.0.1:9/job --rails numa:0 --rails-per-rank 5
	assert_failure 2
	assert_output --partial "alltoall: --rails-per-rank 5: the plan numa:0 has 4 rails"
	# a peers file holds one address a rank
	printf '0 10.1.0.1:7000\n1 10.1.1.1:7000\n' >"$BATS_TEST_TMPDIR/peers"
	plan two-socket-8gpu -- alltoall -r 0 -w 2 -R "file:$BATS_TEST_TMPDIR/peers" --rails numa:0 --rails-per-rank 2
	assert_failure 2
	assert_output --partial "several rails a rank meet through etcd"
	# one address for several rails
	plan two-socket-8gpu -- alltoall -r 0 -w 2 -R etcd://127.0.0.1:9/job --rails numa:0 --rails-per-rank 2 \
		--listen 10.1.0.1
	assert_failure 2
	assert_output --partial "each listening on its device's address: give --listen 0.0.0.0[:PORT] or none, not --listen 10.1.0.1"
	# without --rails, or a bad count
	run "$RDMACTL" alltoall -r 0 -w 2 -R etcd://127.0.0.1:9/job --rails-per-rank 2
	assert_failure 2
	assert_output --partial "--rails-per-rank takes the rails of --rails PLAN"
	run "$RDMACTL" alltoall -r 0 -w 2 -R etcd://127.0.0.1:9/job --rails-per-rank 0
	assert_failure 2
	assert_output --partial "--rails-per-rank 0: expected 1 to 16, or all"
	# -d DEV1,DEV2 wants an address a device; multicast runs one device a rank
	run "$RDMACTL" -d rxe_a,rxe_c alltoall -r 0 -w 2 -R etcd://127.0.0.1:9/job --listen 0.0.0.0
	assert_failure 2
	assert_output --partial "alltoall: -d rxe_a,rxe_c names several devices, a rail each: give --listen ADDR1[:PORT],ADDR2[:PORT]"
	run "$RDMACTL" -d rxe_a,rxe_c sweep -r 0 -w 2 -R etcd://127.0.0.1:9/job --listen 10.0.0.1,10.0.0.2
	assert_failure 2
	assert_output --partial "sweep: -d gives this rank 2 devices: sweep runs one device a rank (alltoall and multicast stripe over several)"
	# multicast takes several rails, but tells block times on one only
	plan two-socket-8gpu -- multicast -r 1 -w 2 -R etcd://127.0.0.1:9/job --rails numa:0 --rails-per-rank 2 \
		--block-sizes 1M,1M
	assert_failure 2
	assert_output --partial "--block-sizes: the times blocks are usable are told on one rail a rank; this rank runs on 2"
	plan two-socket-8gpu -- multicast -r 1 -w 2 -R etcd://127.0.0.1:9/job --rails numa:0 --rails-per-rank 2
	assert_failure 1
	assert_output --partial "multicast: --rails numa:0: rank 1, no local rank (--local-rank, or the launcher's): rails 1,2 of 4, mlx5_0,mlx5_1"
	assert_output --partial "multicast: --rails numa:0: rail 2 listening on 10.1.1.1 (mlx5_1)"
	assert_output --partial "rail 1 (mlx5_0): cannot reach etcd at 127.0.0.1:9"
}
