#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Fetch and unpack the guest kernel for the SoftRoCE test bed and build its
# initramfs. The host kernel has no RDMA, so verbs tests boot Debian's stock
# kernel (which ships rdma_rxe) under qemu; see tests/vm/README.md.
#
# Usage: tests/vm/prepare.sh
# Prints the prepared kernel folder ($cache/KVER) on stdout, progress on
# stderr. Idempotent: a kernel already unpacked is kept, and the initramfs
# is rebuilt only when its inputs (this script, the guest init, busybox,
# the module list) changed. The kernel is the package linux-image-amd64
# depends on today, so a security update of the ABI is picked up by itself.
#
# Cache: ${RDMACTL_VM_CACHE:-<repo>/.cache/vm}, laid out as
#   KVER/root/             the unpacked package, with modules.dep (depmod)
#   KVER/vmlinux           the ELF kernel unpacked from the bzImage (PVH boot)
#   KVER/kernel            link to what run.sh boots (vmlinux, else the bzImage)
#   KVER/initrd.cpio       busybox-static, the modules for a 9p root, /init
#   KVER/initrd.stamp      hash of the initramfs inputs
#   jobs/                  per-run job folders (tests/vm/run.sh)
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null) || repo=$(cd -- "$here/../.." && pwd)
cache=${RDMACTL_VM_CACHE:-$repo/.cache/vm}

# Modules the initramfs needs to reach the 9p root; everything else is
# loaded later from the unpacked tree by the host's modprobe in the guest.
initrd_modules=(virtio_pci 9pnet_virtio 9p overlay)

log() { printf 'prepare.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

"$here/deps.sh"

mkdir -p -- "$cache"
exec 9>"$cache/.lock"
flock 9

kernel_package() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }'
}
pkg=$(kernel_package)
if [[ -z "$pkg" ]]; then
	log "apt does not know linux-image-amd64; running apt-get update"
	sudo=()
	((EUID == 0)) || sudo=(sudo)
	"${sudo[@]}" apt-get update -q >&2
	pkg=$(kernel_package)
