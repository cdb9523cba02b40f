#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rdmactl's GPU checks, in one bounded run on a machine with an NVIDIA GPU:
#   tests/gpu/run.sh --deps DIR --out OUTDIR [--force-deps] [--gpu N]
# DIR holds the .debs of tests/gpu/pack.sh (made on Debian 12 with apt
# access); they are unpacked into a private prefix (dpkg -x, or ar and tar)
# only for the libraries pkg-config cannot find here, or for all of them
# with --force-deps. Nothing is installed.
#
# Steps, each bounded by `timeout`, each printed as PASS, FAIL or SKIP with
# its reason; a failure never stops the run, which ends within 5 minutes:
#   env          what the machine is (kernel, gVisor, driver, toolkit)
#   gpu          an NVIDIA GPU is present (nvidia-smi -L)
#   deps         the libraries rdmactl builds against: here, or unpacked
#   build        rdmactl and tests/gpu/gpu_check with CUDA, warnings as errors
#   gpu-alloc    device memory allocated as `register --mem cuda:N` does,
#                exported as a dma-buf, bytes copied in and out and verified
#   rdma-devices any RDMA device; if none, whether rdma_rxe and `rdma link
#                add` can make a SoftRoCE one (tried when root; removed after)
#   reg-DEV-PATH GPU memory registered on each device by each path (dmabuf,
#                peermem, bounce, auto), and which ran
#   data-PATH    register --mem cuda:N --gpu-reg PATH on a device's IPv4
#                address, rdmactl write then read back, bytes compared
#   kvxfer-cuda  kvxfer send --mem cuda:N (source pages in GPU memory, auto
#                and --gpu-reg bounce) into a host pool that serve --verify
#                checks byte for byte; which registration ran
#   alltoall-cuda  alltoall --mem cuda:N, 2 ranks (flat and ring) on that
#                device, every token checked (read back from the GPU)
#   topo-*       probe-topology on this host beside nvidia-smi topo -m: the
#                GPU numbering and the GPU x GPU classes compared; a capture
#                of the host (OUTDIR/topo-capture.tar.gz)
# Logs: one file per step in OUTDIR, OUTDIR/summary.txt. Exit 0 when no
# step failed, 1 otherwise, 2 on a usage error.
set -uo pipefail

usage() {
	echo "usage: tests/gpu/run.sh --deps DIR --out OUTDIR [--force-deps] [--gpu N]" >&2
	exit 2
}

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
deps='' out='' force_deps=0 gpu=0
while (($#)); do
	case "$1" in
	--deps) (($# >= 2)) || usage; deps=$2; shift 2 ;;
	--out) (($# >= 2)) || usage; out=$2; shift 2 ;;
	--force-deps) force_deps=1; shift ;;
	--gpu)
		if (($# < 2)) || ! [[ "$2" =~ ^[0-9]+$ ]]; then usage; fi
		gpu=$2
		shift 2
		;;
	*) usage ;;
	esac
done
[[ -n "$out" ]] || usage
mkdir -p -- "$out" || exit 2
out=$(cd -- "$out" && pwd)
[[ -z "$deps" ]] || deps=$(cd -- "$deps" 2>/dev/null && pwd) || { echo "run.sh: no folder $deps" >&2; exit 2; }

start=$SECONDS
budget=285 # seconds for the whole run, under 5 minutes
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmactl-gpu.XXXXXX") || exit 1
build=$work/build prefix=$work/deps
npass=0 nfail=0 nskip=0
: >"$out/summary.txt"
cleanup_cmds=()

cleanup() {
	local c
	for c in "${cleanup_cmds[@]}"; do eval "$c" >/dev/null 2>&1; done
	rm -rf -- "$work"
}
trap cleanup EXIT

# result NAME STATUS REASON: print and record one step's outcome.
result() {
	local line
	line=$(printf '%-4s %-22s %s' "$2" "$1" "$3")
	printf '%s\n' "$line" | tee -a "$out/summary.txt"
	case "$2" in
	PASS) npass=$((npass + 1)) ;;
	FAIL) nfail=$((nfail + 1)) ;;
	*) nskip=$((nskip + 1)) ;;
	esac
}

