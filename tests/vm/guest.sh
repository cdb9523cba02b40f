#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Second stage of the SoftRoCE guest, run by the host's bash inside the guest
# (chrooted into the overlay of the host's /) by initramfs-init. It loads the
# RDMA modules, sets up the links and rxe devices the tests expect, then runs
# the job and leaves its exit status in the job folder. run.sh copies it into
# each job folder next to vars (settings) and job.sh (the command).
#
# Job folder protocol (host path = guest path):
#   in:  vars, job.sh        out: output (the command's stdout+stderr),
#   rc (its exit status), harness-error (why the harness failed), setup.log,
#   timing (guest uptime when the command started and ended)
set -uo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C

job=$1
exec >>"$job/setup.log" 2>&1
# shellcheck source=/dev/null
. "$job/vars" # KDIR CWD TWO_NICS FOUR_NICS

fail() {
	printf 'guest setup: %s\n' "$*" >"$job/harness-error"
	printf 'guest setup: %s\n' "$*"
	exit 1
}
run() { "$@" || fail "failed: $*"; }

# The kernel's own modules, from the package unpacked on the host.
read -r kver </proc/sys/kernel/osrelease
run mkdir -p "/lib/modules/$kver"
run mount --bind "$KDIR/root/lib/modules/$kver" "/lib/modules/$kver"

# crc32_generic: rxe asks for crc32 when its first device is added; loading
# it here spares an on-demand round trip through the module helper.
modules=(rdma_rxe rdma_ucm dummy crc32_generic)
((TWO_NICS || FOUR_NICS)) && modules+=(veth)
run modprobe -a "${modules[@]}"
echo rdmactl-vm >/proc/sys/kernel/hostname

# libibverbs dlopens every provider named in /etc/libibverbs.d (17 in
# Debian's ibverbs-providers) in each process that lists the devices: under
# TCG, ibv_devices took 697 ms, 158 ms with rxe's alone (in the whole rxe
# tier, where the libraries stay cached, it saved about 7%). This guest has
# rxe devices only (and siw, a software device, is kept): the others' files
# are hidden here, as on a host that installs only the providers of its NICs.
run mkdir -p /run/libibverbs.d
for d in rxe siw; do
	[[ -f /etc/libibverbs.d/$d.driver ]] && run cp "/etc/libibverbs.d/$d.driver" /run/libibverbs.d/
done
run mount --bind /run/libibverbs.d /etc/libibverbs.d

# Wait until the port of rxe device $1 is ACTIVE and has a RoCE v2 GID for
# IPv4 address $2; store that GID's index in the variable named $3.
# Bounded: about 10 s. No subshells: every fork is slow under TCG.
roce_v2_gid_index() {
	local port=/sys/class/infiniband/$1/ports/1 want f value type state try a b c d
	IFS=. read -r a b c d <<<"$2"
	printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d"
	for ((try = 0; try < 200; try++)); do
		state=
		read -r state <"$port/state"
		if [[ "$state" == *ACTIVE ]]; then
			for f in "$port"/gids/*; do
				read -r value <"$f" || continue
				[[ "$value" == "$want" ]] || continue
				type=
				read -r type <"$port/gid_attrs/types/${f##*/}"
				if [[ "$type" == "RoCE v2" ]]; then
					printf -v "$3" '%s' "${f##*/}"
					return 0
				fi
			done
		fi
		sleep 0.05
	done
	return 1
}

# Addresses from 198.18.0.0/15, the benchmarking range.
addr=198.18.0.1 addr_a=198.18.1.1 addr_b=198.18.1.2 addr_c=198.18.2.1 addr_d=198.18.2.2

# One rxe on a dummy link: every process on that one device. The MTU must
# come before "type" or rxe stays at a 1024-byte RDMA MTU.
links=(
	'link set lo up'
	'link add d0 mtu 9000 type dummy'
	"addr add $addr/24 dev d0"
	'link set d0 up'
)
rxes=('link add rxe0 type rxe netdev d0')

# Two NICs: a veth pair with both ends in this namespace. Packets really
# cross the pair, so the receiving side sees a source address that is local
# to this host: accept_local=1 and rp_filter=0 let them in.
accept_local_sources() {
	local c
	for c; do
		echo 1 >"/proc/sys/net/ipv4/conf/$c/accept_local" || fail "accept_local on $c"
		echo 0 >"/proc/sys/net/ipv4/conf/$c/rp_filter" || fail "rp_filter on $c"
	done
}
if ((TWO_NICS)); then
	accept_local_sources all default
	links+=(
		'link add va mtu 9000 type veth peer name vb mtu 9000'
		"addr add $addr_a/24 dev va"
		"addr add $addr_b/24 dev vb"
		'link set va up'
		'link set vb up'
	)
	rxes+=(
		'link add rxe_a type rxe netdev va'
		'link add rxe_b type rxe netdev vb'
	)