fi
[[ -n "$pkg" ]] || die "cannot find the package linux-image-amd64 depends on"
kver=${pkg#linux-image-}
kdir=$cache/$kver

if [[ ! -f "$kdir/root/lib/modules/$kver/modules.dep" ]]; then
	log "fetching $pkg"
	mkdir -p -- "$kdir"
	rm -rf -- "$kdir/unpack"
	mkdir -- "$kdir/unpack"
	# As root, apt would hand the download to its _apt user, which cannot
	# write here, and warn; there is nothing to sandbox for a plain download.
	apt_opts=()
	((EUID != 0)) || apt_opts=(-o APT::Sandbox::User=root)
	(cd -- "$kdir/unpack" && apt-get download -q "${apt_opts[@]}" "$pkg" >&2)
	log "unpacking $pkg"
	dpkg -x "$kdir/unpack/${pkg}_"*.deb "$kdir/unpack/root"
	depmod -b "$kdir/unpack/root" "$kver"
	rm -rf -- "$kdir/root"
	mv -- "$kdir/unpack/root" "$kdir/root"
	rm -rf -- "$kdir/unpack"
fi
[[ -f "$kdir/root/boot/vmlinuz-$kver" ]] || die "$pkg has no /boot/vmlinuz-$kver"

# Boot the uncompressed ELF kernel through its PVH entry point: qemu loads it
# directly and the guest skips inflating the xz bzImage, which costs about
# 2.5 s under TCG. Without CONFIG_PVH, or if it cannot be unpacked, the
# bzImage boots instead. "kernel" names whichever run.sh is to boot.
extract_vmlinux() {
	local image=$1 out=$2 magic tool offset
	for magic in 'xz \xfd7zXZ\x00' 'zstd \x28\xb5\x2f\xfd' 'gzip \x1f\x8b\x08'; do
		tool=${magic%% *}
		command -v "$tool" >/dev/null || continue
		offset=$(LC_ALL=C grep -obUaP -m1 "${magic#* }" "$image" | head -n 1 | cut -d: -f1) || true
		[[ -n "$offset" ]] || continue
		# Trailing data after the stream makes the tool complain: judge the result.
		tail -c "+$((offset + 1))" "$image" | "$tool" -dcq >"$out" 2>/dev/null || true
		[[ "$(head -c 4 "$out" | od -An -tx1 | tr -d " \n")" == 7f454c46 ]] && return 0
	done
	rm -f -- "$out"
	return 1
}
if [[ ! -e "$kdir/kernel" ]]; then
	if grep -qx CONFIG_PVH=y "$kdir/root/boot/config-$kver" &&
		extract_vmlinux "$kdir/root/boot/vmlinuz-$kver" "$kdir/vmlinux"; then
		ln -sfn vmlinux "$kdir/kernel"
	else
		log "no PVH ELF kernel; booting the bzImage (slower)"
		ln -sfn "root/boot/vmlinuz-$kver" "$kdir/kernel"
	fi
fi

# insmod lines in dependency order, without repeats (9pnet appears twice).
module_paths=$(
	modprobe -d "$kdir/root" -S "$kver" --show-depends -a "${initrd_modules[@]}" |
		sed -n 's/^insmod \(.*\.ko[^ ]*\) *$/\1/p' | awk '!seen[$0]++'
)
for module in "${initrd_modules[@]}"; do
	grep -q "/$module\.ko" <<<"$module_paths" || die "module $module not found in $pkg"
done

busybox=$(command -v busybox) || die "busybox not found"
stamp=$(
	{
		cat -- "$here/prepare.sh" "$here/initramfs-init"
		sha256sum -- "$busybox"
		printf '%s\n' "$module_paths"
	} | sha256sum
)
if [[ -f "$kdir/initrd.cpio" && "$(cat -- "$kdir/initrd.stamp" 2>/dev/null)" == "$stamp" ]]; then
	printf '%s\n' "$kdir"
	exit 0
fi

log "building the initramfs for $kver"
staging=$kdir/initrd.d
rm -rf -- "$staging"
mkdir -p -- "$staging"/{bin,modules,proc,sys,dev,lower,rw,newroot,job}
cp -- "$busybox" "$staging/bin/busybox"
for applet in $("$busybox" --list); do
	[[ "$applet" == busybox ]] || ln -s busybox "$staging/bin/$applet"
done
cp -- "$here/initramfs-init" "$staging/init"
chmod 0755 "$staging/init"
# busybox insmod cannot read compressed modules.
n=0
while IFS= read -r path; do
	name=$(printf '%02d-%s' "$n" "${path##*/}")
	case "$path" in
	*.ko) cp -- "$path" "$staging/modules/$name" ;;
	*.ko.xz) xz -dc -- "$path" >"$staging/modules/${name%.xz}"; name=${name%.xz} ;;
	*.ko.zst) zstd -qdc -- "$path" >"$staging/modules/${name%.zst}"; name=${name%.zst} ;;
	*.ko.gz) gzip -dc -- "$path" >"$staging/modules/${name%.gz}"; name=${name%.gz} ;;
	*) die "unexpected module file $path" ;;
	esac
	printf '%s\n' "$name" >>"$staging/modules/order"
	n=$((n + 1))
done <<<"$module_paths"
# Left uncompressed: it is small (busybox plus a dozen modules, 3.3 MB).
(cd -- "$staging" && find . -mindepth 1 | LC_ALL=C sort |
	cpio -o -H newc -R 0:0 --quiet) >"$kdir/initrd.cpio.new"
mv -- "$kdir/initrd.cpio.new" "$kdir/initrd.cpio"
printf '%s\n' "$stamp" >"$kdir/initrd.stamp"
rm -rf -- "$staging"
log "initramfs ready: $kdir/initrd.cpio"
printf '%s\n' "$kdir"
