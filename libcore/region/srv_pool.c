// SPDX-License-Identifier: MIT
/*
 * The region server's control buffers: the message channel's pool of
 * request and reply pairs (verbs/msgch.c) behind one shared receive queue,
 * and one CQ for every connection, so that a thousand clients cost neither
 * a receive ring nor a file descriptor each. A slot is posted, received, handled, answered and
 * posted again (server_int.h); a connection that goes gives its slots back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/err_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/msgch_core.h>

#include "srv_pool.h"

/* Slots beyond SRV_CONN_SLOTS per connection: room for a burst or two,
 * borrowed while no one else holds them (srv_slot_borrow). */
#define SRV_POOL_EXTRA (2 * SRV_HOLD_MAX)

static int held(const struct srv_conn *sc)
{
	return sc->inflight + sc->nback;
}

bool srv_slot_borrow(struct rc_server *s, const struct srv_conn *sc)
{
	if (held(sc) < SRV_CONN_SLOTS)
		return true;
	if (s->pool.borrowed >= s->pool.extra)
		return false;
	s->pool.borrowed++;
	return true;
}

int srv_slot_post(struct rc_server *s, int i)
{
	struct srv_slot *sl = &s->pool.slot[i];

	sl->owner = NULL;
	sl->state = SLOT_POSTED;
	return rc_msgch_pool_post(&s->pool.ch, s->sh, (uint32_t)i, NULL);
}

int srv_slot_reply(struct rc_server *s, struct srv_conn *sc, int i, uint32_t len)
{
	int rc = rc_msgch_pool_reply(&s->pool.ch, sc->c, (uint32_t)i, len, NULL);

	if (!rc)
		s->pool.slot[i].state = SLOT_SENDING;
	return rc;
}

void srv_slot_release(struct rc_server *s, int i)
{
	struct srv_slot *sl = &s->pool.slot[i];

	if (sl->owner && (sl->state == SLOT_BUSY || sl->state == SLOT_SENDING)) {
		if (held(sl->owner) > SRV_CONN_SLOTS)
			s->pool.borrowed--;
		sl->owner->inflight--;
	}
	srv_slot_post(s, i);
}

void srv_pool_release_conn(struct rc_server *s, const struct srv_conn *sc)
{
	if (held(sc) > SRV_CONN_SLOTS)
		s->pool.borrowed -= held(sc) - SRV_CONN_SLOTS;
	for (int i = 0; i < s->pool.n; i++)
		if (s->pool.slot[i].state != SLOT_POSTED && s->pool.slot[i].owner == sc) {
			s->pool.slot[i].owner = NULL; /* the connection is freed already */
			srv_slot_post(s, i);
		}
}

int srv_pool_create(struct rc_server *s, struct rc_err *err)
{
	int n = s->max_conns * SRV_CONN_SLOTS + SRV_POOL_EXTRA, rc;
	/* Every connection's send queue (its replies and a probe) and the
	 * receives: what may complete before the CQ is polled. */
	int cqe = s->max_conns * (SRV_CREDITS + 1) + n;

	struct rc_msgch_opts mo = { .pool = n,
				    .slot = RC_CTRL_MSG_MAX,
				    .what = "the control channel" };

	s->conns = calloc((size_t)s->max_conns, sizeof(s->conns[0]));
	s->pool.slot = calloc((size_t)n, sizeof(s->pool.slot[0]));
	if (!s->conns || !s->pool.slot)
		return rc_err_set(err, ENOMEM, "out of memory for %d connections", s->max_conns);
	if ((rc = rc_msgch_init(&s->pool.ch, &mo, err)) ||
	    (rc = rc_msgch_reg(&s->pool.ch, s->l->pd, err)))
		return rc_err_wrap(err, 0, "the control buffers of {max_conns} %d on %s",
				   s->max_conns, s->l->dev_name);
	rc = rc_shared_create(s->l->pd, cqe, n, &s->sh, err);
	if (rc)
		return rc_err_wrap(err, 0, "{max_conns} %d", s->max_conns);
	s->pool.n = n;
	s->pool.extra = SRV_POOL_EXTRA;
	for (int i = 0; i < n; i++)
		if ((rc = srv_slot_post(s, i)))
			return rc_err_set(err, -rc, "cannot post the control receives: %s",
					  strerror(-rc));
	return 0;
}

void srv_pool_destroy(struct rc_server *s)
{
	/* After every connection: none of their QPs uses the queue any more. */
	rc_shared_destroy(s->sh);
	rc_msgch_fini(&s->pool.ch);
	free(s->pool.slot);
	free(s->conns);
	s->sh = NULL;
	memset(&s->pool, 0, sizeof(s->pool));
	s->conns = NULL;
}
