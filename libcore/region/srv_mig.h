/* SPDX-License-Identifier: MIT */
/* The region server's side of a migration: the steps of a live move
 * (RC_CTRL_MIG_CMD), pulling extents from a peer and hashing extents
 * (RC_CTRL_PULL_REQ, RC_CTRL_HASH_REQ). Called by server.c. */
#ifndef RDMACTL_SRV_MIG_H
#define RDMACTL_SRV_MIG_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include <rdmactl/server.h>
#include <rdmactl/ctrl_core.h>

struct srv_mig;

/* What the handler may use of its server. */
struct srv_mig_host {
	struct rc_region *regions;
	int nregions;
	struct ibv_pd *pd;     /* the listener's: the regions are registered on it */
	const char *bind_addr; /* connect to the source from here (NULL: any) */
	const char *dev_name;
	const char *admin_token; /* its own: a pull proves it to the source (NULL: none) */
	/* A write announced done (a notice, RC_MIG_DONE), counted here. */
	void (*written)(void *arg, uint64_t len);
	/* Reap the completions of every connection but skip, now (the notices
	 * that came in before a fence must be counted by it). It never frees
	 * skip, the connection whose request is being handled. */
	void (*drain_all)(void *arg, const void *skip);
	/* The answer to the request that came in slot of conn, now ready (a
	 * PULL or HASH run on the worker): send it, and take the slot back. */
	void (*reply)(void *arg, const void *conn, int slot, const void *msg, size_t len);
	void *arg;
};

/* What a connection may do: admin, it presented the server's admin token
 * (or the server runs migrations without one, by its operator's choice). */
#define SRV_MIG_LATER (-EINPROGRESS) /* the answer comes through h->reply */

/* Answer the request msg (PULL_REQ, HASH_REQ, MIG_CMD) that came on
 * connection conn in its slot into out: the answer's length, 0 when there
 * is none to send (a client's notice, or a message of another kind), or
 * SRV_MIG_LATER (the slot is busy until h->reply). *st is the server's
 * migration state, created on first use. */
int srv_mig_handle(struct srv_mig **st, const struct srv_mig_host *h, const void *conn, bool admin,
		   int slot, const void *msg, size_t len, void *out, size_t cap);
/* A file descriptor that is readable when the worker finished a request
 * (then call srv_mig_poll), or -1. */
int srv_mig_fd(const struct srv_mig *st);
/* Send the answers of the requests the worker finished, start the next. */
void srv_mig_poll(struct srv_mig *st, const struct srv_mig_host *h);
/* Connection conn is gone: a write it announced and never completed stays
 * recorded as written; a move it was orchestrating and had not cut over is
 * called off (the region is served here again); its queued requests go. */
void srv_mig_conn_gone(struct srv_mig *st, const struct srv_mig_host *h, const void *conn);
void srv_mig_free(struct srv_mig *st);

#endif
