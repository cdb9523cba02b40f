// SPDX-License-Identifier: MIT
/* The one message channel's bookkeeping (libcore/verbs/msgch.c) without a
 * device: the QPs are fakes whose post calls record the work requests. The
 * slot arithmetic, the wr_id round trip, and each refusal (wrong operation,
 * slot, generation, length, a send too many), each with the right answer
 * beside it; then the same for the pool form of the region server. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include <rdmactl/conn.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/msgch_core.h>

#define MAXREC 64

static struct {
	uint64_t wr_id;
	uint64_t addr;
	uint32_t len;
	int num_sge;
	bool send;
} rec[MAXREC];
static int nrec;
static int fail_next; /* the next post fails with this */

/* A work request, recorded (the first MAXREC). */
static void record(uint64_t wr_id, const struct ibv_sge *sg, int num_sge, bool send)
{
	if (nrec < MAXREC)
		rec[nrec++] = (typeof(rec[0])){ wr_id, sg[0].addr, sg[0].length, num_sge, send };
}

/* The error fail_next asked for, once. */
static int take_fail(void)
{
	int rc = fail_next;

	fail_next = 0;
	return rc;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	if (fail_next) {
		*bad = wr;
		return take_fail();
	}
	for (; wr; wr = wr->next)
		record(wr->wr_id, wr->sg_list, wr->num_sge, false);
	return 0;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	if (fail_next) {
		*bad = wr;
		return take_fail();
	}
	for (; wr; wr = wr->next)
		record(wr->wr_id, wr->sg_list, wr->num_sge, true);
	return 0;
}

static struct ibv_context ctx;
static struct ibv_qp qps[3];
static struct rc_conn conns[3];

/* A successful completion, as a device would give it (valid until the next call). */
static const struct ibv_wc *wc_of(uint64_t wr_id, enum ibv_wc_opcode op, uint32_t len)
{
	static struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.opcode = op;
	wc.byte_len = len;
	wc.status = IBV_WC_SUCCESS;
	return &wc;
}

static uint64_t recv_id(uint32_t slot, uint32_t gen)
{
	return rc_wrid(RC_OP_RECV, rc_msgch_user(slot, gen));
}

static int fake_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)srq;
	return fake_post_recv(NULL, wr, bad);
}

/* The pool form (the region server's): pairs posted to a shared receive
 * queue, a request in any, its reply from the same pair, a stale reply told
 * apart; each refusal beside its accepted case. */
