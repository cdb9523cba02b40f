// SPDX-License-Identifier: MIT
/*
 * The one way work requests are built and posted: every engine (the region
 * client, the pipelining engine of pipe.c through the verbs transport,
 * topology verify) describes a work request as a struct rc_wr, chains them
 * per QP in a struct rc_chain and posts the chain with one ibv_post_send.
 * Which one is signalled, the window and the accounting: pipe.c.
 */
#include <errno.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>

const char *rc_op_name(enum rc_op op)
{
	switch (op) {
	case RC_OP_WRITE:
		return "RDMA WRITE";
	case RC_OP_WRITE_IMM:
		return "RDMA WRITE_WITH_IMM";
	case RC_OP_READ:
		return "RDMA READ";
	case RC_OP_FAA:
		return "ATOMIC FETCH_ADD";
	case RC_OP_CAS:
		return "ATOMIC CMP_SWAP";
	case RC_OP_SEND:
		return "SEND";
	case RC_OP_RECV:
		return "RECV";
	default:
		return "operation";
	}
}

static enum ibv_wr_opcode wr_opcode(enum rc_op op)
{
	switch (op) {
	case RC_OP_WRITE_IMM:
		return IBV_WR_RDMA_WRITE_WITH_IMM;
	case RC_OP_READ:
		return IBV_WR_RDMA_READ;
	case RC_OP_FAA:
		return IBV_WR_ATOMIC_FETCH_AND_ADD;
	case RC_OP_CAS:
		return IBV_WR_ATOMIC_CMP_AND_SWP;
	case RC_OP_SEND:
		return IBV_WR_SEND;
	default:
		return IBV_WR_RDMA_WRITE;
	}
}

void rc_wr_build(const struct rc_wr *d, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	*sge = (struct ibv_sge){ .addr = d->laddr, .length = d->len, .lkey = d->lkey };
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = rc_wrid(d->op, d->user);
	wr->sg_list = sge;
	/* A write of no bytes (a bare immediate) carries no scatter entry. */
	wr->num_sge = d->len || d->op == RC_OP_FAA || d->op == RC_OP_CAS ? 1 : 0;
	wr->opcode = wr_opcode(d->op);
	wr->send_flags = d->signaled ? IBV_SEND_SIGNALED : 0;
	switch (d->op) {
	case RC_OP_FAA:
	case RC_OP_CAS:
		wr->wr.atomic.remote_addr = d->raddr;
		wr->wr.atomic.rkey = (uint32_t)d->rkey; /* verbs keys are 32 bits */
		wr->wr.atomic.compare_add = d->compare_add;
		wr->wr.atomic.swap = d->swap;
		break;
	case RC_OP_SEND:
		break;
	default:
		wr->imm_data = htobe32(d->imm);
		wr->wr.rdma.remote_addr = d->raddr;
		wr->wr.rdma.rkey = (uint32_t)d->rkey;
		break;
	}
}

bool rc_chain_add(struct rc_chain *ch, const struct rc_wr *d)
{
	if (!ch->n)
		ch->ng = 0;
	if (ch->n >= RC_CHAIN_MAX || (d->sg && d->nsg > (uint32_t)(RC_CHAIN_GATHER - ch->ng)))
		return false;
	rc_wr_build(d, &ch->wr[ch->n], &ch->sge[ch->n]);
	if (d->sg) {
		struct ibv_sge *g = &ch->gather[ch->ng];

		for (uint32_t i = 0; i < d->nsg; i++)
			g[i] = (struct ibv_sge){ .addr = d->sg[i].addr,
						 .length = d->sg[i].len,
						 .lkey = d->lkey };
		ch->wr[ch->n].sg_list = g;
		ch->wr[ch->n].num_sge = (int)d->nsg;
		ch->ng += (int)d->nsg;
	}
	if (ch->n)
		ch->wr[ch->n - 1].next = &ch->wr[ch->n];
	ch->n++;
	return true;
}

int rc_chain_post(struct rc_conn *c, struct rc_chain *ch, struct rc_err *err)
{
	return rc_chain_post_qp(c->qp, c->peer, ch, err);
}

