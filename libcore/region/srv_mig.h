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
	/* Reap every connection's completions now (the notices that came in
	 * before a fence must be counted by it). */
	void (*drain_all)(void *arg);
	void *arg;
};

/* Answer the request msg (PULL_REQ, HASH_REQ, MIG_CMD) that came on
 * connection conn into out: the answer's length, or 0 when there is none to
 * send (a client's notice, or a message of another kind). *st is the
 * server's migration state, created on first use. */
int srv_mig_handle(struct srv_mig **st, const struct srv_mig_host *h, const void *conn,
		   const void *msg, size_t len, void *out, size_t cap);
/* Connection conn is gone: a write it announced and never completed stays
 * recorded as written; a move it was orchestrating and had not cut over is
 * called off (the region is served here again). */
void srv_mig_conn_gone(struct srv_mig *st, const struct srv_mig_host *h, const void *conn);
void srv_mig_free(struct srv_mig *st);

#endif