static void pool_checks(void)
{
	struct rc_msgch_opts o = { .pool = 4, .slot = 64, .what = "the control channel" };
	struct ibv_srq srq = { .context = &ctx };
	struct rc_shared sh = { .srq = &srq, .srq_depth = 4 };
	struct rc_msgch ch;
	struct rc_msgch_rx rx;
	struct rc_err e;
	struct ibv_wc wc;
	uint64_t id2;

	ctx.ops.post_srq_recv = fake_post_srq_recv;
	nrec = 0;
	/* layouts: a pool has no connections of its own */
	CHECK_EQ_U64(rc_msgch_len(&o), 2 * 4 * 64);
	{
		struct rc_msgch_opts bad = o;

		bad.nconns = 1;
		bad.recvs = bad.sends = 1;
		CHECK(rc_msgch_init(&ch, &bad, &e) == -EINVAL);
		bad = o;
		bad.pool = -1;
		CHECK(rc_msgch_init(&ch, &bad, &e) == -EINVAL);
	}
	CHECK(rc_msgch_init(&ch, &o, &e) == 0);
	for (uint32_t s = 0; s < 4; s++)
		CHECK(rc_msgch_pool_post(&ch, &sh, s, &e) == 0);
	CHECK_EQ_U64(nrec, 4);
	CHECK(rc_msgch_pool_post(&ch, &sh, 2, &e) == -EINVAL); /* posted already */
	CHECK(rc_msgch_pool_post(&ch, &sh, 4, &e) == -EINVAL); /* no such pair */
	CHECK(rec[2].addr == (uintptr_t)rc_msgch_recv_buf(&ch, 2) && rec[2].len == 64);
	CHECK(rc_msgch_reply_buf(&ch, 2) == ch.mem + (4 + 2) * 64);
	id2 = rec[2].wr_id;
	CHECK(id2 == recv_id(2, 1));
	/* no reply from a pair that holds no request */
	CHECK(rc_msgch_pool_reply(&ch, &conns[0], 2, 8, &e) == -EINVAL);
	/* a request in pair 2, from any connection */
	CHECK(rc_msgch_pool_wc(&ch, wc_of(id2, IBV_WC_RECV, 40), &rx, &e) == RC_MSGCH_MSG);
	CHECK(rx.slot == 2 && rx.len == 40 && rx.data == rc_msgch_recv_buf(&ch, 2));
	/* the same completion again, or of another generation: refused */
	CHECK(rc_msgch_pool_wc(&ch, wc_of(id2, IBV_WC_RECV, 40), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_pool_wc(&ch, wc_of(recv_id(1, 2), IBV_WC_RECV, 8), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_pool_wc(&ch, wc_of(recv_id(9, 1), IBV_WC_RECV, 8), &rx, &e) == -EPROTO);
	/* its reply, from the pair's other half, named by the request's posting */
	CHECK(rc_msgch_pool_reply(&ch, &conns[0], 2, 65, &e) == -EMSGSIZE);
	CHECK(rc_msgch_pool_reply(&ch, &conns[0], 2, 8, &e) == 0);
	CHECK(rec[nrec - 1].send && rec[nrec - 1].addr == (uintptr_t)rc_msgch_reply_buf(&ch, 2));
	CHECK(rec[nrec - 1].wr_id == rc_wrid(RC_OP_SEND, rc_msgch_user(2, 1)));
	CHECK(rc_msgch_pool_wc(&ch, wc_of(rec[nrec - 1].wr_id, IBV_WC_SEND, 0), &rx, &e) ==
	      RC_MSGCH_SENT);
	CHECK(rx.slot == 2);
	/* the pair posted again before that reply completed (its connection
	 * went): the reply's completion is stale */
	CHECK(rc_msgch_pool_post(&ch, &sh, 2, &e) == 0);
	CHECK(rc_msgch_pool_wc(&ch, wc_of(rc_wrid(RC_OP_SEND, rc_msgch_user(2, 1)), IBV_WC_SEND, 0),
			       &rx, &e) == -ESTALE);
	/* and after that posting took a request, still stale */
	CHECK(rc_msgch_pool_wc(&ch, wc_of(recv_id(2, 2), IBV_WC_RECV, 8), &rx, &e) == RC_MSGCH_MSG);
	CHECK(rc_msgch_pool_wc(&ch, wc_of(rc_wrid(RC_OP_SEND, rc_msgch_user(2, 1)), IBV_WC_SEND, 0),
			       &rx, &e) == -ESTALE);
	/* a length outside min_len..max_len: the pair is named, then refused */
	ch.o.min_len = 8;
	CHECK(rc_msgch_pool_wc(&ch, wc_of(recv_id(0, 1), IBV_WC_RECV, 4), &rx, &e) == -EBADMSG);
	CHECK(rx.slot == 0);
	/* an immediate consumes a pair, no message to check */
	CHECK(rc_msgch_pool_wc(&ch, wc_of(recv_id(1, 1), IBV_WC_RECV_RDMA_WITH_IMM, 0), &rx, &e) ==
	      RC_MSGCH_IMM);
	/* an error completion names its pair; the status is the caller's */
	wc = *wc_of(recv_id(3, 1), IBV_WC_RECV, 0);
	wc.status = IBV_WC_WR_FLUSH_ERR;
	wc.opcode = (enum ibv_wc_opcode)0xff; /* not valid with an error */
	CHECK(rc_msgch_pool_wc(&ch, &wc, &rx, &e) == RC_MSGCH_MSG && rx.slot == 3);
	/* anything else is no pair of ours */
	CHECK(rc_msgch_pool_wc(&ch, wc_of(rc_wrid(RC_OP_WRITE, 1), IBV_WC_RDMA_WRITE, 0), &rx,
			       &e) == -EPROTO);
	rc_msgch_fini(&ch);
}

static int srq_posts[2];

static int fake_post_srq_count(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	srq_posts[(uintptr_t)srq->srq_context]++;
	return fake_post_recv(NULL, wr, bad);
}

/* shared_recvs (the group's form): sends per connection, the receive slots
 * shared through two shared receive queues, a message from any connection
 * in any of them; each refusal beside its accepted case. */
static void shared_checks(void)
{
	struct rc_msgch_opts o = { .nconns = 3,
				   .sends = 1,
				   .shared_recvs = 5,
				   .slot = 64,
				   .min_len = 8 };
	struct ibv_srq srq[2] = { { .context = &ctx, .srq_context = (void *)0 },
				  { .context = &ctx, .srq_context = (void *)1 } };
	struct rc_shared sh[2] = { { .srq = &srq[0] }, { .srq = &srq[1] } };
	struct rc_shared *shp[2] = { &sh[0], &sh[1] };
	struct rc_msgch ch;
	struct rc_msgch_rx rx;
	struct rc_err e;

	ctx.ops.post_srq_recv = fake_post_srq_count;
	nrec = 0;
	CHECK_EQ_U64(rc_msgch_len(&o), (5 + 3) * 64);
	{
		struct rc_msgch_opts bad = o;

		bad.recvs = 2; /* shared or a ring each, not both */
		CHECK(rc_msgch_init(&ch, &bad, &e) == -EINVAL);
	}
	CHECK(rc_msgch_init(&ch, &o, &e) == 0);
	/* nothing to post before the queues are known */
	CHECK(rc_msgch_repost(&ch, 0, &e) == -EINVAL);
	CHECK(rc_msgch_share(&ch, shp, 0, &e) == -EINVAL);
	CHECK(rc_msgch_share(&ch, shp, 2, &e) == 0);
	CHECK(srq_posts[0] == 3 && srq_posts[1] == 2);     /* slots 0, 2, 4 and 1, 3 */
	CHECK(rc_msgch_share(&ch, shp, 2, &e) == -EINVAL); /* once */
	/* a connection posts nothing of its own */
	CHECK(rc_msgch_start(&ch, 1, &conns[1], &e) == 0);
	CHECK_EQ_U64(nrec, 5);
	/* slot 3's message from connection 1, or from 2: either is fine */
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(3, 1), IBV_WC_RECV, 16), &rx, &e) == RC_MSGCH_MSG);
	CHECK(rx.slot == 3 && rx.data == rc_msgch_recv_buf(&ch, 3));
	CHECK(rc_msgch_wc(&ch, 2, wc_of(recv_id(4, 1), IBV_WC_RECV, 16), &rx, &e) == RC_MSGCH_MSG);
	/* taken already, another generation, beyond the slots, too short */
	CHECK(rc_msgch_wc(&ch, 2, wc_of(recv_id(3, 1), IBV_WC_RECV, 16), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 0, wc_of(recv_id(0, 2), IBV_WC_RECV, 16), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 0, wc_of(recv_id(5, 1), IBV_WC_RECV, 16), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 0, wc_of(recv_id(0, 1), IBV_WC_RECV, 4), &rx, &e) == -EBADMSG);
	/* slot 3 back to its queue (3 % 2), a new generation */
	CHECK(rc_msgch_repost(&ch, 3, &e) == 0);
	CHECK(srq_posts[1] == 3);
	CHECK(rec[nrec - 1].wr_id == recv_id(3, 2));
	CHECK(rc_msgch_repost(&ch, 3, &e) == -EINVAL); /* posted already */
	/* the send slots follow the shared receive slots */
	CHECK(rc_msgch_send_buf(&ch, 2) == ch.mem + (5 + 2) * 64);
	rc_msgch_fini(&ch);
}

