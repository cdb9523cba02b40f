/* SPDX-License-Identifier: MIT */
/* The region server's control slots (srv_pool.c), for srv_conn.c. */
#ifndef RDMACTL_SRV_POOL_H
#define RDMACTL_SRV_POOL_H

#include "server_int.h"

/* Post slot i to the shared receive queue, owned by no one. */
int srv_slot_post(struct rc_server *s, int i);
/* Send slot i's reply half (len bytes) on sc: the slot is SENDING. */
int srv_slot_reply(struct rc_server *s, struct srv_conn *sc, int i, uint32_t len);
/* Whether sc may hold one slot more (a request just received): its own
 * SRV_CONN_SLOTS, or one borrowed from the pool's extra, counted. */
bool srv_slot_borrow(struct rc_server *s, const struct srv_conn *sc);
/* Slot i is done with: its owner's count goes down, and it is posted. */
void srv_slot_release(struct rc_server *s, int i);
/* Every slot sc held, posted again; sc is gone (its QP destroyed). */
void srv_pool_release_conn(struct rc_server *s, const struct srv_conn *sc);

#endif