int rc_chain_post_qp(struct ibv_qp *qp, const char *peer, struct rc_chain *ch, struct rc_err *err)
{
	struct ibv_send_wr *bad = NULL;
	int n = ch->n, rc;

	if (!n)
		return 0;
	ch->n = 0;
	/* ibv_post_send returns the error; it does not set errno. */
	rc = ibv_post_send(qp, ch->wr, &bad);
	if (rc) {
		enum rc_op op = rc_wrid_op(bad ? bad->wr_id : ch->wr[0].wr_id);

		return rc_err_set(err, rc, "cannot post %s to %s: %s", rc_op_name(op), peer,
				  strerror(rc));
	}
	return n;
}

static int post_one(struct rc_conn *c, const struct rc_wr *d, struct rc_err *err)
{
	struct rc_chain ch;
	int rc;

	ch.n = 0;
	rc_chain_add(&ch, d);
	rc = rc_chain_post(c, &ch, err);
	return rc < 0 ? rc : 0;
}

int rc_post_rdma(struct rc_conn *c, enum rc_op op, void *laddr, uint32_t len, uint32_t lkey,
		 uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t user, bool signaled,
		 struct rc_err *err)
{
	struct rc_wr d = { .op = op == RC_OP_READ || op == RC_OP_WRITE_IMM ? op : RC_OP_WRITE,
			   .laddr = (uintptr_t)laddr,
			   .len = len,
			   .lkey = lkey,
			   .raddr = raddr,
			   .rkey = rkey,
			   .imm = imm,
			   .user = user,
			   .signaled = signaled };

	return post_one(c, &d, err);
}

int rc_post_atomic(struct rc_conn *c, enum rc_op op, uint64_t *result, uint32_t lkey,
		   uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap,
		   uint64_t user, struct rc_err *err)
{
	struct rc_wr d = { .op = op == RC_OP_CAS ? RC_OP_CAS : RC_OP_FAA,
			   .laddr = (uintptr_t)result,
			   .len = 8,
			   .lkey = lkey,
			   .raddr = raddr,
			   .rkey = rkey,
			   .compare_add = compare_add,
			   .swap = swap,
			   .user = user,
			   .signaled = true };

	return post_one(c, &d, err);
}

int rc_post_send(struct rc_conn *c, const void *buf, uint32_t len, uint32_t lkey, uint64_t user,
		 struct rc_err *err)
{
	struct rc_wr d = { .op = RC_OP_SEND,
			   .laddr = (uintptr_t)buf,
			   .len = len,
			   .lkey = lkey,
			   .user = user,
			   .signaled = true };

	return post_one(c, &d, err);
}

int rc_post_recv(struct rc_conn *c, void *buf, uint32_t len, uint32_t lkey, uint64_t user,
		 struct rc_err *err)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { 0 }, *bad;
	int rc;

	wr.wr_id = rc_wrid(RC_OP_RECV, user);
	wr.sg_list = &sge;
	wr.num_sge = buf ? 1 : 0; /* no buffer: a receive for an immediate only */
	rc = ibv_post_recv(c->qp, &wr, &bad);
	return rc ? rc_err_set(err, rc, "cannot post %s to %s: %s", rc_op_name(RC_OP_RECV), c->peer,
			       strerror(rc))
		  : 0;
}

int rc_split_len(uint64_t len, uint32_t max,
		 int (*piece)(void *arg, uint64_t off, uint32_t len, bool last), void *arg)
{
	uint64_t off = 0;

	if (!max)
		return -EINVAL;
	do {
		uint32_t n = len - off < max ? (uint32_t)(len - off) : max;
		int rc = piece(arg, off, n, off + n == len);

		if (rc)
			return rc;
		off += n;
	} while (off < len);
	return 0;
}

uint32_t rc_conn_max_msg(const struct rc_conn *c)
{
	struct ibv_port_attr pa;
	uint32_t cap = 1u << 30;

	if (!c || !c->verbs || ibv_query_port(c->verbs, c->port_num ? c->port_num : 1, &pa) ||
	    !pa.max_msg_sz)
		return cap;
	return pa.max_msg_sz < cap ? pa.max_msg_sz : cap;
}
