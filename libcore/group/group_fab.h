/* SPDX-License-Identifier: MIT */
/* Inside the group over libfabric (group_fab.c: its messages, their
 * proofs and the progress; group_fab_join.c: opening, addressing and
 * proving the peers, closing, registering memory). */
#ifndef RDMACTL_GROUP_FAB_H
#define RDMACTL_GROUP_FAB_H

#include <rdmactl/auth_core.h>
#include <rdmactl/ofi_core.h>
#include <rdmactl/tp_core.h>

#include "group_int.h"

#define GF_MAGIC 0x6f646d72u /* "rmdo" */
#define GF_PLANE "group-ofi"
#define GF_HELLO_MS 200  /* a HELLO again, until the peer proved itself */
#define GF_STUCK_MS 1000 /* a HELLO not gone by then: the peer addressed afresh */
#define GF_SPIN_MS 2.0   /* a wait polls this long, then sleeps on the queue */

enum { GF_HELLO = 1, GF_PROVE = 2, GF_MSG = 3 };
#define GF_TOKEN 1u /* gfwire.flags: the sender holds a token */

/* Every message's head, then (MSG) a struct gmsg of its length. */
struct gfwire {
	uint32_t magic;
	uint8_t type;
	uint8_t flags;
	uint16_t pad;
	uint32_t from, to, world, pad2;
	uint64_t ctr;                       /* MSG: above every one before (under its MAC) */
	unsigned char nfrom[RC_AUTH_NONCE]; /* the sender's nonce for the pair */
	unsigned char nto[RC_AUTH_NONCE];   /* the receiver's, as the sender has it */
	unsigned char mac[RC_AUTH_MAC];
};
#define GF_SLOT ((sizeof(struct gfwire) + sizeof(struct gmsg) + 63) & ~(size_t)63)

struct gfab {
	struct rc_ofi o;
	char prov[64];
	struct gjob job;         /* the proofs' context: the job and ... */
	struct rc_endpoint *all; /* ... every rank's endpoint, kept for later proofs */
	uint64_t *addr;          /* world: each peer's address-vector entry */
	struct rc_ofi_tp *tp;    /* world: each linked peer's endpoint for the engine */
	void **eps;              /* the linked peers' endpoints, for polling */
	int neps;
	unsigned char *rx, *tx; /* nrx receive slots; a send slot a peer */
	int nrx;
	struct rc_ofi_mr rx_mr, tx_mr;
	unsigned char (*mine)[RC_AUTH_NONCE];  /* world: this rank's nonce for each pair */
	unsigned char (*their)[RC_AUTH_NONCE]; /* world: each peer's, once proven */
	unsigned char (*key)[RC_AUTH_KEY];     /* world: each pair's session key */
	uint64_t *tx_ctr, *rx_ctr;
	bool *owe;                              /* world: a PROVE is owed (a HELLO came) */
	double *hello_at;                       /* world: the last HELLO sent */
	double *sent_at;                        /* world: the last message of ours sent */
	unsigned char (*name)[RC_OFI_NAME_MAX]; /* world: each peer's address ... */
	size_t *namelen;                        /* ... and its length */
	bool *refused;                          /* world: a HELLO to it failed */
	bool *heard;                            /* world: a HELLO came from it */
	uint64_t events;                        /* messages and immediate data taken: a wait ends */
	uint64_t dropped;                       /* messages that failed their checks */
	int rc; /* the first failure a completion brought, with err */
	struct rc_err err;
};

/* A message of type (GF_HELLO, GF_PROVE, GF_MSG) to peer j from its send
 * slot (free: the caller saw to it), body (MSG) of len bytes. */
int gfab_send(struct rc_group *g, int j, int type, const void *body, size_t len, struct rc_err *err);
/* Receive slot k posted (again). */
int gfab_post_recv(struct gfab *f, int k, struct rc_err *err);
/* A completion that is not the engine's (tp_core.h's other). */
void gfab_on_other(void *arg, const struct rc_ofi_wc *wc);

#endif
