/* SPDX-License-Identifier: MIT */
/* Inside the mcast layer: what mcast.c calls in report.c. */
#ifndef RDMACTL_MCAST_INT_H
#define RDMACTL_MCAST_INT_H

#include <rdmactl/mcast.h>

/* Gather every receiver's res->self at the root; the root fills res->recv,
 * ok_count and seconds, judging each against its own size and digest. */
int mcast_reports(struct rc_group *g, const struct rc_mcast_opts *o, struct rc_mcast_result *res,
		  uint64_t size, struct rc_err *err);

#endif
