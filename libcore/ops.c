// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdmactl/ops.h>

#define MAX_BATCH 64
#define POLL_BATCH 64

double rc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *rc_op_name(enum rc_op op)
{
	switch (op) {
	case RC_OP_WRITE: return "RDMA WRITE";
	case RC_OP_WRITE_IMM: return "RDMA WRITE_WITH_IMM";
	case RC_OP_READ: return "RDMA READ";
	case RC_OP_FAA: return "ATOMIC FETCH_ADD";
	case RC_OP_CAS: return "ATOMIC CMP_SWAP";
	case RC_OP_SEND: return "SEND";
	case RC_OP_RECV: return "RECV";
	default: return "operation";
	}
}

int rc_wc_error(const struct rc_conn *c, const struct ibv_wc *wc, struct rc_err *err)
{
	enum rc_op op = rc_wrid_op(wc->wr_id);
	const char *hint = "";

	switch (wc->status) {
	case IBV_WC_REM_ACCESS_ERR:
		hint = " (outside the region, or not allowed by its access)";
		break;
	case IBV_WC_RETRY_EXC_ERR:
		hint = " (the peer stopped answering: is it still running?)";
		break;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		hint = " (the peer posted no receive)";
		break;
	case IBV_WC_WR_FLUSH_ERR:
		hint = " (the connection had already failed)";
		break;
	default:
		break;
	}
	return rc_err_set(err, wc->status == IBV_WC_REM_ACCESS_ERR ? EACCES : EIO,
			  "%s %s %s failed: %s%s (status %d, vendor error 0x%x)", rc_op_name(op),
			  op == RC_OP_RECV ? "from" : "to", c->peer, ibv_wc_status_str(wc->status),
			  hint, wc->status, wc->vendor_err);
}

static int post_fail(struct rc_conn *c, enum rc_op op, int e, struct rc_err *err)
{
	return rc_err_set(err, e, "cannot post %s to %s: %s", rc_op_name(op), c->peer, strerror(e));
}

int rc_post_rdma(struct rc_conn *c, enum rc_op op, void *laddr, uint32_t len, uint32_t lkey,
		 uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t user, bool signaled,
		 struct rc_err *err)
{
	struct ibv_sge sge = { .addr = (uintptr_t)laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	int rc;

	wr.wr_id = rc_wrid(op, user);
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = op == RC_OP_READ	  ? IBV_WR_RDMA_READ
		    : op == RC_OP_WRITE_IMM ? IBV_WR_RDMA_WRITE_WITH_IMM
					    : IBV_WR_RDMA_WRITE;
	wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	wr.imm_data = htobe32(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	rc = ibv_post_send(c->qp, &wr, &bad);
	return rc ? post_fail(c, op, rc, err) : 0;
}

int rc_post_atomic(struct rc_conn *c, enum rc_op op, uint64_t *result, uint32_t lkey,
		   uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap,
		   uint64_t user, struct rc_err *err)
{
	struct ibv_sge sge = { .addr = (uintptr_t)result, .length = 8, .lkey = lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	int rc;

	wr.wr_id = rc_wrid(op, user);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op == RC_OP_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	rc = ibv_post_send(c->qp, &wr, &bad);
	return rc ? post_fail(c, op, rc, err) : 0;
}

int rc_post_send(struct rc_conn *c, const void *buf, uint32_t len, uint32_t lkey,
		 uint64_t user, struct rc_err *err)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	int rc;

	wr.wr_id = rc_wrid(RC_OP_SEND, user);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	rc = ibv_post_send(c->qp, &wr, &bad);
	return rc ? post_fail(c, RC_OP_SEND, rc, err) : 0;
}

int rc_post_recv(struct rc_conn *c, void *buf, uint32_t len, uint32_t lkey, uint64_t user,
		 struct rc_err *err)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { 0 }, *bad;
	int rc;