int main(void)
{
	struct rc_msgch_opts o = { .nconns = 3,
				   .recvs = 4,
				   .sends = 2,
				   .slot = 64,
				   .min_len = 16,
				   .max_len = 48,
				   .what = "the test QP" };
	struct rc_msgch ch;
	struct rc_msgch_rx rx;
	struct rc_err e;
	struct ibv_wc wc;
	unsigned char *mem;

	ctx.ops.post_recv = fake_post_recv;
	ctx.ops.post_send = fake_post_send;
	for (int i = 0; i < 3; i++) {
		qps[i].context = &ctx;
		conns[i].qp = &qps[i];
		snprintf(conns[i].peer, sizeof(conns[i].peer), "peer %d", i);
	}

	/* The wr_id's user bits: slot and generation back as they went in, the
	 * generation cut to its 24 bits, the operation above both. */
	CHECK_EQ_U64(rc_msgch_user_slot(rc_msgch_user(0xfffffff0u, 0x123456)), 0xfffffff0u);
	CHECK_EQ_U64(rc_msgch_user_gen(rc_msgch_user(0xfffffff0u, 0x123456)), 0x123456);
	CHECK_EQ_U64(rc_msgch_user_gen(rc_msgch_user(7, 0x1234567)), 0x234567);
	CHECK(rc_wrid_op(recv_id(0xffffffffu, 0xffffff)) == RC_OP_RECV);
	CHECK_EQ_U64(rc_msgch_user_slot(recv_id(9, 3) & RC_WRID_MASK), 9);
	CHECK_EQ_U64(rc_msgch_user_gen(recv_id(9, 3) & RC_WRID_MASK), 3);

	/* Layouts: the size, and the ones that do not fit. */
	CHECK_EQ_U64(rc_msgch_len(&o), 3 * (4 + 2) * 64);
	{
		struct rc_msgch_opts bad = o;

		bad.min_len = 49;
		CHECK(rc_msgch_init(&ch, &bad, &e) == -EINVAL);
		bad = o;
		bad.max_len = 65;
		CHECK(rc_msgch_init(&ch, &bad, &e) == -EINVAL);
		bad = o;
		bad.recvs = 0;
		CHECK(rc_msgch_init(&ch, &bad, &e) == -EINVAL);
		bad = o;
		bad.sends = 0;
		CHECK(rc_msgch_init(&ch, &bad, &e) == -EINVAL);
		bad = o;
		bad.nconns = 0;
		CHECK(rc_msgch_init(&ch, &bad, &e) == 0);
		CHECK(ch.mem == NULL && rc_msgch_len(&bad) == 0);
		CHECK(rc_msgch_reg(&ch, NULL, &e) == 0);
		rc_msgch_fini(&ch);
		bad = o;
		bad.max_len = 0; /* the slot */
		CHECK(rc_msgch_init(&ch, &bad, &e) == 0);
		CHECK_EQ_U64(ch.o.max_len, 64);
		rc_msgch_fini(&ch);
	}
	CHECK(rc_msgch_init(&ch, &o, &e) == 0);
	mem = ch.mem;
	CHECK(((uintptr_t)mem & 4095) == 0);
	CHECK(rc_msgch_start(&ch, 3, &conns[0], &e) == -EINVAL);

	/* Connection 1: its four receive slots 4..7, generation 1, whole slots. */
	nrec = 0;
	CHECK(rc_msgch_start(&ch, 1, &conns[1], &e) == 0);
	CHECK_EQ_U64(nrec, 4);
	for (int i = 0; i < nrec; i++) {
		CHECK_EQ_U64(rec[i].wr_id, recv_id(4 + (uint32_t)i, 1));
		CHECK_EQ_U64(rec[i].addr, (uintptr_t)(mem + (4 + i) * 64));
		CHECK_EQ_U64(rec[i].len, 64);
		CHECK(!rec[i].send);
	}
	CHECK(rc_msgch_recv_buf(&ch, 5) == mem + 5 * 64);

	/* A message in slot 5: handed over in place, then refused a second time. */
	wc = *wc_of(rec[1].wr_id, IBV_WC_RECV, 20);
	CHECK(rc_msgch_wc(&ch, 1, &wc, &rx, &e) == RC_MSGCH_MSG);
	CHECK_EQ_U64(rx.slot, 5);
	CHECK(rx.data == mem + 5 * 64);
	CHECK_EQ_U64(rx.len, 20);
	CHECK(rc_msgch_wc(&ch, 1, &wc, &rx, &e) == -EPROTO);
	CHECK(strstr(e.msg, "peer 1") && strstr(e.msg, "slot 5"));
	/* Posted again: a new generation; the old wr_id is stale. */
	nrec = 0;
	CHECK(rc_msgch_repost(&ch, 5, &e) == 0);
	CHECK(rc_msgch_repost(&ch, 5, &e) == -EINVAL); /* posted already */
	CHECK_EQ_U64(nrec, 1);
	CHECK_EQ_U64(rec[0].wr_id, recv_id(5, 2));
	CHECK(rc_msgch_wc(&ch, 1, &wc, &rx, &e) == -EPROTO);
	wc = *wc_of(recv_id(5, 2), IBV_WC_RECV, 20);
	CHECK(rc_msgch_wc(&ch, 1, &wc, &rx, &e) == RC_MSGCH_MSG);
	CHECK(rc_msgch_repost(&ch, 5, &e) == 0);

	/* Another connection's slot, and a slot of one not started. */
	CHECK(rc_msgch_wc(&ch, 0, wc_of(recv_id(6, 1), IBV_WC_RECV, 20), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(8, 1), IBV_WC_RECV, 20), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(3, 0), IBV_WC_RECV, 20), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(1u << 31, 1), IBV_WC_RECV, 20), &rx, &e) == -EPROTO);

	/* Lengths: min_len and max_len pass, one byte beyond either does not. */
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(6, 1), IBV_WC_RECV, 15), &rx, &e) == -EBADMSG);
	CHECK(strstr(e.msg, "15 bytes (16 to 48 expected)"));
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(7, 1), IBV_WC_RECV, 49), &rx, &e) == -EBADMSG);
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(4, 1), IBV_WC_RECV, 16), &rx, &e) == RC_MSGCH_MSG);
	CHECK(rc_msgch_repost(&ch, 4, &e) == 0);
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(4, 2), IBV_WC_RECV, 48), &rx, &e) == RC_MSGCH_MSG);
	CHECK(rc_msgch_repost(&ch, 4, &e) == 0);
	CHECK(rc_msgch_repost(&ch, 6, &e) == 0); /* the refused ones, given back */
	CHECK(rc_msgch_repost(&ch, 7, &e) == 0);

	/* Opcodes: a receive's wr_id with a send's opcode, the reverse, a write;
	 * an RDMA WRITE with immediate takes the slot without a message. */
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(6, 2), IBV_WC_SEND, 20), &rx, &e) == -EPROTO);
	CHECK(strstr(e.msg, "unexpected completion (opcode 0) from peer 1 on the test QP"));
	CHECK(rc_msgch_wc(&ch, 1, wc_of(rc_wrid(RC_OP_SEND, rc_msgch_user(6, 2)), IBV_WC_RECV, 20),
			  &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 1,
			  wc_of(rc_wrid(RC_OP_WRITE, rc_msgch_user(6, 2)), IBV_WC_RDMA_WRITE, 0),
			  &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(6, 2), IBV_WC_RECV_RDMA_WITH_IMM, 4096), &rx, &e) ==
	      RC_MSGCH_IMM);
	CHECK_EQ_U64(rx.slot, 6);
	CHECK(rc_msgch_repost(&ch, 6, &e) == 0);

	/* A failed post leaves the slot unposted: its completion is refused. */
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(7, 2), IBV_WC_RECV, 20), &rx, &e) == RC_MSGCH_MSG);
	fail_next = ENOMEM;
	CHECK(rc_msgch_repost(&ch, 7, &e) == -ENOMEM);
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(7, 3), IBV_WC_RECV, 20), &rx, &e) == -EPROTO);
	/* Connection 1 again, on a new QP (an accept tried again): all four posted
	 * afresh, slot 7 too, and the old QP's completions refused. */
	nrec = 0;
	CHECK(rc_msgch_start(&ch, 1, &conns[0], &e) == 0);
	CHECK_EQ_U64(nrec, 4);
	CHECK_EQ_U64(rec[3].wr_id, recv_id(7, 4));
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(5, 3), IBV_WC_RECV, 20), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 1, wc_of(recv_id(5, 4), IBV_WC_RECV, 20), &rx, &e) == RC_MSGCH_MSG);

	/* Sends of connection 2: slots 4 and 5 of the send slots, after all 12
	 * receive slots; a third outstanding is refused, naming the peer. */
	CHECK(rc_msgch_start(&ch, 2, &conns[2], &e) == 0);
	CHECK_EQ_U64(rc_msgch_send_room(&ch, 2), 2);
	CHECK(rc_msgch_send_buf(&ch, 2) == mem + (12 + 4) * 64);
	nrec = 0;
	CHECK(rc_msgch_send(&ch, 2, 20, &e) == 0);
	CHECK(rc_msgch_send_buf(&ch, 2) == mem + (12 + 5) * 64);
	CHECK(rc_msgch_send(&ch, 2, 65, &e) == -EMSGSIZE);
	CHECK(rc_msgch_send(&ch, 2, 64, &e) == 0);
	CHECK_EQ_U64(rc_msgch_send_room(&ch, 2), 0);
	CHECK(rc_msgch_send_check(&ch, 2, &e) == -ENOBUFS);
	CHECK(strstr(e.msg, "peer 2 does not take its control messages (2 unacknowledged)"));
	CHECK(rc_msgch_send(&ch, 2, 20, &e) == -ENOBUFS);
	CHECK_EQ_U64(nrec, 2);
	CHECK(rec[0].send && rec[1].send);
	CHECK_EQ_U64(rec[0].wr_id, rc_wrid(RC_OP_SEND, rc_msgch_user(4, 0)));
	CHECK_EQ_U64(rec[0].addr, (uintptr_t)(mem + (12 + 4) * 64));
	CHECK_EQ_U64(rec[0].len, 20);
	CHECK_EQ_U64(rec[1].wr_id, rc_wrid(RC_OP_SEND, rc_msgch_user(5, 0)));
	CHECK_EQ_U64(rec[1].len, 64);
	/* Completions in order only, of this connection only. */
	CHECK(rc_msgch_wc(&ch, 2, wc_of(rec[1].wr_id, IBV_WC_SEND, 0), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 1, wc_of(rec[0].wr_id, IBV_WC_SEND, 0), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 2, wc_of(rec[0].wr_id, IBV_WC_RECV, 0), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 2, wc_of(rec[0].wr_id, IBV_WC_SEND, 0), &rx, &e) == RC_MSGCH_SENT);
	CHECK_EQ_U64(rc_msgch_send_room(&ch, 2), 1);
	/* The ring wraps: slot 4 again, its next round in the generation bits. */
	CHECK(rc_msgch_send_buf(&ch, 2) == mem + (12 + 4) * 64);
	CHECK(rc_msgch_send(&ch, 2, 16, &e) == 0);
	CHECK_EQ_U64(rec[2].wr_id, rc_wrid(RC_OP_SEND, rc_msgch_user(4, 1)));
	CHECK(rc_msgch_wc(&ch, 2, wc_of(rec[1].wr_id, IBV_WC_SEND, 0), &rx, &e) == RC_MSGCH_SENT);
	CHECK(rc_msgch_wc(&ch, 2, wc_of(rec[0].wr_id, IBV_WC_SEND, 0), &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 2, wc_of(rec[2].wr_id, IBV_WC_SEND, 0), &rx, &e) == RC_MSGCH_SENT);
	/* Nothing outstanding: a send completion is refused. */
	CHECK(rc_msgch_wc(&ch, 2, wc_of(rc_wrid(RC_OP_SEND, rc_msgch_user(5, 1)), IBV_WC_SEND, 0),
			  &rx, &e) == -EPROTO);
	CHECK(rc_msgch_wc(&ch, 2, wc_of(rec[2].wr_id, IBV_WC_SEND, 0), &rx, &e) == -EPROTO);
	/* A failed post counts nothing; a failed connection's sends are let go. */
	fail_next = EINVAL;
	CHECK(rc_msgch_send(&ch, 2, 16, &e) == -EINVAL);
	CHECK_EQ_U64(rc_msgch_send_room(&ch, 2), 2);
	CHECK(rc_msgch_send(&ch, 2, 16, &e) == 0);
	CHECK(rc_msgch_send(&ch, 2, 16, &e) == 0);
	CHECK_EQ_U64(rc_msgch_send_room(&ch, 2), 0);
	rc_msgch_sends_lost(&ch, 2);
	CHECK_EQ_U64(rc_msgch_send_room(&ch, 2), 2);
	CHECK(rc_msgch_wc(&ch, 3, wc_of(rec[2].wr_id, IBV_WC_SEND, 0), &rx, &e) == -EPROTO);
	rc_msgch_fini(&ch);
	rc_msgch_fini(&ch); /* twice: harmless */
	CHECK(ch.mem == NULL);
	pool_checks();
	shared_checks();
	CHECK_DONE();
}