# left: seconds left of the budget.
left() { echo $((budget - (SECONDS - start))); }

# step NAME LIMIT CMD...: run CMD bounded by LIMIT seconds (and what is left
# of the budget), its output in OUTDIR/NAME.log. 0 is PASS, 77 SKIP, else
# FAIL; the reason is the log's last line. Returns CMD's status.
step() {
	local name=$1 limit=$2 rc reason
	shift 2
	if (($(left) < 5)); then
		result "$name" SKIP "no time left in the ${budget} s budget"
		return 124
	fi
	((limit <= $(left))) || limit=$(left)
	if declare -F "$1" >/dev/null; then
		# A function of this script: run by a bash that knows its functions
		# and variables, so that timeout bounds it too.
		{
			declare -p repo out work build prefix gpu deps pkgconfig cmake_extra devs \
				rdmactl gpu_check 2>/dev/null
			declare -f
		} >"$work/env.sh"
		# shellcheck disable=SC2016 # expanded by that bash
		timeout -k 5 "$limit" bash -c 'source "$1"; shift; "$@"' step "$work/env.sh" "$@" \
			>"$out/$name.log" 2>&1
	else
		timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
	fi
	rc=$?
	reason=$(grep -v '^[[:space:]]*$' "$out/$name.log" | tail -n 1 | cut -c1-200)
	case $rc in
	0) result "$name" PASS "${reason:-ok}" ;;
	77) result "$name" SKIP "${reason#SKIP: }" ;;
	124 | 137) result "$name" FAIL "timed out after ${limit} s (log: $name.log)" ;;
	*) result "$name" FAIL "exit $rc: ${reason:-no output} (log: $name.log)" ;;
	esac
	return $rc
}

# --- env -------------------------------------------------------------------
env_info() {
	echo "date: $(date -u +%FT%TZ)  host: $(hostname)  kernel: $(uname -r)"
	grep -qi gvisor /proc/version 2>/dev/null && echo "runtime: gVisor (no kernel modules, no rxe)"
	dmesg 2>/dev/null | head -n 1 | grep -qi gvisor && echo "runtime: gVisor (dmesg)"
	# shellcheck source=/dev/null
	echo "os: $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")  user: $(id -un) ($(id -u))"
	echo "nvidia: $(head -n 1 /proc/driver/nvidia/version 2>/dev/null || echo 'no /proc/driver/nvidia/version')"
	echo "modules: $(for m in nvidia nvidia_peermem nv_peer_mem rdma_rxe ib_uverbs mlx5_ib; do
		[[ -d /sys/module/$m ]] && printf '%s ' "$m"; done)"
	echo "cmake: $(cmake --version 2>/dev/null | head -n 1)  cc: $(cc --version 2>/dev/null | head -n 1)"
	echo "nvcc: $(nvcc --version 2>/dev/null | tail -n 1 || echo none)"
	echo "pkg-config: $(command -v pkg-config || echo none)  dpkg: $(command -v dpkg || echo none)"
	echo "ulimit -l: $(ulimit -l)"
	echo "environment of $(hostname) recorded"
}
step env 20 env_info

# --- gpu -------------------------------------------------------------------
have_gpu=0
gpu_check_present() {
	if ! command -v nvidia-smi >/dev/null; then
		echo "SKIP: no NVIDIA GPU: nvidia-smi is not installed"
		return 77
	fi
	nvidia-smi -L || true
	if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
		echo "SKIP: no NVIDIA GPU: nvidia-smi -L lists none"
		return 77
	fi
	echo "$(nvidia-smi -L | grep -c '^GPU ') GPU(s): $(nvidia-smi -L | head -n 1)"
}
step gpu 30 gpu_check_present && have_gpu=1

# --- deps ------------------------------------------------------------------
# pkg-config modules rdmactl builds against, and the library each names.
mods=(libibverbs librdmacm jansson readline libcurl)
declare -A libof=([libibverbs]=ibverbs [librdmacm]=rdmacm [jansson]=jansson [readline]=readline
	[libcurl]=curl)
