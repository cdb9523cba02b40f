#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Install what building rdmactl and running every test tier needs on a
# Debian 12 machine, and only what is missing: the build tool chain and
# libraries, the test tools (prometheus for promtool, which checks the
# --metrics files, gojq for the rxe tiers' filters: tests/lib/common.bash,
# fi_info, which probe-topology --fabrics is held against), and
# the SoftRoCE guest's host packages.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
exec "$here/vm/deps.sh" \
	build-essential cmake pkg-config \
	libibverbs-dev librdmacm-dev libfabric-dev libfabric-bin libjansson-dev libcurl4-openssl-dev libreadline-dev \
	jq tmux man-db groff-base mandoc zsh etcd-server etcd-client openmpi-bin socat openssl librsvg2-bin \
	clang libclang-rt-14-dev clang-format prometheus \
	nodejs node-ajv xxhash gojq
