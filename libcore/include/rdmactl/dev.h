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

RC_EXPORT const char *rc_gid_type_name(int type);
/* How many RDMA devices the host has (0: none, or verbs cannot list them). */
RC_EXPORT int rc_dev_count(void);

#endif