pkgconfig=$(command -v pkg-config || command -v pkgconf || true)
cmake_extra=()

unpack_debs() {
	local d
	mkdir -p -- "$prefix"
	for d in "$deps"/*.deb; do
		if command -v dpkg >/dev/null; then
			timeout 30 dpkg -x "$d" "$prefix" || return 1
		else
			# A .deb is an ar archive holding data.tar.*.
			(cd -- "$work" && rm -f data.tar.* && timeout 30 ar x "$d" &&
				timeout 30 tar -xf data.tar.* -C "$prefix") || return 1
		fi
	done
}

# A folder of the unpacked shared libraries this machine lacks (by soname),
# so that nothing here is shadowed by Debian's copies.
link_missing() {
	local f base known
	mkdir -p -- "$prefix/missing"
	# What the loader finds here: ldconfig's cache, and the usual folders
	# (some containers have no ldconfig).
	known=$({
		ldconfig -p 2>/dev/null | awk '{ print $1 }'
		ls /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 2>/dev/null
	} | sort -u)
	for f in "$prefix"/usr/lib/x86_64-linux-gnu/*.so.* "$prefix"/lib/x86_64-linux-gnu/*.so.*; do
		[[ -e "$f" ]] || continue
		base=${f##*/}
		[[ "$base" =~ \.so\.[0-9]+$ ]] || continue
		grep -qxF -- "$base" <<<"$known" || ln -sf -- "$f" "$prefix/missing/$base"
	done
}

