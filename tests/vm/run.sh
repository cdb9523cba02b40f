#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run one command inside the SoftRoCE guest: a qemu (TCG) guest booting
# Debian's stock kernel with rdma_rxe, whose root is the host's / (read-only
# 9p plus a tmpfs overlay), so the command sees the host's files, tools and
# freshly built binaries. The host kernel has no RDMA; this is where the
# tests that move data over verbs run. See tests/vm/README.md.
#
# Usage: tests/vm/run.sh [--two-nics|--four-nics] [--timeout SECONDS] [--mem SIZE] [--cpus N] -- COMMAND [ARGS...]
#   --two-nics       also set up rxe_a/rxe_b on a veth pair (va/vb)
#   --four-nics      also rxe_c/rxe_d on a second pair (vc/vd): two rails
#   --timeout S      bound the whole guest run (default 1500)
#   --mem SIZE       guest memory, qemu syntax (default 2G)
#   --cpus N         emulated CPUs (default 2; one runs the test suite about
#                    as fast, so two guests fit side by side on two cores,
#                    but two busy-polling processes starve on it)
# COMMAND runs as root via bash, in the caller's directory, with the caller's
# PATH. Its stdout and stderr stream to our stdout; we exit with its status.
# Exit 125: the harness failed (usage, preparation, boot, set-up, timeout);
# the reason is on stderr. Interrupted: 128+signal.
# RDMACTL_VM_CACHE: cache folder; RDMACTL_VM_KEEP=1: keep the job folder;
# RDMACTL_VM_CPU: the emulated CPU, qemu -cpu syntax (default below).
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null) || repo=$(cd -- "$here/../.." && pwd)
cache=${RDMACTL_VM_CACHE:-$repo/.cache/vm}

die() {
	printf 'run.sh: %s\n' "$*" >&2
	exit 125
}
usage() {
	printf '%s\n' "usage: tests/vm/run.sh [--two-nics|--four-nics] [--timeout SECONDS] [--mem SIZE] [--cpus N] -- COMMAND [ARGS...]" >&2
	exit 125
}