fi
# Four NICs: a second veth pair (vc/vd) on a /24 of its own, an rxe on each
# end: two rails between two "hosts" (A and C on one side, B and D on the
# other).
if ((FOUR_NICS)); then
	links+=(
		'link add vc mtu 9000 type veth peer name vd mtu 9000'
		"addr add $addr_c/24 dev vc"
		"addr add $addr_d/24 dev vd"
		'link set vc up'
		'link set vd up'
	)
	rxes+=(
		'link add rxe_c type rxe netdev vc'
		'link add rxe_d type rxe netdev vd'
	)
fi
printf '%s\n' "${links[@]}" | ip -batch - || fail "setting up the links failed"
((TWO_NICS)) && accept_local_sources va vb
((FOUR_NICS)) && accept_local_sources vc vd
# Permanent neighbour entries: rdma_cm resolves each end to the other's MAC
# at once, instead of racing an ARP exchange across the pair.
if ((TWO_NICS)); then
	ip neigh replace "$addr_b" lladdr "$(cat /sys/class/net/vb/address)" dev va nud permanent &&
		ip neigh replace "$addr_a" lladdr "$(cat /sys/class/net/va/address)" dev vb nud permanent ||
		fail "cannot set the neighbour entries of the veth pair"
fi
if ((FOUR_NICS)); then
	ip neigh replace "$addr_d" lladdr "$(cat /sys/class/net/vd/address)" dev vc nud permanent &&
		ip neigh replace "$addr_c" lladdr "$(cat /sys/class/net/vc/address)" dev vd nud permanent ||
		fail "cannot set the neighbour entries of the second veth pair"
fi
printf '%s\n' "${rxes[@]}" | rdma -b - || fail "adding the rxe devices failed"

roce_v2_gid_index rxe0 "$addr" gid || fail "rxe0 has no active RoCE v2 GID for $addr"
vm_env=(RDMACTL_VM_ADDR="$addr" RDMACTL_VM_DEV=rxe0 RDMACTL_VM_GID_INDEX="$gid")
if ((TWO_NICS)); then
	roce_v2_gid_index rxe_a "$addr_a" gid_a || fail "rxe_a has no active RoCE v2 GID for $addr_a"
	roce_v2_gid_index rxe_b "$addr_b" gid_b || fail "rxe_b has no active RoCE v2 GID for $addr_b"
	vm_env+=(
		RDMACTL_VM_ADDR_A="$addr_a" RDMACTL_VM_DEV_A=rxe_a RDMACTL_VM_GID_INDEX_A="$gid_a"
		RDMACTL_VM_ADDR_B="$addr_b" RDMACTL_VM_DEV_B=rxe_b RDMACTL_VM_GID_INDEX_B="$gid_b"
	)
fi
if ((FOUR_NICS)); then
	roce_v2_gid_index rxe_c "$addr_c" gid_c || fail "rxe_c has no active RoCE v2 GID for $addr_c"
	roce_v2_gid_index rxe_d "$addr_d" gid_d || fail "rxe_d has no active RoCE v2 GID for $addr_d"
	vm_env+=(
		RDMACTL_VM_ADDR_C="$addr_c" RDMACTL_VM_DEV_C=rxe_c RDMACTL_VM_GID_INDEX_C="$gid_c"
		RDMACTL_VM_ADDR_D="$addr_d" RDMACTL_VM_DEV_D=rxe_d RDMACTL_VM_GID_INDEX_D="$gid_d"
	)
fi

ulimit -l unlimited || fail "cannot lift the locked-memory limit"
cd -- "$CWD" || fail "the caller's directory $CWD is not visible in the guest (the guest has its own /tmp, /var/tmp, /run and /root)"

read -r up _ </proc/uptime
printf 'start %s\n' "$up" >>"$job/timing"
env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb \
	RDMACTL_VM=1 RDMACTL_VM_JOB="$job" "${vm_env[@]}" \
	/bin/bash --noprofile --norc "$job/job.sh" </dev/null >>"$job/output" 2>&1
rc=$?
read -r up _ </proc/uptime
printf 'end %s\n' "$up" >>"$job/timing"
printf '%s\n' "$rc" >"$job/rc"
