// SPDX-License-Identifier: MIT
/* The kvxfer control channel: SEND/RECV of small messages on the control
 * QP, through the one message channel of verbs/ (msgch_core.h, one
 * connection of KV_CHAN_RECVS receive and KV_CHAN_SENDS send slots of
 * KV_MSG_MAX bytes), and CQ reaping that never sleeps (the engines sleep in
 * poll()). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv_int.h"
#include <rdmactl/conn_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/kv_core.h>

int kv_chan_init(struct kv_chan *ch, struct rc_conn *c, struct rc_err *err)
{
	struct rc_msgch_opts o = { .nconns = 1,
				   .recvs = KV_CHAN_RECVS,
				   .sends = KV_CHAN_SENDS,
				   .slot = KV_MSG_MAX,
				   .min_len = RC_CTRL_HDR_LEN,
				   .what = "the control QP" };
	int rc;

	memset(ch, 0, sizeof(*ch));
	ch->c = c;
	if ((rc = rc_msgch_init(&ch->mc, &o, err)))
		return rc;
	if ((rc = rc_msgch_reg(&ch->mc, c->pd, NULL))) {
		rc = rc_err_set(err, -rc, "cannot register control buffers for %s: %s", c->peer,
				strerror(-rc));
		kv_chan_fini(ch);
		return rc;
	}
	if ((rc = rc_msgch_start(&ch->mc, 0, c, err))) {
		kv_chan_fini(ch);
		return rc;
	}
	ch->last_rx = ch->last_tx = rc_now();
	return 0;
}

void kv_chan_fini(struct kv_chan *ch)
{
	rc_msgch_fini(&ch->mc);
}

bool kv_chan_idle(const struct kv_chan *ch)
{
	return !ch->mc.conn || rc_msgch_send_room(&ch->mc, 0) == KV_CHAN_SENDS;
}

int kv_chan_send(struct kv_chan *ch, struct kv_msg *m, struct rc_err *err)
{
	unsigned char *b;
	int len, rc;

	if ((rc = rc_msgch_send_check(&ch->mc, 0, err)))
		return rc;
	b = rc_msgch_send_buf(&ch->mc, 0);
	m->seq = ++ch->seq;
	len = kv_msg_encode(m, b, KV_MSG_MAX);
	if (len < 0)
		return rc_err_set(err, -len, "cannot encode a %s message: %s", kv_msg_name(m->type),
				  strerror(-len));
	if ((rc = rc_msgch_send(&ch->mc, 0, (uint32_t)len, err)))
		return rc;
	ch->last_tx = rc_now();
	return 0;
}

int kv_chan_wc(struct kv_chan *ch, const struct ibv_wc *wc, struct kv_msg *m, uint32_t *pages,
	       struct rc_err *err)
{
	struct rc_msgch_rx rx;
	int k = rc_msgch_wc(&ch->mc, 0, wc, &rx, err), rc;

	if (k == RC_MSGCH_SENT)
		return 0;
	/* A receive completes as IBV_WC_RECV for a SEND only: an RDMA WRITE with
	 * immediate consumes a receive too, but leaves its buffer as it was. */
	if (k == RC_MSGCH_IMM)
		return rc_err_set(err, EPROTO,
				  "%s sent an RDMA WRITE with immediate on the control QP",
				  ch->c->peer);
	if (k == -EBADMSG ||
	    (k == RC_MSGCH_MSG && kv_msg_decode(rx.data, rx.len, m, pages, KV_MAX_REQ_PAGES) != 0))
		return rc_err_set(err, EBADMSG, "%s sent a malformed control message (%u bytes)",
				  ch->c->peer, wc->byte_len);
	if (k < 0)
		return k;
	ch->last_rx = rc_now();
	rc = rc_msgch_repost(&ch->mc, rx.slot, err);
	return rc ? rc : 1;
}
