// SPDX-License-Identifier: MIT
/*
 * The one message channel (msgch_core.h): one registered area of fixed-size
 * slots, receive slots and send slots per connection, the slot and the
 * receive's generation in each wr_id, sends refused when all of a
 * connection's are outstanding, and every completion checked (operation,
 * slot, length) before its bytes are handed over.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/msgch_core.h>

/* Receive slots: a pool's pairs, or every connection's. */
static uint64_t nrecv(const struct rc_msgch_opts *o)
{
	if (o->pool > 0)
		return (uint64_t)o->pool;
	if (o->nconns > 0 && o->shared_recvs > 0)
		return (uint64_t)o->shared_recvs;
	return o->nconns > 0 ? (uint64_t)o->nconns * (uint64_t)o->recvs : 0;
}

/* Send slots: a pool's reply halves, or every connection's. */
static uint64_t nsend(const struct rc_msgch_opts *o)
{
	if (o->pool > 0)
		return (uint64_t)o->pool;
	return o->nconns > 0 ? (uint64_t)o->nconns * (uint64_t)o->sends : 0;
}

size_t rc_msgch_len(const struct rc_msgch_opts *o)
{
	return (size_t)(nrecv(o) + nsend(o)) * (size_t)o->slot;
}

static bool layout_ok(const struct rc_msgch_opts *o, uint32_t max_len)
{
	if (!o->slot || o->min_len > max_len || max_len > o->slot || o->pool < 0 || o->nconns < 0)
		return false;
	if (o->pool)
		return !o->nconns && !o->shared_recvs && o->pool <= INT32_MAX / 2;
	if (o->shared_recvs)
		return o->shared_recvs > 0 && !o->recvs && o->sends >= 1 &&
		       (uint64_t)o->shared_recvs + (uint64_t)o->nconns * (uint64_t)o->sends <=
			       UINT32_MAX;
	return o->recvs >= 1 && o->sends >= 1 &&
	       (uint64_t)o->nconns * ((uint64_t)o->recvs + (uint64_t)o->sends) <= UINT32_MAX;
}

