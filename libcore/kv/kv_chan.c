// SPDX-License-Identifier: MIT
/* The kvxfer control channel: SEND/RECV of small messages on the control
 * QP, and CQ reaping that never sleeps (the engines sleep in poll()). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv_int.h"
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/kv_core.h>

static unsigned char *recv_buf(struct kv_chan *ch, int i)
{
	return ch->mem + (size_t)i * KV_MSG_MAX;
}

static unsigned char *send_buf(struct kv_chan *ch, uint64_t n)
{
	return ch->mem + (size_t)(KV_CHAN_RECVS + n % KV_CHAN_SENDS) * KV_MSG_MAX;
}

int kv_chan_init(struct kv_chan *ch, struct rc_conn *c, struct rc_err *err)
{
	size_t len = (size_t)(KV_CHAN_RECVS + KV_CHAN_SENDS) * KV_MSG_MAX;
	int rc;

	memset(ch, 0, sizeof(*ch));
	ch->c = c;
	ch->mem = aligned_alloc(4096, len);
	if (!ch->mem)
		return rc_err_set(err, ENOMEM, "out of memory");
	ch->mr = ibv_reg_mr(c->pd, ch->mem, len, IBV_ACCESS_LOCAL_WRITE);
	if (!ch->mr) {
		rc = rc_err_set(err, errno, "cannot register control buffers for %s: %s", c->peer,
				strerror(errno));
		kv_chan_fini(ch);
		return rc;
	}
	for (int i = 0; i < KV_CHAN_RECVS; i++) {
		rc = rc_post_recv(c, recv_buf(ch, i), KV_MSG_MAX, ch->mr->lkey, (uint64_t)i, err);
		if (rc) {
			kv_chan_fini(ch);
			return rc;
		}
	}
	ch->last_rx = ch->last_tx = rc_now();
	return 0;
}

void kv_chan_fini(struct kv_chan *ch)
{
	if (ch->mr)
		ibv_dereg_mr(ch->mr);
	free(ch->mem);
	ch->mr = NULL;
	ch->mem = NULL;
}

int kv_chan_send(struct kv_chan *ch, struct kv_msg *m, struct rc_err *err)
{
	unsigned char *b;
	int len, rc;

	if (ch->sent - ch->send_done >= KV_CHAN_SENDS)
		return rc_err_set(err, ENOBUFS,
				  "%s does not take its control messages (%d unacknowledged)",
				  ch->c->peer, KV_CHAN_SENDS);
	b = send_buf(ch, ch->sent);
	m->seq = ++ch->seq;
	len = kv_msg_encode(m, b, KV_MSG_MAX);
	if (len < 0)
		return rc_err_set(err, -len, "cannot encode a %s message: %s", kv_msg_name(m->type),
				  strerror(-len));
	rc = rc_post_send(ch->c, b, (uint32_t)len, ch->mr->lkey, ch->sent, err);
	if (rc)
		return rc;
	ch->sent++;
	ch->last_tx = rc_now();
	return 0;
}

int kv_chan_wc(struct kv_chan *ch, const struct ibv_wc *wc, struct kv_msg *m, uint32_t *pages,
	       struct rc_err *err)
{
	int slot = (int)(wc->wr_id & RC_WRID_MASK), rc;

	if (rc_wrid_op(wc->wr_id) == RC_OP_SEND && wc->opcode == IBV_WC_SEND) {
		ch->send_done++;
		return 0;
	}
	/* A receive completes as IBV_WC_RECV for a SEND only: an RDMA WRITE with
	 * immediate consumes a receive too, but leaves its buffer as it was. */
	if (rc_wrid_op(wc->wr_id) == RC_OP_RECV && wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
		return rc_err_set(err, EPROTO,
				  "%s sent an RDMA WRITE with immediate on the control QP",
				  ch->c->peer);
	if (rc_wrid_op(wc->wr_id) != RC_OP_RECV || wc->opcode != IBV_WC_RECV ||
	    slot >= KV_CHAN_RECVS)
		return rc_err_set(err, EPROTO,
				  "unexpected completion (opcode %d) from %s on the control QP",
				  (int)wc->opcode, ch->c->peer);
	rc = kv_msg_decode(recv_buf(ch, slot), wc->byte_len, m, pages, KV_MAX_REQ_PAGES);
	if (rc)
		return rc_err_set(err, EBADMSG, "%s sent a malformed control message (%u bytes)",
				  ch->c->peer, wc->byte_len);
	ch->last_rx = rc_now();
	rc = rc_post_recv(ch->c, recv_buf(ch, slot), KV_MSG_MAX, ch->mr->lkey, (uint64_t)slot, err);
	return rc ? rc : 1;
}
