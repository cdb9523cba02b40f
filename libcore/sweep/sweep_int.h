/* SPDX-License-Identifier: MIT */
/* sweep's own: a port's error and retransmission counters, read from sysfs. */
#ifndef RDMACTL_SWEEP_INT_H
#define RDMACTL_SWEEP_INT_H

#include <rdmactl/sweep.h>

#define CTR_SNAP_MAX 96

/* The counters of one port whose names say error, retry, sequence,
 * duplicate, discard, drop, timeout, NAK, RNR, link down or congestion. */
struct ctr_snap {
	int n;
	char name[CTR_SNAP_MAX][40];
	uint64_t val[CTR_SNAP_MAX];
};

/* Read them below sysfs (NULL: /sys); a device without counters gives none. */
void ctr_read(const char *sysfs, const char *dev, int port, struct ctr_snap *s);
/* The counters that moved from a to b, the largest moves first, at most
 * max of them, added to what out already holds (n of them); the new n. */
int ctr_moved(const struct ctr_snap *a, const struct ctr_snap *b, struct rc_sweep_ctr *out, int n,
	      int max);

#endif
