// SPDX-License-Identifier: MIT
/*
 * One completion queue, one completion channel and, when asked, one shared
 * receive queue for many connections of one device (a server's clients).
 * A connection made with rc_conn_opts.shared uses them instead of its own;
 * its completions are told apart by the QP number they carry, which the
 * table below maps to the connection (a sorted array: a lookup is a binary
 * search, an insert or a removal a move of the tail, for at most a few
 * thousand connections). A connection leaves the table when it is closed,
 * so a completion it left behind in the CQ maps to nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/conn.h>
#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>

struct rc_shared_ent {
	uint32_t qpn;
	struct rc_conn *c;
};

int rc_shared_create(struct ibv_pd *pd, int cqe, int srq_depth, struct rc_shared **out,
		     struct rc_err *err)
{
	struct ibv_context *verbs = pd->context;
	const char *dev = ibv_get_device_name(verbs->device);
	struct ibv_device_attr da;
	struct rc_shared *sh;
	int fl, rc;

	if (ibv_query_device(verbs, &da))
		return rc_err_set(err, errno, "cannot query %s: %s", dev, strerror(errno));
	if (cqe < 1 || cqe > da.max_cqe)
		return rc_err_set(err, ENOSPC,
				  "a completion queue of %d entries is needed; %s allows %d", cqe,
				  dev, da.max_cqe);
	if (srq_depth > 0 && (!da.max_srq || srq_depth > da.max_srq_wr))
		return rc_err_set(err, ENOSPC,
				  "a shared receive queue of %d entries is needed; %s allows %d",
				  srq_depth, dev, da.max_srq ? da.max_srq_wr : 0);
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return rc_err_set(err, ENOMEM, "out of memory");
	pthread_mutex_init(&sh->mu, NULL);
	sh->verbs = verbs;
	sh->cqe = cqe;
	sh->cch = ibv_create_comp_channel(verbs);
	if (!sh->cch) {
		rc = rc_err_set(err, errno, "cannot create a completion channel: %s",
				strerror(errno));
		goto fail;
	}
	fl = fcntl(sh->cch->fd, F_GETFL);
	if (fl < 0 || fcntl(sh->cch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		rc = rc_err_set(err, errno, "cannot make the completion channel non-blocking: %s",
				strerror(errno));
		goto fail;
	}
	sh->cq = ibv_create_cq(verbs, cqe, sh, sh->cch, 0);
	if (!sh->cq) {
		rc = rc_err_set(err, errno,
				"cannot create a completion queue of %d entries on %s: %s", cqe,
				dev, strerror(errno));
		goto fail;
	}
	if (srq_depth > 0) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = (uint32_t)srq_depth,
							  .max_sge = 1 } };

		sh->srq = ibv_create_srq(pd, &sa);
		if (!sh->srq) {
			rc = rc_err_set(err, errno,
					"cannot create a shared receive queue of %d entries on %s: %s",
					srq_depth, dev, strerror(errno));
			goto fail;
		}
		sh->srq_depth = srq_depth;
	}
	*out = sh;
	return 0;
fail:
	rc_shared_destroy(sh);
	return rc;
}

int rc_shared_destroy(struct rc_shared *sh)
{
	int rc = 0, r;

	if (!sh)
		return 0;
	/* The ibv_ calls return their error (errno is not theirs). */
	if (sh->srq && (r = ibv_destroy_srq(sh->srq)) && !rc)
		rc = -abs(r);
	if (sh->cq && (r = ibv_destroy_cq(sh->cq)) && !rc)
		rc = -abs(r);
	if (sh->cch && (r = ibv_destroy_comp_channel(sh->cch)) && !rc)
		rc = -abs(r);
	pthread_mutex_destroy(&sh->mu);
	free(sh->ent);
	free(sh);
	return rc;
}

