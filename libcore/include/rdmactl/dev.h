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

/* A port's congestion counters by kind (rc_cong_name: "retransmissions",
 * "out_of_sequence", "duplicate_requests", "rnr_naks", "cnp_sent",
 * "cnp_handled", "ecn_marked", "discards", "xmit_wait"), each the sum of
 * the files that count it as NICs name them (rxe's and mlx5's hw_counters,
 * the IB port counters); present: a bit a kind the port has a file for. A
 * kind without one is absent, not zero. PFC pause frames are the netdev's
 * (ethtool -S), not here. */
#define RC_CONG_N 9
struct rc_cong {
	uint64_t val[RC_CONG_N];
	uint32_t present;
	uint32_t pad; /* zero: sweep gathers it from every rank */
};
RC_EXPORT const char *rc_cong_name(int k);
/* DEV's port PORT under sysfs (NULL: /sys); nothing present where the
 * device has no such files. */
RC_EXPORT void rc_cong_read(const char *sysfs, const char *dev, int port, struct rc_cong *c);
/* What moved from a to b, for the kinds both hold (present: those). */
RC_EXPORT void rc_cong_moved(const struct rc_cong *a, const struct rc_cong *b,
			     struct rc_cong *moved);

#endif
