/* SPDX-License-Identifier: MIT */
/* The region server's side of a migration: pulling extents from a peer and
 * hashing extents (RC_CTRL_PULL_REQ, RC_CTRL_HASH_REQ). Called by server.c. */
#ifndef RDMACTL_SRV_MIG_H
#define RDMACTL_SRV_MIG_H

#include <stddef.h>

#include <rdmactl/server.h>

struct srv_mig;

/* What the handler may use of its server. */
struct srv_mig_host {
	struct rc_region *regions;
	int nregions;
	struct ibv_pd *pd;         /* the listener's: the regions are registered on it */
	const char *bind_addr;     /* connect to the source from here (NULL: any) */
	const char *dev_name;
};

/* Answer the request msg (a PULL_REQ or a HASH_REQ) into out: the answer's
 * length, or 0 when msg is neither. *st is the server's migration state,
 * created on first use. */
int srv_mig_handle(struct srv_mig **st, const struct srv_mig_host *h, const void *msg,
		   size_t len, void *out, size_t cap);
void srv_mig_free(struct srv_mig *st);

#endif