/* The index of qpn in the table, or where it would go. */
static size_t find(const struct rc_shared *sh, uint32_t qpn)
{
	size_t lo = 0, hi = sh->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sh->ent[mid].qpn < qpn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int add_locked(struct rc_shared *sh, struct rc_conn *c)
{
	uint32_t qpn = c->qp->qp_num;
	size_t i = find(sh, qpn);

	if (i < sh->n && sh->ent[i].qpn == qpn)
		return -EEXIST;
	if (sh->n == sh->cap) {
		size_t cap = sh->cap ? 2 * sh->cap : 64;
		struct rc_shared_ent *e = realloc(sh->ent, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		sh->ent = e;
		sh->cap = cap;
	}
	memmove(sh->ent + i + 1, sh->ent + i, (sh->n - i) * sizeof(sh->ent[0]));
	sh->ent[i] = (struct rc_shared_ent){ .qpn = qpn, .c = c };
	sh->n++;
	c->shared_qpn = qpn;
	c->in_shared = true;
	return 0;
}

int rc_shared_add(struct rc_shared *sh, struct rc_conn *c)
{
	int rc;

	pthread_mutex_lock(&sh->mu);
	rc = add_locked(sh, c);
	pthread_mutex_unlock(&sh->mu);
	return rc;
}

void rc_shared_remove(struct rc_shared *sh, struct rc_conn *c)
{
	size_t i;

	if (!c->in_shared)
		return;
	pthread_mutex_lock(&sh->mu);
	i = find(sh, c->shared_qpn);
	if (i < sh->n && sh->ent[i].c == c) {
		memmove(sh->ent + i, sh->ent + i + 1, (sh->n - i - 1) * sizeof(sh->ent[0]));
		sh->n--;
	}
	pthread_mutex_unlock(&sh->mu);
	c->in_shared = false;
}

struct rc_conn *rc_shared_conn(struct rc_shared *sh, uint32_t qpn)
{
	struct rc_conn *c;
	size_t i;

	pthread_mutex_lock(&sh->mu);
	i = find(sh, qpn);
	c = i < sh->n && sh->ent[i].qpn == qpn ? sh->ent[i].c : NULL;
	pthread_mutex_unlock(&sh->mu);
	return c;
}

int rc_shared_take(struct rc_shared *sh, struct ibv_wc *wc, int max)
{
	struct ibv_cq *cq;
	void *cctx;
	int n;

	/* The channel is non-blocking: nothing pending is not an error. */
	if (ibv_get_cq_event(sh->cch, &cq, &cctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		sh->armed = false;
	}
	n = ibv_poll_cq(sh->cq, max, wc);
	if (n != 0 || sh->armed)
		return n < 0 ? -EIO : n;
	if (ibv_req_notify_cq(sh->cq, 0))
		return -EIO;
	sh->armed = true;
	/* A completion may have come in before the arming. */
	n = ibv_poll_cq(sh->cq, max, wc);
	return n < 0 ? -EIO : n;
}

int rc_shared_post_recv(struct rc_shared *sh, void *buf, uint32_t len, uint32_t lkey, uint64_t user,
			struct rc_err *err)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = rc_wrid(RC_OP_RECV, user), .sg_list = &sge, .num_sge = 1 },
			   *bad;
	int r;

	if (!sh->srq)
		return rc_err_set(err, EINVAL, "no shared receive queue to post to");
	r = ibv_post_srq_recv(sh->srq, &wr, &bad);
	return r ? rc_err_set(err, abs(r), "cannot post a shared receive: %s", strerror(abs(r))) : 0;
}

int rc_shared_use(struct rc_shared *sh, struct rc_conn *c, struct ibv_context *verbs,
		  struct ibv_srq **srq, struct rc_err *err)
{
	if (sh->verbs != verbs)
		return rc_err_set(err, EXDEV,
				  "the shared completion queue is on another device than %s",
				  c->dev_name);
	c->shared = sh;
	c->cch = sh->cch;
	c->cq = sh->cq;
	*srq = sh->srq;
	return 0;
}