int rc_msgch_init(struct rc_msgch *ch, const struct rc_msgch_opts *o, struct rc_err *err)
{
	size_t len;

	memset(ch, 0, sizeof(*ch));
	ch->o = *o;
	if (!ch->o.max_len)
		ch->o.max_len = o->slot;
	if (!layout_ok(o, ch->o.max_len))
		return rc_err_set(err, EINVAL,
				  "a message channel of %d connections, %d receive and %d send "
				  "slots, or %d pairs, of %u bytes (messages of %u to %u) does not "
				  "fit",
				  o->nconns, o->recvs, o->sends, o->pool, o->slot, o->min_len,
				  ch->o.max_len);
	if (!nrecv(o))
		return 0;
	len = rc_msgch_len(o);
	ch->mem = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	ch->conn = o->nconns ? calloc((size_t)o->nconns, sizeof(*ch->conn)) : NULL;
	ch->gen = calloc(nrecv(o), sizeof(*ch->gen));
	ch->posted = calloc(nrecv(o), sizeof(*ch->posted));
	if (!ch->mem || (o->nconns && !ch->conn) || !ch->gen || !ch->posted) {
		rc_msgch_fini(ch);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	memset(ch->mem, 0, len);
	ch->len = len;
	return 0;
}

int rc_msgch_reg(struct rc_msgch *ch, struct ibv_pd *pd, struct rc_err *err)
{
	if (!ch->len)
		return 0;
	ch->mr = ibv_reg_mr(pd, ch->mem, ch->len, IBV_ACCESS_LOCAL_WRITE);
	if (!ch->mr)
		return rc_err_set(err, errno, "cannot register %zu bytes of message buffers: %s",
				  ch->len, strerror(errno));
	return 0;
}

int rc_msgch_fini(struct rc_msgch *ch)
{
	/* ibv_dereg_mr returns its error; it does not set errno */
	int rc = ch->mr ? -abs(ibv_dereg_mr(ch->mr)) : 0;

	free(ch->mem);
	free(ch->conn);
	free(ch->gen);
	free(ch->posted);
	ch->mr = NULL;
	ch->mem = NULL;
	ch->conn = NULL;
	ch->gen = NULL;
	ch->posted = NULL;
	ch->len = 0;
	return rc;
}

void *rc_msgch_recv_buf(const struct rc_msgch *ch, uint32_t s)
{
	return ch->mem + (size_t)s * ch->o.slot;
}

static uint32_t send_slot(const struct rc_msgch *ch, int k, uint64_t n)
{
	return (uint32_t)((uint64_t)k * (uint64_t)ch->o.sends + n % (uint64_t)ch->o.sends);
}

void *rc_msgch_send_buf(const struct rc_msgch *ch, int k)
{
	return ch->mem + ((size_t)nrecv(&ch->o) + send_slot(ch, k, ch->conn[k].sent)) * ch->o.slot;
}

static const char *peer(const struct rc_msgch *ch, int k)
{
	return ch->conn[k].c ? ch->conn[k].c->peer : "a peer not connected";
}

/* Post receive slot s, a new generation, to c's receive queue or (c NULL)
 * to sh's shared one. */
static int post_slot(struct rc_msgch *ch, uint32_t s, struct rc_conn *c, struct rc_shared *sh,
		     struct rc_err *err)
{
	uint32_t lkey = ch->mr ? ch->mr->lkey : 0;
	int rc;

	ch->gen[s] = (ch->gen[s] + 1) & RC_MSGCH_GEN_MASK;
	rc = c ? rc_post_recv(c, rc_msgch_recv_buf(ch, s), ch->o.slot, lkey,
			      rc_msgch_user(s, ch->gen[s]), err)
	       : rc_shared_post_recv(sh, rc_msgch_recv_buf(ch, s), ch->o.slot, lkey,
				     rc_msgch_user(s, ch->gen[s]), err);
	if (!rc)
		ch->posted[s] = true;
	return rc;
}

int rc_msgch_repost(struct rc_msgch *ch, uint32_t s, struct rc_err *err)
{
	int k = ch->o.shared_recvs ? 0 : (int)(s / (uint32_t)ch->o.recvs);

	if (s >= nrecv(&ch->o) || ch->posted[s] || (ch->o.shared_recvs ? !ch->nsrq : !ch->conn[k].c))
		return rc_err_set(err, EINVAL, "receive slot %u cannot be posted again", s);
	if (ch->o.shared_recvs)
		return post_slot(ch, s, NULL, ch->srq[s % (uint32_t)ch->nsrq], err);
	return post_slot(ch, s, ch->conn[k].c, NULL, err);
}

int rc_msgch_start(struct rc_msgch *ch, int k, struct rc_conn *c, struct rc_err *err)
{
	if (k < 0 || k >= ch->o.nconns)
		return rc_err_set(err, EINVAL, "no connection %d in a message channel of %d", k,
				  ch->o.nconns);
	ch->conn[k] = (struct rc_msgch_conn){ .c = c };
	if (ch->o.shared_recvs)
		return 0; /* its messages land in the shared slots */
	/* a new QP (an accept tried again): nothing is posted on it yet, and the
	 * old one's completions are of the generations before */
	for (int i = 0; i < ch->o.recvs; i++)
		ch->posted[k * ch->o.recvs + i] = false;
	for (int i = 0; i < ch->o.recvs; i++) {
		int rc = rc_msgch_repost(ch, (uint32_t)(k * ch->o.recvs + i), err);

		if (rc)
			return rc;
	}
	return 0;
}

int rc_msgch_share(struct rc_msgch *ch, struct rc_shared *const *sh, int n, struct rc_err *err)
{
	if (!ch->o.shared_recvs || ch->nsrq || n < 1 || n > RC_SHARED_SET_MAX)
		return rc_err_set(err, EINVAL,
				  "%d shared receive queues for a message channel of "
				  "%d shared receive slots",
				  n, ch->o.shared_recvs);
	for (int i = 0; i < n; i++)
		ch->srq[i] = sh[i];
	ch->nsrq = n;
	for (uint32_t s = 0; s < nrecv(&ch->o); s++) {
		int rc = rc_msgch_repost(ch, s, err);

		if (rc)
			return rc;
	}
	return 0;
}

int rc_msgch_send_room(const struct rc_msgch *ch, int k)
{
	return ch->o.sends - (int)(ch->conn[k].sent - ch->conn[k].done);
}

int rc_msgch_send_check(const struct rc_msgch *ch, int k, struct rc_err *err)
{
	if (rc_msgch_send_room(ch, k) > 0)
		return 0;
	return rc_err_set(err, ENOBUFS, "%s does not take its control messages (%d unacknowledged)",
			  peer(ch, k), ch->o.sends);
}

int rc_msgch_send(struct rc_msgch *ch, int k, uint32_t len, struct rc_err *err)
{
	struct rc_msgch_conn *cc = &ch->conn[k];
	uint32_t s = send_slot(ch, k, cc->sent);
	int rc;

	if ((rc = rc_msgch_send_check(ch, k, err)))
		return rc;
	if (len > ch->o.slot)
		return rc_err_set(err, EMSGSIZE, "a message of %u bytes to %s (at most %u)", len,
				  peer(ch, k), ch->o.slot);
	rc = rc_post_send(cc->c, rc_msgch_send_buf(ch, k), len, ch->mr ? ch->mr->lkey : 0,
			  rc_msgch_user(s, (uint32_t)(cc->sent / (uint64_t)ch->o.sends)), err);
	if (rc)
		return rc;
	cc->sent++;
	return 0;
}

void rc_msgch_sends_lost(struct rc_msgch *ch, int k)
{
	ch->conn[k].done = ch->conn[k].sent;
}

static int unexpected(const struct rc_msgch *ch, int k, const struct ibv_wc *wc, struct rc_err *err)
{
	return rc_err_set(err, EPROTO, "unexpected completion (opcode %d) from %s%s%s",
			  (int)wc->opcode, peer(ch, k), ch->o.what ? " on " : "",
			  ch->o.what ? ch->o.what : "");
}

int rc_msgch_wc(struct rc_msgch *ch, int k, const struct ibv_wc *wc, struct rc_msgch_rx *rx,
		struct rc_err *err)
{
	enum rc_op op = rc_wrid_op(wc->wr_id);
	uint64_t user = wc->wr_id & RC_WRID_MASK;
	uint32_t s = rc_msgch_user_slot(user), gen = rc_msgch_user_gen(user);

	if (k < 0 || k >= ch->o.nconns)
		return rc_err_set(err, EPROTO, "a completion of connection %d, not one of %d", k,
				  ch->o.nconns);
	if (op == RC_OP_SEND && wc->opcode == IBV_WC_SEND) {
		struct rc_msgch_conn *cc = &ch->conn[k];

		/* one QP completes its sends in order: this is the oldest */
		if (cc->done == cc->sent || s != send_slot(ch, k, cc->done) ||
		    gen != (uint32_t)(cc->done / (uint64_t)ch->o.sends) % (RC_MSGCH_GEN_MASK + 1))
			return rc_err_set(err, EPROTO,
					  "a send completion from %s for slot %u, not the next one "
					  "outstanding",
					  peer(ch, k), s);
		cc->done++;
		return RC_MSGCH_SENT;
	}
	if (op != RC_OP_RECV ||
	    (wc->opcode != IBV_WC_RECV && wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM))
		return unexpected(ch, k, wc, err);
	if ((!ch->o.shared_recvs && s / (uint32_t)ch->o.recvs != (uint32_t)k) ||
	    s >= nrecv(&ch->o) || !ch->posted[s] || gen != ch->gen[s])
		return rc_err_set(err, EPROTO,
				  "a receive completion from %s for slot %u (generation %u) that "
				  "is not posted",
				  peer(ch, k), s, gen);
	ch->posted[s] = false;
	rx->slot = s;
	rx->data = rc_msgch_recv_buf(ch, s);
	rx->len = wc->byte_len;
	/* An RDMA WRITE with immediate consumes a receive but leaves its buffer
	 * as it was: no message to check. */
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
		return RC_MSGCH_IMM;
	if (wc->byte_len < ch->o.min_len || wc->byte_len > ch->o.max_len)
		return rc_err_set(err, EBADMSG, "a control message of %u bytes (%u to %u expected)",
				  wc->byte_len, ch->o.min_len, ch->o.max_len);
	return RC_MSGCH_MSG;
}

/* Pool channels (the server's form). */

void *rc_msgch_reply_buf(const struct rc_msgch *ch, uint32_t s)
{
	return ch->mem + ((size_t)nrecv(&ch->o) + s) * ch->o.slot;
}

int rc_msgch_pool_post(struct rc_msgch *ch, struct rc_shared *sh, uint32_t s, struct rc_err *err)
{
	if (!ch->o.pool || s >= nrecv(&ch->o) || ch->posted[s])
		return rc_err_set(err, EINVAL, "pair %u cannot be posted again", s);
	return post_slot(ch, s, NULL, sh, err);
}

int rc_msgch_pool_reply(struct rc_msgch *ch, struct rc_conn *c, uint32_t s, uint32_t len,
			struct rc_err *err)
{
	if (!ch->o.pool || s >= nrecv(&ch->o) || ch->posted[s])
		return rc_err_set(err, EINVAL, "pair %u holds no request to answer", s);
	if (len > ch->o.slot)
		return rc_err_set(err, EMSGSIZE, "a reply of %u bytes to %s (at most %u)", len,
				  c->peer, ch->o.slot);
	return rc_post_send(c, rc_msgch_reply_buf(ch, s), len, ch->mr ? ch->mr->lkey : 0,
			    rc_msgch_user(s, ch->gen[s]), err);
}

int rc_msgch_pool_wc(struct rc_msgch *ch, const struct ibv_wc *wc, struct rc_msgch_rx *rx,
		     struct rc_err *err)
{
	enum rc_op op = rc_wrid_op(wc->wr_id);
	uint64_t user = wc->wr_id & RC_WRID_MASK;
	uint32_t s = rc_msgch_user_slot(user), gen = rc_msgch_user_gen(user);
	bool ours = ch->o.pool && s < nrecv(&ch->o);

	if (op == RC_OP_SEND && ours) {
		rx->slot = s;
		/* posted again since: the reply of a connection that went */
		if (ch->posted[s] || gen != ch->gen[s])
			return rc_err_set(err, ESTALE,
					  "the completion of a reply from pair %u, "
					  "posted again since",
					  s);
		return RC_MSGCH_SENT;
	}
	if (op != RC_OP_RECV || !ours || !ch->posted[s] || gen != ch->gen[s])
		return rc_err_set(err, EPROTO,
				  "a completion (opcode %d) for pair %u (generation %u) that is "
				  "not posted",
				  (int)wc->opcode, s, gen);
	ch->posted[s] = false;
	rx->slot = s;
	rx->data = rc_msgch_recv_buf(ch, s);
	rx->len = wc->byte_len;
	if (wc->status != IBV_WC_SUCCESS)
		return RC_MSGCH_MSG; /* the caller reads the status */
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
		return RC_MSGCH_IMM;
	if (wc->opcode != IBV_WC_RECV)
		return rc_err_set(err, EPROTO, "unexpected completion (opcode %d) for pair %u",
				  (int)wc->opcode, s);
	if (wc->byte_len < ch->o.min_len || wc->byte_len > ch->o.max_len)
		return rc_err_set(err, EBADMSG, "a control message of %u bytes (%u to %u expected)",
				  wc->byte_len, ch->o.min_len, ch->o.max_len);
	return RC_MSGCH_MSG;
}
