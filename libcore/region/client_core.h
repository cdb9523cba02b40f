/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/client.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_CLIENT_CORE_H
#define RDMACTL_CLIENT_CORE_H

#include <rdmactl/client.h>
#include <rdmactl/conn_core.h>

/* The handles rdmactl/client.h declares opaque. */
struct rc_client {
	struct rc_conn *conns[64];
	int nconns;
	struct rc_region_desc region;
	struct rc_region_desc all[RC_MAX_REGIONS];
	int nregions;
	/* How it was opened, to follow a region that moves (rdmactl-migrate(8)):
	 * the server now (the region's new home once followed), the options,
	 * and copies of the strings they point to. */
	char host[RC_HOST_MAX];
	char port[8];
	struct rc_client_opts opts;
	char token[RC_TOKEN_MAX + 1];
	char bind[RC_HOST_MAX];
	char dev[64];
	int moves; /* how often it followed its region */
};

struct rc_rails {
	struct rc_client *cl[RC_RAILS_MAX];
	int n;
};

/* Send one control message (header included) on the first connection and
 * wait for the answer: its length, or -errno. A timeout_ms <= 0 is the
 * connection's own. */
int rc_client_ctrl(struct rc_client *cl, const void *req, size_t len, void *resp, size_t cap,
		   int timeout_ms, struct rc_err *err);

#endif
