/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/dev.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_DEV_CORE_H
#define RDMACTL_DEV_CORE_H

#include <sys/socket.h>

#include <rdmactl/dev.h>

/* Open a device by name (ibv_get_device_list). */
int rc_dev_open(const char *name, struct ibv_context **out, struct rc_err *err);
/* 0 when an RDMA device called name exists (or the list cannot be read);
 * else -ENODEV, err saying "no such device NAME" and the devices there are. */
int rc_dev_exists(const char *name, struct rc_err *err);
/* The one GID ranking of the library: the GID that register, the clients and
 * kvxfer use and the one probe-topology recommends both come from it. On an
 * InfiniBand port, its IB GID (type IBV_GID_TYPE_IB, or -1 when unknown). On
 * RoCE, RoCE v2 only: an IPv4-mapped address, then a global IPv6 one, then a
 * link-local one; never RoCE v1. Returns the rank, lower is better, or -1
 * for a GID never to choose. */
int rc_gid_rank(bool ib_link, int type, const unsigned char raw[16]);
/* The best of n GID entries (zero GIDs are skipped): its position, or -1. */
int rc_gid_choose(bool ib_link, const struct ibv_gid_entry *e, int n);
/* Pick the GID to use on a port: the override when >= 0, else the best by
 * rc_gid_rank. */
int rc_gid_pick(struct ibv_context *ctx, uint8_t port, int override, struct rc_gid_info *out,
		struct rc_err *err);
/* The GID entry of a port whose address equals addr (IPv4 or IPv6). */
int rc_gid_find_addr(struct ibv_context *ctx, uint8_t port, const struct sockaddr *addr,
		     struct rc_gid_info *out);

/* The IPv4 address of dev's best GID (port 1), as the address a rail of
 * dev connects from (so the routing table cannot send it out of another
 * NIC of the host); EADDRNOTAVAIL, naming --bind, when it has none. */
int rc_dev_ipv4(const char *dev, char *out, size_t cap, struct rc_err *err);

void rc_gid_format(const union ibv_gid *gid, char *buf, size_t len);

/* The unsigned number a sysfs file holds: false when it cannot be read
 * (cong.c; sweep's counters read theirs with it). */
bool rc_sysfs_u64(const char *path, uint64_t *v);

#endif