setup_deps() {
	local missing=() m pc lib="$prefix/usr/lib/x86_64-linux-gnu" ver
	for m in "${mods[@]}"; do
		if ((force_deps)) || [[ -z "$pkgconfig" ]] || ! "$pkgconfig" --exists "$m" 2>/dev/null; then
			missing+=("$m")
		fi
	done
	if ((${#missing[@]} == 0)) && [[ -n "$pkgconfig" ]]; then
		echo "all of ${mods[*]} found by $pkgconfig: the system's libraries are used"
		return 0
	fi
	echo "not found here: ${missing[*]}${pkgconfig:+ (pkg-config: $pkgconfig)}"
	if [[ -z "$deps" ]] || ! compgen -G "$deps/*.deb" >/dev/null; then
		echo "no .debs to unpack: make them with tests/gpu/pack.sh DIR on Debian 12 and pass --deps DIR"
		return 1
	fi
	unpack_debs || { echo "cannot unpack the .debs of $deps"; return 1; }
	link_missing
	echo "unpacked $(find "$deps" -maxdepth 1 -name '*.deb' | wc -l) .debs into $prefix;" \
		"$(find "$prefix/missing" -maxdepth 1 | tail -n +2 | wc -l) libraries this machine lacks"
	# Our own .pc files: no Requires.private chains into -dev packages that
	# were never shipped.
	mkdir -p -- "$prefix/pc"
	for m in "${missing[@]}"; do
		pc=$(find "$prefix" -name "$m.pc" | head -n 1)
		ver=$([[ -n "$pc" ]] && sed -n 's/^Version: *//p' "$pc")
		[[ -f "$lib/lib${libof[$m]}.so" ]] || { echo "the .debs lack lib${libof[$m]}.so"; return 1; }
		printf '%s\n' "Name: $m" "Description: $m from tests/gpu/pack.sh" "Version: ${ver:-0}" \
			"Cflags: -I$prefix/usr/include -I$prefix/usr/include/x86_64-linux-gnu" \
			"Libs: -L$lib -l${libof[$m]} -Wl,-rpath-link,$prefix/missing -Wl,-rpath,$prefix/missing" \
			>"$prefix/pc/$m.pc"
	done
	if [[ -z "$pkgconfig" ]]; then
		# The unpacked pkgconf, run with the libraries it needs.
		printf '%s\n' '#!/bin/sh' "LD_LIBRARY_PATH=$prefix/missing\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} exec $prefix/usr/bin/pkgconf \"\$@\"" \
			>"$prefix/pkg-config"
		chmod +x "$prefix/pkg-config"
		pkgconfig=$prefix/pkg-config
	fi
	export PKG_CONFIG_PATH="$prefix/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
	for m in "${mods[@]}"; do
		"$pkgconfig" --exists "$m" || { echo "$pkgconfig still cannot find $m"; return 1; }
	done
	echo "using the unpacked ${missing[*]} (libraries this machine lacks: $prefix/missing)"
}
have_deps=0
# Not through step: its exports must stay in this shell.
if (($(left) > 5)); then
	setup_deps >"$out/deps.log" 2>&1
	rc=$?
	reason=$(tail -n 1 "$out/deps.log")
	if ((rc == 0)); then
		result deps PASS "$reason"
		have_deps=1
	else
		result deps FAIL "$reason (log: deps.log)"
	fi
fi
[[ -d "$prefix/missing" ]] && export LD_LIBRARY_PATH="$prefix/missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[[ -n "$pkgconfig" ]] && cmake_extra+=("-DPKG_CONFIG_EXECUTABLE=$pkgconfig")

# --- build -----------------------------------------------------------------
built=0
do_build() {
	local cuda_root=
	if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
		cuda_root=/usr/local/cuda
	fi
	cmake -S "$repo" -B "$build" -DRDMACTL_WERROR=ON -DRDMACTL_CUDA=ON -DRDMACTL_TESTS=ON \
		${cuda_root:+-DCUDAToolkit_ROOT=$cuda_root} "${cmake_extra[@]}" || return 1
	cmake --build "$build" -j "$(nproc)" --target rdmactl gpu_check || return 1
	[[ "$("$build/cli/rdmactl" -j help)" == *'"features":{"gpu_memory":true}'* ]] ||
		{ echo "built, but without GPU memory: CMake did not find the CUDA toolkit (set CUDAToolkit_ROOT?)"; return 1; }
	echo "built rdmactl and gpu_check with CUDA in $((SECONDS - start)) s"
}
if ((have_deps)); then
	step build 180 do_build && built=1
else
	result build SKIP "the libraries are missing (see deps)"
fi
rdmactl=$build/cli/rdmactl gpu_check=$build/tests/gpu/gpu_check

# --- gpu-alloc -------------------------------------------------------------
if ((built && have_gpu)); then
	step gpu-alloc 60 "$gpu_check" alloc "$gpu" 64M
elif ((built)); then
	step gpu-alloc 30 "$gpu_check" alloc "$gpu" 64M # says plainly why not
else
	result gpu-alloc SKIP "not built"
fi

# --- rdma-devices ----------------------------------------------------------
devs=()
rdma_devices() {
	local d netdev=
	for d in /sys/class/infiniband/*; do [[ -e "$d" ]] && devs+=("${d##*/}"); done
	if ((${#devs[@]})); then
		echo "RDMA devices: ${devs[*]}"
		return 0
	fi
	echo "no RDMA device (/sys/class/infiniband is empty or absent)"
	local rxe=no
	[[ -d /sys/module/rdma_rxe ]] && rxe="loaded"
	[[ $rxe == no ]] && modinfo rdma_rxe >/dev/null 2>&1 && rxe="available (modinfo)"
	echo "rdma_rxe: $rxe; rdma tool: $(command -v rdma || echo none); root: $([[ $(id -u) == 0 ]] && echo yes || echo no)"
	netdev=$(ip -o -4 route show default 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") print $(i + 1) }' | head -n 1)
	if [[ $(id -u) != 0 ]] || ! command -v rdma >/dev/null || [[ -z "$netdev" ]]; then
		echo "SKIP: no RDMA device, and SoftRoCE cannot be tried here (needs root, the rdma tool and a netdev with a default route)"
		return 77
	fi
	timeout 20 modprobe rdma_rxe 2>&1 || true
	if timeout 20 rdma link add rxe_gpu type rxe netdev "$netdev" 2>&1; then
		echo "created SoftRoCE device rxe_gpu on $netdev (removed at the end)"
		devs=(rxe_gpu)
		return 0
	fi
	echo "SKIP: no RDMA device; 'rdma link add rxe_gpu type rxe netdev $netdev' failed: this kernel cannot make a SoftRoCE device"
	return 77
}
if (($(left) > 5)); then
	rdma_devices >"$out/rdma-devices.log" 2>&1
	rc=$?
	reason=$(tail -n 1 "$out/rdma-devices.log")
	case $rc in
	0) result rdma-devices PASS "$reason" ;;
	77) result rdma-devices SKIP "${reason#SKIP: }" ;;
	*) result rdma-devices FAIL "$reason" ;;
	esac
	[[ " ${devs[*]} " == *" rxe_gpu "* ]] && cleanup_cmds+=("rdma link delete rxe_gpu")
fi

# --- reg-DEV-PATH ----------------------------------------------------------
if ((built && have_gpu && ${#devs[@]})); then
	for d in "${devs[@]:0:4}"; do
		for p in dmabuf peermem bounce auto; do
			step "reg-$d-$p" 30 "$gpu_check" reg "$d" "$p" "$gpu"
		done
	done
else
	result reg SKIP "$( ((built)) || echo 'not built; ')$( ((have_gpu)) || echo 'no GPU; ')$( ((${#devs[@]})) || echo 'no RDMA device')"
fi

# --- data-PATH -------------------------------------------------------------
# An ACTIVE port's IPv4 address: "DEV ADDR", from sysfs and ip.
find_addr() {
	local d n nd addr
	for d in "${devs[@]}"; do
		for n in /sys/class/infiniband/"$d"/ports/*/gid_attrs/ndevs/* /sys/class/infiniband/"$d"/parent; do
			[[ -r "$n" ]] || continue
			nd=$(cat "$n" 2>/dev/null) || continue
			[[ -n "$nd" ]] || continue
			addr=$(ip -o -4 addr show dev "$nd" 2>/dev/null | awk '{ sub("/.*", "", $4); print $4; exit }')
			[[ -n "$addr" ]] && { echo "$d $addr"; return 0; }
		done
	done
	return 1
}

data_path() { # PATH DEV ADDR PORT
	local path=$1 dev=$2 addr=$3 port=$4 pid log=$work/register-$1.log
	head -c $((4 << 20)) /dev/urandom >"$work/in-$path"
	"$rdmactl" -d "$dev" register --listen "$addr:$port" --mem "cuda:$gpu" --gpu-reg "$path" \
		--size 4M >"$log" 2>&1 &
	pid=$!
	for _ in $(seq 1 60); do
		grep -q '^region ' "$log" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	cat "$log"
	if ! grep -q '^region ' "$log"; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		if grep -q 'cannot register GPU' "$log"; then
			echo "SKIP: the $path path does not work here: $(grep -o 'cannot register GPU.*' "$log" | head -n 1)"
			return 77
		fi
		echo "register did not serve a region"
		return 1
	fi
	grep -q " via $path" "$log" || { kill "$pid"; wait "$pid" 2>/dev/null; echo "the region does not say 'via $path'"; return 1; }
	"$rdmactl" -t 10000 write --file "$work/in-$path" "$addr:$port/default" &&
		"$rdmactl" -t 10000 read --size 4M --out "$work/out-$path" "$addr:$port/default"
	local rc=$?
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	((rc == 0)) || { echo "write or read failed (exit $rc)"; return 1; }
	cmp "$work/in-$path" "$work/out-$path" || { echo "the bytes read back differ from those written"; return 1; }
	echo "4 MiB written into GPU $gpu memory registered via $path on $dev ($addr) and read back: bytes verified"
}

if ((built && have_gpu && ${#devs[@]})); then
	if target=$(find_addr); then
		port=17471
		for p in dmabuf peermem bounce; do
			# shellcheck disable=SC2086 # "DEV ADDR" splits on purpose
			step "data-$p" 40 data_path "$p" $target "$port"
			port=$((port + 1))
		done
	else
		result data SKIP "no RDMA device has a netdev with an IPv4 address (rdma_cm needs one)"
	fi
else
	result data SKIP "$( ((built)) || echo 'not built; ')$( ((have_gpu)) || echo 'no GPU; ')$( ((${#devs[@]})) || echo 'no RDMA device')"
fi

# --- kvxfer-cuda, alltoall-cuda ----------------------------------------------
# Background processes of a step: bounded each, and gone when the step ends.
reap_bg() {
	local p
	for p in $(jobs -p); do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
}

kvxfer_cuda() { # DEV ADDR PORT
	local dev=$1 addr=$2 port=$3 reg rc=0 g=(--layers 4 --kv-heads 8 --head-dim 64 --page-tokens 16)
	trap 'reap_bg; exit 1' TERM
	for reg in auto bounce; do
		timeout 30 "$rdmactl" -j -d "$dev" kvxfer serve "${g[@]}" --listen "$addr:$port" \
			--pool-pages 64 --verify --requests 2 >"$work/kv-serve-$reg.out" 2>&1 &
		for _ in $(seq 1 40); do
			grep -q '"event":"listening"' "$work/kv-serve-$reg.out" && break
			sleep 0.25
		done
		timeout 30 "$rdmactl" -j -d "$dev" kvxfer send "${g[@]}" --connect "$addr:$port" \
			--tokens 256 --requests 2 --qps 2 --mem "cuda:$gpu" --gpu-reg "$reg" \
			>"$work/kv-send-$reg.out" 2>&1 || rc=1
		wait
		cat "$work/kv-serve-$reg.out" "$work/kv-send-$reg.out"
		if ((rc)); then
			if grep -q 'cannot register GPU' "$work/kv-send-$reg.out"; then
				echo "SKIP: kvxfer send could not register GPU memory via $reg here: $(grep -o 'cannot register GPU[^"]*' "$work/kv-send-$reg.out" | head -n 1)"
				return 77
			fi
			echo "kvxfer send --mem cuda:$gpu --gpu-reg $reg failed"
			return 1
		fi
		grep -q '"event":"summary".*"verified":2' "$work/kv-serve-$reg.out" ||
			{ echo "serve did not verify both requests (--gpu-reg $reg)"; return 1; }
		echo "kvxfer send --gpu-reg $reg: source pages in GPU $gpu memory via" \
			"$(grep -o '"registration":"[a-z]*"' "$work/kv-send-$reg.out" | head -n 1 | cut -d'"' -f4);" \
			"2 requests verified by serve on $dev"
		port=$((port + 1))
	done
}

alltoall_cuda() { # DEV ADDR PORT
	local dev=$1 addr=$2 port=$3 algo r peers=$work/a2a-peers
	trap 'reap_bg; exit 1' TERM
	for algo in flat ring; do
		printf '0 %s:%s\n1 %s:%s\n' "$addr" "$port" "$addr" "$((port + 1))" >"$peers"
		for r in 1 0; do
			timeout 40 "$rdmactl" -j -t 20000 -d "$dev" alltoall --rank "$r" --world 2 \
				--rendezvous "file:$peers" --algo "$algo" --mem "cuda:$gpu" --hidden 2048 \
				--tokens 64 --iters 5 >"$work/a2a-$algo-$r.out" 2>&1 &
		done
		wait
		cat "$work/a2a-$algo-0.out" "$work/a2a-$algo-1.out"
		if grep -q 'cannot register' "$work/a2a-$algo-0.out"; then
			echo "SKIP: alltoall could not register GPU memory here: $(grep -o 'cannot register[^"]*' "$work/a2a-$algo-0.out" | head -n 1)"
			return 77
		fi
		if ! { grep -q '"wrong":0' "$work/a2a-$algo-0.out" && grep -q '"mem":"cuda"' "$work/a2a-$algo-0.out" &&
			grep -q '"checked":true' "$work/a2a-$algo-0.out"; }; then
			echo "alltoall --algo $algo --mem cuda:$gpu did not check every token right"
			return 1
		fi
		echo "alltoall --algo $algo, 2 ranks, token buffers in GPU $gpu memory via" \
			"$(grep -o '"registration":"[a-z]*"' "$work/a2a-$algo-0.out" | cut -d'"' -f4):" \
			"$(grep -o '"checked_tokens":[0-9]*' "$work/a2a-$algo-0.out" | cut -d: -f2) tokens checked on rank 0, none wrong"
		port=$((port + 2))
	done
}

if ((built && have_gpu && ${#devs[@]})); then
	if target=$(find_addr); then
		# shellcheck disable=SC2086 # "DEV ADDR" splits on purpose
		step kvxfer-cuda 60 kvxfer_cuda $target 17481
		# shellcheck disable=SC2086
		step alltoall-cuda 60 alltoall_cuda $target 17491
	else
		result kvxfer-alltoall SKIP "no RDMA device has a netdev with an IPv4 address (rdma_cm needs one)"
	fi
else
	result kvxfer-alltoall SKIP "$( ((built)) || echo 'not built; ')$( ((have_gpu)) || echo 'no GPU; ')$( ((${#devs[@]})) || echo 'no RDMA device')"
fi

# --- topo ------------------------------------------------------------------
# "INDEX BUSID" per GPU, bus ids lower case with a 4-digit domain.
smi_gpus() {
	nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>/dev/null |
		awk -F', *' '{ id = tolower($2); sub(/^0000/, "", id); print $1, id }'
}
rdmactl_gpus() {
	"$rdmactl" probe-topology 2>/dev/null | awk '/^GPU[0-9]+( |$)/ { g = substr($1, 4) }
		g != "" && /^  pci / { print g, tolower($2); g = "" }'
}

topo_numbering() {
	local a b
	a=$(smi_gpus) b=$(rdmactl_gpus)
	echo "nvidia-smi:"; echo "$a"; echo "rdmactl probe-topology:"; echo "$b"
	[[ -n "$a" ]] || { echo "nvidia-smi lists no GPU"; return 1; }
	[[ "$a" == "$b" ]] || { echo "the GPU numbering differs from nvidia-smi's (see above)"; return 1; }
	echo "$(wc -l <<<"$a") GPU(s) numbered as nvidia-smi numbers them"
}

# The GPU x GPU cells of both matrices, "GPUi GPUj WORD" each.
topo_matrix() {
	local n a b
	n=$(smi_gpus | wc -l)
	((n >= 2)) || { echo "SKIP: one GPU: there is no GPU x GPU pair to compare"; return 77; }
	a=$(nvidia-smi topo -m 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' |
		awk -v n="$n" '/^GPU[0-9]+[ \t]/ { for (j = 0; j < n; j++) if ("GPU" j != $1) print $1, "GPU" j, $(j + 2) }')
	b=$("$rdmactl" probe-topology 2>/dev/null |
		awk -v n="$n" '/^GPU x GPU paths/ { on = 1; next } on && /^Legend/ { on = 0 }
			on && /^GPU[0-9]+[ \t]/ { for (j = 0; j < n; j++) if ("GPU" j != $1) print $1, "GPU" j, $(j + 2) }')
	diff <(echo "$a") <(echo "$b") && { echo "the GPU x GPU matrix matches nvidia-smi topo -m ($n GPUs)"; return 0; }
	echo "the GPU x GPU matrix differs from nvidia-smi topo -m (< nvidia-smi, > rdmactl)"
	return 1
}

if ((built)); then
	step topo-probe 60 "$rdmactl" probe-topology
	step topo-probe-json 60 "$rdmactl" -j probe-topology
	# The host as a tree that probe-topology --sysfs reads anywhere (a future fixture).
	step topo-capture 60 "$rdmactl" probe-topology --capture "$out/topo-capture.tar.gz"
	if ((have_gpu)); then
		step nvidia-smi-topo 30 nvidia-smi topo -m
		step topo-numbering 60 topo_numbering
		step topo-matrix 60 topo_matrix
	else
		result topo-nvidia-smi SKIP "no GPU: nothing to compare with nvidia-smi topo -m"
	fi
else
	result topo SKIP "not built"
fi

{
	echo
	echo "rdmactl GPU checks: $npass passed, $nfail failed, $nskip skipped in $((SECONDS - start)) s$( ((have_gpu)) || echo ' (NO GPU on this machine)')"
	echo "logs: $out"
} | tee -a "$out/summary.txt"
((nfail == 0))
