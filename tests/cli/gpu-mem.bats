#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# --mem cuda:N without a device: the forms it takes, the registration path
# option, and a build without CUDA refusing it plainly. Set RDMACTL_NOCUDA
# to a -DRDMACTL_CUDA=OFF build (tests/run-all.sh builds one); moving data
# through GPU memory is tests/gpu/run.sh's, on a GPU machine.

load helpers

setup() {
	require_binary
}

# rdmactl_json BIN ARGS...: run with -j; the output must be one JSON document.
rdmactl_json() {
	run timeout 20 "$1" -j "${@:2}"
	jq -e . <<<"$output" >/dev/null || fail "not one JSON document: $output"
}

# The binary built without CUDA, or skip saying how to get one.
nocuda_binary() {
	if [[ -n "${RDMACTL_NOCUDA:-}" ]]; then
		[[ -x "$RDMACTL_NOCUDA" ]] || fail "RDMACTL_NOCUDA=$RDMACTL_NOCUDA is not executable"
		jq -e '.features.gpu_memory == false' <<<"$("$RDMACTL_NOCUDA" -j help)" >/dev/null ||
			fail "$RDMACTL_NOCUDA says it has GPU memory: not a -DRDMACTL_CUDA=OFF build"
		printf '%s\n' "$RDMACTL_NOCUDA"
	elif jq -e '.features.gpu_memory == false' <<<"$("$RDMACTL" -j help)" >/dev/null; then
		printf '%s\n' "$RDMACTL"
	fi
}

@test "--mem cuda, cuda:N and --gpu-reg: bad forms are usage errors before any device" {
	local bad
	for bad in cuda: cuda:x cuda:-1 cuda:1x gpu:0 cuda:99999; do
		rdmactl_json "$RDMACTL" register --listen 127.0.0.1:7471 --size 1M --mem "$bad"
		assert_failure 2
		jq -e --arg m "$bad" '.error.message | contains("invalid --mem \u0027" + $m + "\u0027")' <<<"$output"
	done
	for bad in host gpu dma-buf; do
		rdmactl_json "$RDMACTL" register --listen 127.0.0.1:7471 --size 1M --mem cuda:0 --gpu-reg "$bad"
		assert_failure 2
		jq -e '.error.message | contains("--gpu-reg")' <<<"$output"
	done
	run "$RDMACTL" register --help
	assert_output --partial 'cuda[:N]'
	assert_output --partial '--gpu-reg'
	run "$RDMACTL" __complete register --gpu-reg ""
	assert_output "$(printf '%s\n' auto dmabuf peermem bounce)"
}

@test "help says in JSON whether this build has GPU memory" {
	rdmactl_json "$RDMACTL" help
	jq -e '.features.gpu_memory | type == "boolean"' <<<"$output"
}

@test "a build without CUDA: --mem cuda:0 fails with a clear error, exit 1, before any device" {
	local bin
	bin=$(nocuda_binary)
	[[ -n "$bin" ]] || skip "this rdmactl has GPU memory; set RDMACTL_NOCUDA to a -DRDMACTL_CUDA=OFF build (tests/run-all.sh does)"
	run timeout 20 "$bin" register --listen 127.0.0.1:7471 --size 1M --mem cuda:0
	assert_failure 1
	assert_output --partial "--mem cuda:0: this rdmactl was built without CUDA"
	rdmactl_json "$bin" register --listen 127.0.0.1:7471 --size 1M --mem cuda
	assert_failure 1
	jq -e '.error.code == "ENOTSUP" and (.error.message | contains("built without CUDA"))' <<<"$output"
	# host memory is still checked as usual there
	rdmactl_json "$bin" register --listen 127.0.0.1:7471 --size 0
	assert_failure 2
}

@test "tests/gpu scripts: usage errors exit 2 and name the usage" {
	local gpu=$BATS_TEST_DIRNAME/../gpu
	run "$gpu/run.sh"
	assert_failure 2
	assert_output --partial 'usage: tests/gpu/run.sh --deps DIR --out OUTDIR'
	run "$gpu/run.sh" --out "$BATS_TEST_TMPDIR/o" --gpu x
	assert_failure 2
	run "$gpu/pack.sh"
	assert_failure 2
	assert_output --partial 'usage: tests/gpu/pack.sh DIR'
	if command -v shellcheck >/dev/null; then
		run shellcheck "$gpu/run.sh" "$gpu/pack.sh"
		assert_success
	fi
}