	wr.wr_id = rc_wrid(RC_OP_RECV, user);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	rc = ibv_post_recv(c->qp, &wr, &bad);
	return rc ? post_fail(c, RC_OP_RECV, rc, err) : 0;
}

int rc_poll_any(struct rc_conn *const *conns, int n, struct ibv_wc *wc, int max,
		int timeout_ms, int *which, struct rc_err *err)
{
	struct pollfd pfd[64];
	double deadline = 0;
	unsigned spins = 0;
	int start = 0;

	if (n < 1 || n > 64)
		return rc_err_set(err, EINVAL, "cannot poll %d connections at once", n);
	if (timeout_ms < 0)
		timeout_ms = conns[0]->timeout_ms;
	for (;;) {
		bool newly = false;
		double now;

		for (int k = 0; k < n; k++) {
			int i = (start + k) % n;
			struct rc_conn *c = conns[i];
			int got = ibv_poll_cq(c->cq, max, wc);

			if (got < 0)
				return rc_err_set(err, EIO, "cannot poll the completion queue of %s",
						  c->peer);
			if (got == 0)
				continue;
			for (int j = 0; j < got; j++)
				if (wc[j].status != IBV_WC_SUCCESS)
					return rc_wc_error(c, &wc[j], err);
			if (which)
				*which = i;
			return got;
		}
		start = (start + 1) % n;
		/* Busy polling reads the clock once in 1024 spins: a clock read costs
		 * as much as a poll, and the first poll needs none at all. */
		if (conns[0]->busy_poll && (++spins & 1023))
			continue;
		now = rc_now();
		if (deadline == 0)
			deadline = now + timeout_ms / 1000.0;
		double left = deadline - now;

		if (left <= 0)
			return -ETIMEDOUT;
		if (conns[0]->busy_poll)
			continue;
		for (int i = 0; i < n; i++) {
			if (conns[i]->armed)
				continue;
			if (ibv_req_notify_cq(conns[i]->cq, 0))
				return rc_err_set(err, EIO, "cannot arm the completion queue of %s",
						  conns[i]->peer);
			conns[i]->armed = true;
			newly = true;
		}
		if (newly)
			continue; /* poll once more: a completion may predate the arming */
		for (int i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = conns[i]->cch->fd, .events = POLLIN };
		int r = poll(pfd, (nfds_t)n, (int)(left * 1000) + 1);

		if (r < 0 && errno != EINTR)
			return rc_err_set(err, errno, "poll failed: %s", strerror(errno));
		for (int i = 0; r > 0 && i < n; i++) {
			struct ibv_cq *cq;
			void *cctx;

			if (!(pfd[i].revents & POLLIN))
				continue;
			if (ibv_get_cq_event(conns[i]->cch, &cq, &cctx) == 0) {
				ibv_ack_cq_events(cq, 1);
				conns[i]->armed = false;
			}
		}
	}
}

int rc_poll(struct rc_conn *c, struct ibv_wc *wc, int max, int timeout_ms, struct rc_err *err)
{
	return rc_poll_any(&c, 1, wc, max, timeout_ms, NULL, err);
}

struct slot {
	uint64_t off;
	uint64_t k;   /* the piece's number */
	size_t len;
	double t;
};

struct qstate {
	uint64_t posted;
	uint64_t done;
	uint64_t next_k;   /* its next piece: pieces go round-robin, k % nconns */
	bool more;         /* pieces left for this queue */
	struct slot *slots;
};

struct engine {
	const struct rc_stream *s;
	struct qstate *q;
	uint64_t span;       /* bench: bytes cycled over */
	int sig_every;
	int depth;
	uint64_t bytes;
	uint64_t ops;
};

static void *slot_buf(const struct engine *e, int qi, uint64_t seq)
{
	if (e->s->one_buffer)
		return e->s->buf;
	size_t idx = (size_t)qi * (size_t)e->depth + (size_t)(seq % (uint64_t)e->depth);

	return (char *)e->s->buf + idx * e->s->chunk;
}

/* Make the next piece for queue qi; returns 1 made, 0 none left, -errno. */
static int make_piece(struct engine *e, int qi, struct slot *sl, struct rc_err *err)
{
	const struct rc_stream *s = e->s;
	struct qstate *q = &e->q[qi];
	uint64_t off;
	size_t len = s->chunk;

	if (s->iters) {
		if (q->next_k >= s->iters)
			return 0;
		off = (q->next_k * s->chunk) % e->span;
	} else {
		off = q->next_k * s->chunk;
		if (off >= s->total)
			return 0;
		if (s->total - off < len)
			len = (size_t)(s->total - off);
	}
	if (s->fill) {
		ssize_t got = s->fill(s->arg, off, slot_buf(e, qi, e->q[qi].posted), len);

		if (got < 0)
			return rc_err_set(err, (int)-got, "reading the input failed: %s",
					  strerror((int)-got));
		if (got == 0)
			return 0;
		if ((size_t)got < len)
			q->more = false; /* the input ended inside this piece */
		len = (size_t)got;
	}
	sl->off = off;
	sl->len = len;
	sl->k = q->next_k;
	q->next_k += (uint64_t)s->nconns;
	return 1;
}

static int post_chain(struct engine *e, int qi, struct rc_err *err)
{
	const struct rc_stream *s = e->s;
	struct rc_conn *c = s->conns[qi];
	struct qstate *q = &e->q[qi];
	struct ibv_send_wr wrs[MAX_BATCH], *bad;
	struct ibv_sge sges[MAX_BATCH];
	int nb = 0, rc;

	while (q->more && q->posted - q->done < (uint64_t)e->depth && nb < s->batch) {
		struct slot *sl = &q->slots[q->posted % (uint64_t)e->depth];
		struct ibv_send_wr *w = &wrs[nb];
		uint64_t seq = q->posted;
		bool last;

		rc = make_piece(e, qi, sl, err);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			q->more = false;
			break;
		}
		/* Each queue signals its own last work request, or the
		 * unsignalled tail of a queue would never complete. */
		last = !q->more || (s->iters ? q->next_k >= s->iters
					    : q->next_k * s->chunk >= s->total);
		if (last)
			q->more = false;
		memset(w, 0, sizeof(*w));
		sges[nb] = (struct ibv_sge){ .addr = (uintptr_t)slot_buf(e, qi, seq),
					     .length = (uint32_t)sl->len, .lkey = s->lkey };
		w->wr_id = rc_wrid(s->op, seq);
		w->sg_list = &sges[nb];
		w->num_sge = 1;
		if ((seq + 1) % (uint64_t)e->sig_every == 0 || last ||
		    q->posted + 1 - q->done >= (uint64_t)e->depth)
			w->send_flags = IBV_SEND_SIGNALED;
		switch (s->op) {
		case RC_OP_FAA:
		case RC_OP_CAS:
			w->opcode = s->op == RC_OP_FAA ? IBV_WR_ATOMIC_FETCH_AND_ADD
						       : IBV_WR_ATOMIC_CMP_AND_SWP;
			w->wr.atomic.remote_addr = s->raddr + sl->off;
			w->wr.atomic.rkey = s->rkey;
			w->wr.atomic.compare_add = s->compare_add;
			w->wr.atomic.swap = s->swap;
			break;
		default:
			w->opcode = s->op == RC_OP_READ	       ? IBV_WR_RDMA_READ
				    : s->op == RC_OP_WRITE_IMM ? IBV_WR_RDMA_WRITE_WITH_IMM
							       : IBV_WR_RDMA_WRITE;
			w->imm_data = htobe32(s->imm);
			w->wr.rdma.remote_addr = s->raddr + sl->off;
			w->wr.rdma.rkey = s->rkey;
			break;
		}
		if (nb)
			wrs[nb - 1].next = w;
		sl->t = s->lat_us ? rc_now() : 0;
		q->posted++;
		nb++;
	}
	if (!nb)
		return 0;
	rc = ibv_post_send(c->qp, wrs, &bad);
	if (rc)
		return post_fail(c, s->op, rc, err);
	return nb;
}

