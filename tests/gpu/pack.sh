#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Gather, on a Debian 12 machine with apt access, the packages that
# tests/gpu/run.sh needs on a GPU machine that has a compiler, cmake and
# the CUDA toolkit but perhaps not the libraries rdmactl builds against,
# and no network:
#   tests/gpu/pack.sh DIR
# downloads into DIR (created) the -dev and runtime .debs of libibverbs,
# librdmacm, jansson, readline and libcurl, the libraries they load (libnl,
# ncurses, curl's TLS and compression libraries...), pkgconf, and iproute2
# (for `rdma link add`), without glibc and the compiler's own libraries.
# Nothing is installed here. Then, on the GPU machine:
#   tests/gpu/run.sh --deps DIR --out OUTDIR
set -euo pipefail

if (($# != 1)) || [[ "$1" == -* ]]; then
	echo "usage: tests/gpu/pack.sh DIR" >&2
	exit 2
fi
dir=$1
mkdir -p -- "$dir"
dir=$(cd -- "$dir" && pwd)

roots=(libibverbs-dev librdmacm-dev libjansson-dev libreadline-dev libcurl4-openssl-dev
	libibverbs1 librdmacm1 ibverbs-providers libjansson4 libreadline8 libcurl4
	libnl-3-200 libnl-route-3-200 pkgconf pkgconf-bin libpkgconf3 iproute2)
# Never shipped: the C library and the tool chain's runtime (the GPU
# machine's own must be used), and what only a booted Debian needs.
skip='^(libc6|libc6-dev|libc-dev-bin|libgcc-s1|libstdc\+\+6|libcrypt1|libcrypt-dev|linux-libc-dev|libnsl-dev|libnsl2|libtirpc-dev|libtirpc3|libtirpc-common|libpam.*|libperl.*|.*-perl|libsemanage.*|libsepol2|libdebian-installer4|libsystemd0|libudev1|libselinux1|libaudit.*|libdb5\.3|libgdbm.*|libelogind0|libnewt0\.52|libslang2|libtextwrap1|libkmod2|libcap2-bin)$'

command -v apt-get >/dev/null || { echo "pack.sh: needs apt-get (Debian 12)" >&2; exit 1; }
mapfile -t pkgs < <(
	apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "${roots[@]}" 2>/dev/null |
		grep -E '^[a-z0-9]' | sort -u |
		grep -E '^(lib|pkgconf|iproute2$|ibverbs-providers$)' | grep -Ev "$skip")
((${#pkgs[@]} > 10)) || { echo "pack.sh: apt-cache found too few packages: ${pkgs[*]}" >&2; exit 1; }
echo "pack.sh: downloading ${#pkgs[@]} packages into $dir"
(cd -- "$dir" && timeout 600 apt-get download -q "${pkgs[@]}")
{
	# shellcheck source=/dev/null
	echo "# tests/gpu/pack.sh on $(hostname), $(date -u +%FT%TZ), $(. /etc/os-release && echo "$PRETTY_NAME")"
	printf '%s\n' "${pkgs[@]}"
} >"$dir/PACKAGES"
n=$(find "$dir" -maxdepth 1 -name '*.deb' | wc -l)
echo "pack.sh: $n .deb files, $(du -sh -- "$dir" | cut -f1) in $dir"
echo "next, on the GPU machine: tests/gpu/run.sh --deps $dir --out OUTDIR"