# kvxfer serve and send, alltoall: the geometry and group flags that get
# them past their other checks, so --mem is what decides.
KVX_GEOM=(--layers 2 --kv-heads 2 --head-dim 64)

@test "kvxfer and alltoall --mem: bad forms are usage errors; GPU memory where the CPU touches the bytes is refused" {
	local bad
	for bad in cuda: cuda:x gpu:0 file; do
		rdmactl_json "$RDMACTL" kvxfer serve "${KVX_GEOM[@]}" --listen 127.0.0.1:7471 --pool-pages 4 --mem "$bad"
		assert_failure 2
		jq -e --arg m "$bad" '.error.message | contains("invalid --mem \u0027" + $m + "\u0027")' <<<"$output"
		rdmactl_json "$RDMACTL" kvxfer send "${KVX_GEOM[@]}" --connect 127.0.0.1:7471 --tokens 16 --mem "$bad"
		assert_failure 2
		jq -e --arg m "$bad" '.error.message | contains("invalid --mem \u0027" + $m + "\u0027")' <<<"$output"
		rdmactl_json "$RDMACTL" alltoall --rendezvous "file:$BATS_TEST_TMPDIR/peers" --rank 0 --world 2 --mem "$bad"
		assert_failure 2
		jq -e --arg m "$bad" '.error.message | contains("invalid --mem \u0027" + $m + "\u0027")' <<<"$output"
	done
	# --gpu-reg: a path of GPU memory, on serve and send, not plan
	rdmactl_json "$RDMACTL" kvxfer serve "${KVX_GEOM[@]}" --listen 127.0.0.1:7471 --pool-pages 4 --gpu-reg dmabuf
	assert_failure 2
	jq -e '.error.message | contains("--gpu-reg is for --mem cuda")' <<<"$output"
	rdmactl_json "$RDMACTL" kvxfer serve "${KVX_GEOM[@]}" --listen 127.0.0.1:7471 --pool-pages 4 --mem cuda:0 --gpu-reg host
	assert_failure 2
	jq -e '.error.message | contains("invalid --gpu-reg")' <<<"$output"
	rdmactl_json "$RDMACTL" kvxfer send "${KVX_GEOM[@]}" --connect 127.0.0.1:7471 --tokens 16 --gpu-reg dmabuf
	assert_failure 2
	jq -e '.error.message | contains("kvxfer send: --gpu-reg is for --mem cuda")' <<<"$output"
	rdmactl_json "$RDMACTL" kvxfer send "${KVX_GEOM[@]}" --connect 127.0.0.1:7471 --tokens 16 --mem cuda --gpu-reg gpu
	assert_failure 2
	jq -e '.error.message | contains("invalid --gpu-reg \u0027gpu\u0027")' <<<"$output"
	run "$RDMACTL" kvxfer send --help
	assert_output --partial '--gpu-reg'
	run "$RDMACTL" kvxfer plan "${KVX_GEOM[@]}" --tokens 16 --gpu-reg auto
	assert_failure 2
	run "$RDMACTL" __complete kvxfer send --gpu-reg ""
	assert_output "$(printf '%s\n' auto dmabuf peermem bounce)"
	run "$RDMACTL" kvxfer plan "${KVX_GEOM[@]}" --tokens 16 --mem host
	assert_failure 2
	run "$RDMACTL" __complete kvxfer serve --mem ""
	assert_output "$(printf '%s\n' host hugepage cuda)"
	run "$RDMACTL" __complete alltoall --mem ""
	assert_output "$(printf '%s\n' host hugepage cuda)"
	# where the CPU reads the pool, GPU memory is refused plainly (a build
	# without CUDA says that first: the test below)
	jq -e '.features.gpu_memory' <<<"$("$RDMACTL" -j help)" >/dev/null ||
		skip "this rdmactl has no GPU memory: the refusals below are the build's own (next test)"
	rdmactl_json "$RDMACTL" kvxfer serve "${KVX_GEOM[@]}" --listen 127.0.0.1:7471 --pool-pages 4 --mem cuda:0 --verify
	assert_failure 2
	jq -e '.error.message | contains("--verify reads the pool with the CPU")' <<<"$output"
}