/* Fill the queue: chains of up to `batch` work requests per post. */
static int post_some(struct engine *e, int qi, struct rc_err *err)
{
	int rc;

	do {
		rc = post_chain(e, qi, err);
	} while (rc > 0);
	return rc;
}

static int complete_upto(struct engine *e, int qi, uint64_t seq, struct rc_err *err)
{
	const struct rc_stream *s = e->s;
	struct qstate *q = &e->q[qi];
	double t = s->lat_us ? rc_now() : 0;

	for (; q->done <= seq; q->done++) {
		struct slot *sl = &q->slots[q->done % (uint64_t)e->depth];

		if (s->drain) {
			int rc = s->drain(s->arg, sl->off, slot_buf(e, qi, q->done), sl->len);

			if (rc)
				return rc_err_set(err, -rc, "writing the output failed: %s",
						  strerror(-rc));
		}
		if (s->lat_us)
			s->lat_us[sl->k] = (t - sl->t) * 1e6;
		e->bytes += sl->len;
		e->ops++;
	}
	return 0;
}

int rc_stream_run(const struct rc_stream *s, struct rc_stream_result *res, struct rc_err *err)
{
	struct engine e = { .s = s };
	struct ibv_wc wc[POLL_BATCH];
	double t0;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	if (s->nconns < 1 || s->nconns > 64 || s->depth < 1 || !s->chunk)
		return rc_err_set(err, EINVAL, "invalid transfer parameters");
	if ((s->drain || s->fill) && s->nconns != 1)
		return rc_err_set(err, EINVAL, "a streamed transfer needs exactly one connection");
	e.depth = s->depth;
	for (int i = 0; i < s->nconns; i++)
		if (e.depth > s->conns[i]->sq_depth)
			e.depth = s->conns[i]->sq_depth;
	e.sig_every = (s->fill || s->drain || s->lat_us || s->signal_every < 1) ? 1 : s->signal_every;
	if (e.sig_every > e.depth)
		e.sig_every = e.depth;
	if (s->batch < 1 || s->batch > MAX_BATCH)
		return rc_err_set(err, EINVAL, "post batch must be 1..%d", MAX_BATCH);
	e.span = s->iters ? (s->total / s->chunk) * s->chunk : 0;
	if (s->iters && !e.span)
		return rc_err_set(err, EINVAL, "the remote span is smaller than one message");
	if (!s->iters && !s->total)
		return 0;
	e.q = calloc((size_t)s->nconns, sizeof(*e.q));
	if (!e.q)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int i = 0; i < s->nconns; i++) {
		e.q[i].next_k = (uint64_t)i;
		e.q[i].more = true;
		e.q[i].slots = calloc((size_t)e.depth, sizeof(struct slot));
		if (!e.q[i].slots) {
			rc = rc_err_set(err, ENOMEM, "out of memory");
			goto out;
		}
	}
	t0 = rc_now();
	for (;;) {
		uint64_t outstanding = 0;
		bool more = false;
		int which = 0, n;

		for (int i = 0; i < s->nconns; i++) {
			if (e.q[i].more) {
				rc = post_some(&e, i, err);
				if (rc)
					goto out;
			}
			more |= e.q[i].more;
			outstanding += e.q[i].posted - e.q[i].done;
		}
		if (!outstanding && !more)
			break;
		n = rc_poll_any(s->conns, s->nconns, wc, POLL_BATCH, s->timeout_ms, &which, err);
		if (n == -ETIMEDOUT) {
			rc = rc_err_set(err, ETIMEDOUT,
					"no completion from %s within %d ms (%llu operations outstanding)",
					s->conns[0]->peer, s->timeout_ms > 0 ? s->timeout_ms : s->conns[0]->timeout_ms,
					(unsigned long long)outstanding);
			goto out;
		}
		if (n < 0) {
			rc = n;
			goto out;
		}
		for (int j = 0; j < n; j++) {
			rc = complete_upto(&e, which, wc[j].wr_id & RC_WRID_MASK, err);
			if (rc)
				goto out;
		}
		if (s->progress)
			s->progress(s->progress_arg, e.bytes, s->iters ? s->iters * s->chunk : s->total);
	}
	res->seconds = rc_now() - t0;
out:
	res->bytes = e.bytes;
	res->ops = e.ops;
	for (int i = 0; i < s->nconns; i++)
		free(e.q[i].slots);
	free(e.q);
	return rc;
}
