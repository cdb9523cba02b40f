/* SPDX-License-Identifier: MIT */
/* RDMA devices and GIDs. */
#ifndef RDMACTL_DEV_H
#define RDMACTL_DEV_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include <rdmactl/err.h>

struct rc_gid_info {
	int index;
	int type; /* IBV_GID_TYPE_IB, _ROCE_V1, _ROCE_V2 */
	union ibv_gid gid;
	char str[48]; /* textual IPv6 form */
};

/* Open a device by name (ibv_get_device_list). */
RC_EXPORT int rc_dev_open(const char *name, struct ibv_context **out, struct rc_err *err);
/* The one GID ranking of the library: the GID that register, the clients and
 * kvxfer use and the one probe-topology recommends both come from it. On an
 * InfiniBand port, its IB GID (type IBV_GID_TYPE_IB, or -1 when unknown). On
 * RoCE, RoCE v2 only: an IPv4-mapped address, then a global IPv6 one, then a
 * link-local one; never RoCE v1. Returns the rank, lower is better, or -1
 * for a GID never to choose. */
RC_EXPORT int rc_gid_rank(bool ib_link, int type, const unsigned char raw[16]);
/* The best of n GID entries (zero GIDs are skipped): its position, or -1. */
RC_EXPORT int rc_gid_choose(bool ib_link, const struct ibv_gid_entry *e, int n);
/* Pick the GID to use on a port: the override when >= 0, else the best by
 * rc_gid_rank. */
RC_EXPORT int rc_gid_pick(struct ibv_context *ctx, uint8_t port, int override,
			  struct rc_gid_info *out, struct rc_err *err);
/* The GID entry of a port whose address equals addr (IPv4 or IPv6). */
RC_EXPORT int rc_gid_find_addr(struct ibv_context *ctx, uint8_t port, const struct sockaddr *addr,
			       struct rc_gid_info *out);
RC_EXPORT const char *rc_gid_type_name(int type);
RC_EXPORT void rc_gid_format(const union ibv_gid *gid, char *buf, size_t len);

#endif
