// SPDX-License-Identifier: MIT
/*
 * The one pipelining engine: a queue's window, which work request is
 * signalled, and how far its completions say it is done. The stream
 * (ops.c), migration's copy (copy.c), the group's one-sided writes and
 * kvxfer's sender each feed it work requests; it posts them through the
 * transport seam (pipe_core.h), never through verbs directly.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rdmactl/pipe_core.h>

#define DEFAULT_BATCH 32

bool rc_sq_next(struct rc_sq *q, bool last)
{
	uint64_t seq = q->posted++;
	bool sig = last || (q->signal_every > 0 && (seq + 1) % (uint64_t)q->signal_every == 0) ||
		   (q->depth > 0 && q->posted - q->done >= (uint64_t)q->depth);

	/* The work request that fills the queue is signalled, or a full queue of
	 * unsignalled work requests could never be seen to drain. */
	if (sig)
		q->signaled = q->posted;
	return sig;
}

void rc_pipe_init(struct rc_pipe *p, const struct rc_transport *tp, void *ep,
		  const struct rc_pipe_opts *o)
{
	int depth = o->depth > 0 ? o->depth : 1;
	int sq = tp->sq_depth ? tp->sq_depth(ep) : 0;

	if (sq > 0 && depth > sq)
		depth = sq;
	memset(p, 0, offsetof(struct rc_pipe, pend));
	p->tp = tp;
	p->ep = ep;
	p->batch = o->batch > 0 && o->batch <= RC_PIPE_BATCH ? o->batch : DEFAULT_BATCH;
	p->sq.depth = depth;
	p->sq.signal_every = o->signal_every < 1 ? 1 : o->signal_every;
	if (p->sq.signal_every > depth)
		p->sq.signal_every = depth;
}

bool rc_pipe_room(const struct rc_pipe *p, uint32_t nsg)
{
	return p->sq.posted - p->sq.done < (uint64_t)p->sq.depth && nsg <= RC_CHAIN_GATHER;
}

int rc_pipe_flush(struct rc_pipe *p, struct rc_err *err)
{
	int n = p->n;

	if (!n)
		return 0;
	p->n = 0;
	p->ng = 0;
	if (p->before_post)
		p->before_post(p->hook_arg, p->sq.posted - (uint64_t)n, n);
	return p->tp->post(p->ep, p->pend, n, err);
}

int rc_pipe_add(struct rc_pipe *p, struct rc_wr *w, bool last, struct rc_err *err)
{
	uint32_t nsg = w->sg ? w->nsg : 0;
	struct rc_wr *d;
	int rc;

	if (!rc_pipe_room(p, nsg))
		return rc_err_set(err, ENOSPC, "no room for a work request of %u gather entries",
				  nsg);
	/* Its gather list does not fit beside those pending: they go first. */
	if (nsg > (uint32_t)(RC_CHAIN_GATHER - p->ng) && (rc = rc_pipe_flush(p, err)) < 0)
		return rc;
	w->signaled = rc_sq_next(&p->sq, last || w->signaled);
	d = &p->pend[p->n++];
	*d = *w;
	if (w->sg) {
		memcpy(&p->gather[p->ng], w->sg, w->nsg * sizeof(*w->sg));
		d->sg = &p->gather[p->ng];
		p->ng += (int)w->nsg;
	}
	if (p->n < p->batch)
		return 0;
	rc = rc_pipe_flush(p, err);
	return rc < 0 ? rc : 0;
}

uint64_t rc_pipe_complete(struct rc_pipe *p, uint64_t user, uint64_t *from)
{
	/* The sequence number is the low 32 bits: at most depth (< 2^32) are
	 * outstanding, so the distance from done is exact modulo 2^32. */
	uint64_t n = (uint32_t)((uint32_t)user + 1 - (uint32_t)p->sq.done);

	if (from)
		*from = p->sq.done;
	if (n > p->sq.posted - p->sq.done)
		n = 0; /* not one of this queue's: a stale or foreign value */
	p->sq.done += n;
	p->ops += n;
	return p->sq.done;
}

void rc_pipe_abandon(struct rc_pipe *p)
{
	p->n = 0;
	p->ng = 0;
	p->sq.done = p->sq.posted;
}

int rc_pipe_poll(struct rc_pipe *pipes, int n, struct rc_cqe *cqe, int max, int timeout_ms,
		 int *which, struct rc_err *err)
{
	void *eps[64];

	if (n < 1 || n > 64)
		return rc_err_set(err, EINVAL, "%d queues to poll", n);
	for (int i = 0; i < n; i++)
		eps[i] = pipes[i].ep;
	return pipes[0].tp->poll(eps, n, cqe, max, timeout_ms, which, err);
}

int rc_pipe_drain(struct rc_pipe *p, int timeout_ms, struct rc_err *err)
{
	struct rc_cqe cqe[16];
	int rc = rc_pipe_flush(p, err);

	while (rc >= 0 && rc_pipe_outstanding(p)) {
		rc = rc_pipe_poll(p, 1, cqe, 16, timeout_ms, NULL, err);
		for (int i = 0; i < rc; i++)
			rc_pipe_complete(p, cqe[i].user, NULL);
	}
	return rc < 0 ? rc : 0;
}