two_nics=0
four_nics=0
limit=1500
mem=2G
cpus=2
# The emulated CPU: qemu64 with the SSE4.2-era extensions, not "max". Under
# TCG, "max"'s ERMS and FSRM make the guest kernel copy with "rep movsb",
# which TCG runs a byte at a time, and its AVX2 sends glibc's string and
# memory functions through emulated 256-bit code: rxe's data path (kernel
# copies) ran at half speed (ib_write_bw 1 MiB x 200 on rxe0: 55 MB/s with
# "max", 107 to 126 MB/s with this), and data.bats plus migrate.bats took
# 216 s against 182 s. RDRAND keeps the guest's random numbers ready at boot.
cpu_model=${RDMACTL_VM_CPU:-qemu64,+ssse3,+sse4.1,+sse4.2,+popcnt,+pclmulqdq,+aes,+rdrand}
while (($#)); do
	case "$1" in
	--two-nics) two_nics=1 ;;
	--four-nics) two_nics=1 four_nics=1 ;;
	--timeout) (($# > 1)) || usage; limit=$2; shift ;;
	--timeout=*) limit=${1#*=} ;;
	--mem) (($# > 1)) || usage; mem=$2; shift ;;
	--mem=*) mem=${1#*=} ;;
	--cpus) (($# > 1)) || usage; cpus=$2; shift ;;
	--cpus=*) cpus=${1#*=} ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) printf 'run.sh: unknown option %s\n' "$1" >&2; usage ;;
	esac
	shift
done
(($#)) || usage
[[ "$limit" =~ ^[1-9][0-9]*$ ]] || die "--timeout wants a whole number of seconds, not '$limit'"
[[ "$mem" =~ ^[1-9][0-9]*[MG]?$ ]] || die "--mem wants a size such as 2G or 1536M, not '$mem'"
[[ "$cpus" =~ ^[1-8]$ ]] || die "--cpus wants 1 to 8, not '$cpus'"

# The guest mounts its own file systems on these. A folder the command
# needs below /tmp, /var/tmp, /run or /root is bound back into the guest
# from the host (read-only; a clone under /tmp works); one below /dev, /proc
# or /sys cannot be.
guest_own=(/dev /proc /sys)
guest_tmp=(/tmp /var/tmp /run /root)
show=()
check_visible() { # what, physical path
	local dir
	for dir in "${guest_own[@]}"; do
		[[ "$2" != "$dir" && "$2" != "$dir"/* ]] ||
			die "$1 $2 is hidden in the guest, which has its own ${guest_own[*]}"
	done
	for dir in "${guest_tmp[@]}"; do
		[[ "$2" != "$dir"/* ]] || show+=("$2")
	done
}
check_visible "the current directory" "$(pwd -P)"
mkdir -p -- "$cache/jobs"
check_visible "the cache folder (RDMACTL_VM_CACHE)" "$(cd -- "$cache" && pwd -P)"
check_visible "the checkout" "$(cd -- "$repo" && pwd -P)"

kdir=$("$here/prepare.sh") || die "preparing the guest kernel failed (see above)"
kver=${kdir##*/}

job=$(mktemp -d -- "$cache/jobs/job.XXXXXX")
qemu_pid=
tail_pid=
# shellcheck disable=SC2317 # cleanup and interrupted run from traps
# Every way out (exit, a signal, a failed command under set -e) stops the
# guest and removes the job folder.
cleanup() {
	if [[ -n "$qemu_pid" ]]; then
		kill -TERM "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
	fi
	if [[ -n "$tail_pid" ]]; then
		kill "$tail_pid" 2>/dev/null || true
		wait "$tail_pid" 2>/dev/null || true
	fi
	if [[ "${RDMACTL_VM_KEEP:-0}" == 1 ]]; then
		printf 'run.sh: job folder kept: %s\n' "$job" >&2
	else
		rm -rf -- "$job"
	fi
}
# shellcheck disable=SC2317
interrupted() {
	printf 'run.sh: interrupted by SIG%s, stopping the guest\n' "$1" >&2 || true
	exit "$2"
}
trap cleanup EXIT
trap 'interrupted INT 130' INT
trap 'interrupted TERM 143' TERM
trap 'interrupted HUP 129' HUP

# The job: settings and the command, both read by the host's bash in the guest.
printf '%s\n' "$job" >"$job/path"
printf '%s\n' "${show[@]}" >"$job/show"
cp -- "$here/guest.sh" "$job/guest.sh"
printf 'KDIR=%q\nCWD=%q\nTWO_NICS=%d\nFOUR_NICS=%d\n' "$kdir" "$PWD" "$two_nics" "$four_nics" >"$job/vars"
{
	printf 'export PATH=%q\n' "$PATH"
	# The caller's own RDMACTL_* settings (say, where the build is) go along.
	for name in ${!RDMACTL_@}; do
		[[ "$name" == RDMACTL_VM* ]] || printf 'export %s=%q\n' "$name" "${!name}"
	done
	printf 'exec --'
	printf ' %q' "$@"
	printf '\n'
} >"$job/job.sh"
: >"$job/output"

# qemu option values escape a comma by doubling it.
q() { printf '%s' "${1//,/,,}"; }
qemu=(
	qemu-system-x86_64 -accel tcg -cpu "$cpu_model" -smp "$cpus" -m "$mem"
	-nodefaults -no-user-config -display none -monitor none -no-reboot
	-kernel "$kdir/kernel" -initrd "$kdir/initrd.cpio"
	-append "console=ttyS0 loglevel=4 panic=-1 rdinit=/init norandmaps"
	-chardev "file,id=console,path=$(q "$job/console.log")" -serial chardev:console
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$(q "$job"),mount_tag=job,security_model=none,multidevs=remap"
)

started=${EPOCHREALTIME/[.,]/}
timeout -k 10 "$limit" "${qemu[@]}" </dev/null >"$job/qemu.log" 2>&1 &
qemu_pid=$!
# Stream the command's output as the guest writes it (9p writes through).
tail -n +1 -s 0.2 -f --pid="$qemu_pid" -- "$job/output" &
tail_pid=$!
qemu_rc=0
wait "$qemu_pid" || qemu_rc=$?
qemu_pid=
wait "$tail_pid" || true
tail_pid=

explain() {
	printf 'run.sh: %s\n' "$*" >&2
	local f
	for f in setup.log console.log qemu.log; do
		[[ -s "$job/$f" ]] || continue
		printf -- '--- %s (last lines) ---\n' "$f" >&2
		tail -n 25 -- "$job/$f" >&2
	done
	exit 125
}
if ((qemu_rc == 124 || qemu_rc == 137)); then
	explain "timed out after $limit s (--timeout); the guest was killed"
elif [[ -e "$job/harness-error" ]]; then
	explain "$(head -n 1 -- "$job/harness-error")"
elif [[ ! -s "$job/rc" ]]; then
	explain "the guest ended without a result (qemu exit status $qemu_rc): boot failure?"
fi
rc=$(<"$job/rc")
[[ "$rc" =~ ^[0-9]+$ ]] || explain "bad exit status '$rc' from the guest"

read -r boot took < <(awk '{ t[$1] = $2 } END { printf "%s %.2f\n", t["start"], t["end"] - t["start"] }' "$job/timing")
ms=$(((${EPOCHREALTIME/[.,]/} - started) / 1000))
printf 'run.sh: exit %s; guest %s: command started at %s s of guest uptime, ran %s s; qemu ran %d.%02d s\n' \
	"$rc" "$kver" "$boot" "$took" "$((ms / 1000))" "$((ms % 1000 / 10))" >&2
exit "$rc"