# The fake CUDA driver (tests/unit/fake_cuda.c), GPU memory that is host memory.
FAKE_CUDA=${RDMACTL_BUILD_DIR:-$(dirname -- "$RDMACTL")/..}/tests/unit/libfakecuda.so

@test "kvxfer and alltoall --mem cuda: no driver, or no such GPU, fails at once, naming it, before any connection or group" {
	jq -e '.features.gpu_memory' <<<"$("$RDMACTL" -j help)" >/dev/null ||
		skip "this rdmactl has no GPU memory: a build without CUDA refuses first (next test)"
	[ -f "$FAKE_CUDA" ] || fail "no fake CUDA driver at $FAKE_CUDA"
	local -a cmds=(
		"kvxfer serve ${KVX_GEOM[*]} --listen 127.0.0.1:7471 --pool-pages 4"
		"kvxfer send ${KVX_GEOM[*]} --connect 127.0.0.1:7471 --tokens 16"
		"alltoall --rendezvous file:$BATS_TEST_TMPDIR/peers --rank 0 --world 2"
	)
	local cmd
	for cmd in "${cmds[@]}"; do
		# no driver at all (a library that is not there stands for it)
		# shellcheck disable=SC2086
		RDMACTL_CUDA_LIB=$BATS_TEST_TMPDIR/no-libcuda.so rdmactl_json "$RDMACTL" $cmd --mem cuda:0
		assert_failure 1
		jq -e '.error.code == "ENODEV" and (.error.message | startswith("--mem cuda:0: GPU memory needs the NVIDIA driver, which this host lacks"))' <<<"$output"
		# a driver that sees no GPU, or fewer than asked for
		# shellcheck disable=SC2086
		RDMACTL_CUDA_LIB=$FAKE_CUDA RDMACTL_FAKE_CUDA_GPUS=0 rdmactl_json "$RDMACTL" $cmd --mem cuda
		assert_failure 1
		jq -e '.error.code == "ENODEV" and (.error.message | startswith("--mem cuda: no GPU 0: CUDA sees 0 GPUs"))' <<<"$output"
		# shellcheck disable=SC2086
		RDMACTL_CUDA_LIB=$FAKE_CUDA RDMACTL_FAKE_CUDA_GPUS=2 run timeout 20 "$RDMACTL" $cmd --mem cuda:2
		assert_failure 1
		assert_output --partial "--mem cuda:2: no GPU 2: CUDA sees 2 GPUs (numbered from 0 in PCI bus order)"
		# with the GPU there, the command goes on to its devices (none here,
		# or a rendezvous file that is not there): the GPU was not the stop
		# shellcheck disable=SC2086
		RDMACTL_CUDA_LIB=$FAKE_CUDA rdmactl_json "$RDMACTL" $cmd --mem cuda:0
		assert_failure
		jq -e '.error.message | test("GPU|CUDA|--mem") | not' <<<"$output"
	done
}

@test "a build without CUDA: kvxfer serve, send and alltoall refuse --mem cuda:N as register does" {
	local bin
	bin=$(nocuda_binary)
	[[ -n "$bin" ]] || skip "this rdmactl has GPU memory; set RDMACTL_NOCUDA to a -DRDMACTL_CUDA=OFF build (tests/run-all.sh does)"
	local -a cmds=(
		"kvxfer serve ${KVX_GEOM[*]} --listen 127.0.0.1:7471 --pool-pages 4"
		"kvxfer serve ${KVX_GEOM[*]} --listen 127.0.0.1:7471 --pool-pages 4 --verify"
		"kvxfer send ${KVX_GEOM[*]} --connect 127.0.0.1:7471 --tokens 16"
		"alltoall --rendezvous file:$BATS_TEST_TMPDIR/peers --rank 0 --world 2"
	)
	local cmd m
	for cmd in "${cmds[@]}"; do
		for m in cuda:0 cuda:1 cuda; do
			# shellcheck disable=SC2086
			run timeout 20 "$bin" $cmd --mem "$m"
			assert_failure 1
			assert_output --partial "--mem $m: this rdmactl was built without CUDA"
		done
		# shellcheck disable=SC2086
		rdmactl_json "$bin" $cmd --mem cuda:0
		assert_failure 1
		jq -e '.error.code == "ENOTSUP" and (.error.message | contains("built without CUDA"))' <<<"$output"
	done
}
