/* SPDX-License-Identifier: MIT */
/*
 * ofi: libfabric opened at run time, on the first call that needs it, not
 * linked. Debian's libfabric.so.1 links PSM's libraries, whose constructor
 * measures the CPU's clock with some 800 sleeps of 125 us: linked, it cost
 * every rdmactl process (--version included) 200 ms on a host and more in
 * an emulated guest, whatever its fabric. Included before libfabric's
 * headers, it renames the six functions libfabric exports that rdmactl
 * calls (the rest are inline calls through a fid's ops) to the loader's
 * (ofi_dl.c), which open the library or fail as libfabric's calls do
 * (-FI_ENOSYS; fi_strerror then says why it could not be opened).
 */
#ifndef RDMACTL_OFI_DL_H
#define RDMACTL_OFI_DL_H

#define fi_getinfo rc_ofi_dl_getinfo
#define fi_freeinfo rc_ofi_dl_freeinfo
#define fi_dupinfo rc_ofi_dl_dupinfo
#define fi_fabric rc_ofi_dl_fabric
#define fi_strerror rc_ofi_dl_strerror
#define fi_version rc_ofi_dl_version

#endif
