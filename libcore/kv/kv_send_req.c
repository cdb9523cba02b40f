// SPDX-License-Identifier: MIT
/*
 * kvxfer send, the requests: layer l posted as soon as it is ready and
 * every decode rank gave its pages (kv_send_post.c builds and posts the
 * writes), the decode ranks' messages about it, its landed layers counted
 * from the completions, and its end: cancelling drops its queued writes,
 * waits for the posted ones, and only then tells the decode side "stopped".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_send.h"
#include <rdmactl/kv_core.h>
#include <rdmactl/ops_core.h>

void kvs_emit(struct kv_sender *s, struct kv_event *ev)
{
	if (s->o->c.on_event)
		s->o->c.on_event(s->o->c.arg, ev);
}

void kvs_send(struct kv_sender *s, struct sdst *d, struct kv_msg *m)
{
	struct rc_err e;

	if (d->dead)
		return;
	if (kv_chan_send(&d->ch, m, &e)) {
		snprintf(d->why, sizeof(d->why), "%.200s", e.msg);
		d->dead = true;
	}
}

void kvs_heartbeats(struct kv_sender *s)
{
	double now = rc_now();

	for (int i = 0; i < s->nd; i++) {
		struct sdst *d = &s->d[i];
		struct kv_msg m = { .type = KV_MSG_HB };

		if (d->dead || d->closed || now - d->last_hb < s->o->c.hb_ms / 1000.0)
			continue;
		d->last_hb = now;
		kvs_send(s, d, &m);
	}
}

/* The last layer goes in pieces, LAST_PIECES or more, as many on each data
 * QP, each posted as soon as its part of the layer's compute is done, so
 * that what is left after the compute ends is one piece, not the layer.
 * Streaming, with a compute time. Piece j goes on QP j % nqps. */
#define LAST_PIECES 8
static bool last_in_pieces(const struct kv_sender *s)
{
	return !s->o->no_stream && s->o->layer_compute_us > 0;
}

/* Pieces of the last layer on each data QP. */
static uint32_t pieces_per_qp(const struct kv_sender *s)
{
	return (LAST_PIECES + s->o->nqps - 1) / s->o->nqps;
}

/* When the next post of q is due: its next layer, or piece of the last. */
static double next_due(const struct kv_sender *s, const struct sreq *q)
{
	uint32_t L = s->g->layers, nq = s->o->nqps;
	double from;

	if (s->o->no_stream)
		return q->ready[L - 1];
	if (q->layers_posted < L - 1 || !last_in_pieces(s))
		return q->ready[q->layers_posted];
	from = L > 1 ? q->ready[L - 2] : q->t0;
	return from + (q->ready[L - 1] - from) * (q->pieces_posted + 1) / (nq * pieces_per_qp(s));
}
static bool all_alloc(struct kv_sender *s, struct sreq *q)
{
	for (int i = 0; i < s->nd; i++)
		if (!q->alloc[i])
			return false;
	return true;
}

static void finish(struct kv_sender *s, struct sreq *q, enum kv_ev_kind kind, const char *why)
{
	uint32_t L = s->g->layers;
	double last = 0, *ready_us = malloc(L * sizeof(double)),
	       *landed_us = malloc(L * sizeof(double));
	struct kv_report rep = { .req = q->id,
				 .tokens = s->o->tokens,
				 .layers = L,
				 .layers_landed = q->layers_landed,
				 .exposed_s = -1,
				 .unpack_s = -1,
				 .complete_s = -1,
				 .checked = kind == KV_EV_DONE && q->done_flags & KV_DONE_CHECKED,
				 .verified = kind == KV_EV_DONE && q->done_flags & KV_DONE_VERIFIED,
				 .reason = why };
	struct kv_event ev = { .kind = kind, .rank = s->o->c.rank, .rep = &rep };

	for (int i = 0; i < s->nd; i++)
		rep.bytes +=
			kv_route_bytes(s->g, &s->d[i].route, s->o->tokens) * kv_halves(s->g) * L;
	for (uint32_t l = 0; ready_us && landed_us && l < L; l++) {
		ready_us[l] = (q->ready[l] - q->t0) * 1e6;
		landed_us[l] = q->landed[l] < 0 ? -1 : (q->landed[l] - q->t0) * 1e6;
		if (q->landed[l] > last)
			last = q->landed[l];
	}
	rep.ready_us = ready_us;
	rep.landed_us = landed_us;
	/* Exposed: to the decode ranks' completion, so their unpack of landed
	 * layers after the last write's completion counts too (DONE says how
	 * long it took; a difference of times on one clock, whichever host). */
	if (q->first_post > 0)
		rep.started_at = rc_wall(q->first_post);
	if (q->layers_landed == L) {
		rep.seconds = last - q->first_post;
		rep.exposed_s = last - q->ready[L - 1];
		if (kind == KV_EV_DONE) {
			rep.unpack_s = q->unpack_s;
			rep.exposed_s += q->unpack_s;
		}
	}
	kvs_emit(s, &ev);
	if (kind == KV_EV_DONE) {
		s->sum->done++;
		s->sum->verified += rep.verified;
		s->sum->bytes += rep.bytes;
		s->sum->exposed_sum_s += rep.exposed_s;
		if (rep.exposed_s > s->sum->exposed_max_s)
			s->sum->exposed_max_s = rep.exposed_s;
	}
	s->sum->cancelled += kind == KV_EV_CANCELLED;
	s->sum->failed += kind == KV_EV_FAILED;
	s->sum->seconds = rc_now() - s->first;
	free(ready_us);
	free(landed_us);
	for (int i = 0; i < s->nd; i++)
		free(q->pages[i]);
	free(q->ready);
	free(q->landed);
	free(q->pending);
	memset(q, 0, sizeof(*q));
	s->active--;
	s->finished++;
}

/* Stop a request: drop its queued writes, then wait for the posted ones. */
void kvs_cancel(struct kv_sender *s, struct sreq *q, enum kv_ev_kind final, int code,
		const char *why)
{
	if (q->cancelling)
		return;
	q->cancelling = true;
	q->final = final;
	q->code = code;
	q->last = rc_now();
	snprintf(q->reason, sizeof(q->reason), "%s", why);
	for (int i = 0; i < s->nd; i++)
		for (uint32_t k = 0; k < s->o->nqps; k++)
			q->mark[i][k] = kvs_unqueue(s, &s->d[i], &s->d[i].qp[k], q);
}

static bool quiesced(struct kv_sender *s, struct sreq *q)
{
	for (int i = 0; i < s->nd; i++)
		for (uint32_t k = 0; !s->d[i].closed && k < s->o->nqps; k++)
			if (s->d[i].qp[k].pipe.sq.done < q->mark[i][k])
				return false;
	return true;
}

void kvs_dst_gone(struct kv_sender *s, struct sdst *d)
{
	char why[KV_REASON_MAX];

	snprintf(why, sizeof(why), "decode rank %u (%.64s) is gone: %.150s", d->rank, d->name,
		 d->why);
	s->broken = true;
	for (uint32_t i = 0; i < s->o->inflight; i++) {
		struct sreq *q = &s->reqs[i];
		bool confirmed = q->layers_landed == s->g->layers;

		for (int k = 0; k < s->nd; k++)
			confirmed = confirmed && q->done_rx[k];
		if (q->used && !confirmed) /* a confirmed one ends as it is */
			kvs_cancel(s, q, KV_EV_FAILED, ECONNRESET, why);
	}
}

static struct sreq *find(struct kv_sender *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->o->inflight; i++)
		if (s->reqs[i].used && s->reqs[i].id == id)
			return &s->reqs[i];
	return NULL;
}

/* A cancelled request: once its posted writes are done, the decode ranks
 * hear why, and it ends; a decode rank whose writes do not complete within
 * the timeout is dead. */
static void progress_cancel(struct kv_sender *s, struct sreq *q, double now)
{
	const struct kv_common_opts *c = &s->o->c;
	double quiet = c->timeout_ms / 1000.0;
	char why[KV_REASON_MAX];

	if (quiesced(s, q)) {
		for (int i = 0; i < s->nd; i++) {
			struct kv_msg m = { .type = KV_MSG_CANCEL, .req = q->id };

			m.u.cancel.code = q->code;
			snprintf(m.u.cancel.text, sizeof(m.u.cancel.text), "%s", q->reason);
			kvs_send(s, &s->d[i], &m);
		}
		snprintf(why, sizeof(why), "%s", q->reason);
		finish(s, q, q->final, why);
		return;
	}
	for (int i = 0; now - q->last > quiet && i < s->nd; i++) {
		for (uint32_t k = 0; k < s->o->nqps; k++) {
			if (s->d[i].closed || s->d[i].qp[k].pipe.sq.done >= q->mark[i][k])
				continue;
			snprintf(s->d[i].why, sizeof(s->d[i].why),
				 "writes did not complete within %d ms", c->timeout_ms);
			s->d[i].dead = true;
		}
	}
}

/* Pages from every decode rank: cancel q once one did not give them
 * within the timeout. */
static void await_alloc(struct kv_sender *s, struct sreq *q, double now)
{
	const struct kv_common_opts *c = &s->o->c;
	double quiet = c->timeout_ms / 1000.0;
	char why[KV_REASON_MAX];

	for (int i = 0; now - q->admitted > quiet && i < s->nd; i++) {
		if (q->alloc[i])
			continue;
		snprintf(why, sizeof(why), "no pages from decode rank %u (%.64s) within %d ms",
			 s->d[i].rank, s->d[i].name, c->timeout_ms);
		kvs_cancel(s, q, KV_EV_FAILED, ETIMEDOUT, why);
		return;
	}
}

/* Queue the layers of q that are due (or pieces of the last); false when
 * q was cancelled meanwhile. */
static bool queue_due(struct kv_sender *s, struct sreq *q, double now)
{
	const struct kv_common_opts *c = &s->o->c;
	uint32_t L = s->g->layers;
	char why[KV_REASON_MAX];

	while (q->layers_posted < L && next_due(s, q) <= now) {
		bool pieces = q->layers_posted == L - 1 && last_in_pieces(s);
		uint32_t nq = s->o->nqps, m = pieces ? pieces_per_qp(s) : 1, j = q->pieces_posted;
		/* Piece j: QP j % nq, that QP's piece j / nq. */
		uint32_t u0 = pieces ? j % nq * m + j / nq : 0, u1 = pieces ? u0 + 1 : nq;

		if (!j && c->cancel_req == (int64_t)q->id && q->layers_posted >= c->cancel_after) {
			snprintf(why, sizeof(why),
				 "cancelled by source rank %u after %u layers (test hook)", c->rank,
				 q->layers_posted);
			kvs_cancel(s, q, KV_EV_CANCELLED, 0, why);
			return false;
		}
		if (!q->layers_posted && !j)
			q->first_post = now;
		for (int i = 0; i < s->nd; i++) {
			struct rc_err e;
			int rc = kvs_queue_layer(s, q, &s->d[i], i, q->layers_posted, u0, u1, m, &e);

			if (rc) {
				kvs_cancel(s, q, KV_EV_FAILED, -rc, e.msg);
				return false;
			}
		}
		q->pieces_posted = pieces && j + 1 < nq * m ? j + 1 : 0;
		q->layers_posted += !q->pieces_posted;
		q->last = now;
	}
	return true;
}

/* Every layer landed: the DONE of each decode rank (or a timeout), then
 * the end of q. */
static void await_done(struct kv_sender *s, struct sreq *q, double now)
{
	const struct kv_common_opts *c = &s->o->c;
	double quiet = c->timeout_ms / 1000.0;
	char why[KV_REASON_MAX];

	for (int i = 0; i < s->nd; i++) {
		if (q->done_rx[i])
			continue;
		if (now - q->last > quiet) {
			snprintf(why, sizeof(why),
				 "decode rank %u (%.64s) did not confirm request %u within %d ms",
				 s->d[i].rank, s->d[i].name, q->id, c->timeout_ms);
			kvs_cancel(s, q, KV_EV_FAILED, ETIMEDOUT, why);
		}
		return;
	}
	snprintf(why, sizeof(why), "%s", q->done_why);
	finish(s, q, q->done_status ? KV_EV_FAILED : KV_EV_DONE, q->done_status ? why : NULL);
}

static void progress_one(struct kv_sender *s, struct sreq *q, double now)
{
	if (q->cancelling) {
		progress_cancel(s, q, now);
		return;
	}
	if (q->filling)
		return; /* kvs_fill_step */
	if (!all_alloc(s, q)) {
		await_alloc(s, q, now);
		return;
	}
	if (queue_due(s, q, now) && q->layers_landed >= s->g->layers)
		await_done(s, q, now);
}

void kvs_progress(struct kv_sender *s)
{
	double now = rc_now();

	for (uint32_t i = 0; i < s->o->inflight; i++)
		if (s->reqs[i].used)
			progress_one(s, &s->reqs[i], now);
}

double kvs_next_wake(struct kv_sender *s)
{
	double now = rc_now(), wake = 0.1;

	for (uint32_t i = 0; i < s->o->inflight; i++) {
		struct sreq *q = &s->reqs[i];
		double t;

		if (q->used && q->filling && !q->cancelling)
			return 0;
		if (!q->used || q->cancelling || !all_alloc(s, q) ||
		    q->layers_posted >= s->g->layers)
			continue;
		t = next_due(s, q) - now;
		if (t < wake)
			wake = t > 0 ? t : 0;
	}
	return wake;
}

void kvs_on_data_wc(struct kv_sender *s, struct sdst *d, struct sqp *qp, const struct ibv_wc *wc)
{
	uint64_t v = wc->wr_id & RC_WRID_MASK;
	uint32_t seq = kv_wrid_seq(v), layer = kv_wrid_layer(v);
	struct sreq *q = &s->reqs[kv_wrid_slot(v)];

	rc_pipe_complete(&qp->pipe, seq, NULL);
	if (!kv_wrid_notify(v) || !q->used || layer >= s->g->layers || !q->pending[layer])
		return;
	/* A layer in pieces has landed once its last piece is posted too. */
	if (--q->pending[layer] == 0 && layer < q->layers_posted && !q->cancelling) {
		q->landed[layer] = rc_now();
		q->layers_landed++;
		q->last = q->landed[layer];
	}
}

void kvs_on_msg(struct kv_sender *s, struct sdst *d, const struct kv_msg *m)
{
	int di = (int)(d - s->d);
	struct sreq *q = find(s, m->req);
	char why[KV_REASON_MAX];

	switch (m->type) {
	case KV_MSG_HB:
		return;
	case KV_MSG_ALLOC:
		if (!q || q->alloc[di])
			return;
		for (uint32_t i = 0; i < m->u.alloc.npages; i++)
			if (m->u.alloc.pages[i] >= d->pool_pages)
				goto bad_alloc;
		if (m->u.alloc.npages != s->dst_pages)
			goto bad_alloc;
		if (d->land && (m->u.alloc.land == KV_LAND_NONE || m->u.alloc.land > d->land_units ||
				m->u.alloc.npages > d->land_units - m->u.alloc.land)) {
			snprintf(why, sizeof(why),
				 "decode rank %u gave request %u no landing run of %u "
				 "units within %u",
				 d->rank, q->id, s->dst_pages, d->land_units);
			kvs_cancel(s, q, KV_EV_FAILED, EPROTO, why);
			return;
		}
		q->pages[di] = malloc(s->dst_pages * sizeof(uint32_t));
		if (!q->pages[di]) {
			kvs_cancel(s, q, KV_EV_FAILED, ENOMEM, "out of memory");
			return;
		}
		memcpy(q->pages[di], m->u.alloc.pages, s->dst_pages * sizeof(uint32_t));
		q->rslot[di] = m->u.alloc.slot;
		q->rgen[di] = m->u.alloc.gen;
		q->land_at[di] = m->u.alloc.land;
		q->alloc[di] = true;
		q->last = rc_now();
		return;
bad_alloc:
		snprintf(why, sizeof(why),
			 "decode rank %u sent %u pages for request %u, not %u within "
			 "its pool of %u",
			 d->rank, m->u.alloc.npages, q->id, s->dst_pages, d->pool_pages);
		kvs_cancel(s, q, KV_EV_FAILED, EPROTO, why);
		return;
	case KV_MSG_DONE:
		if (!q)
			return;
		q->done_rx[di] = true;
		q->done_flags &= m->u.done.flags;
		if (m->u.done.unpack_us / 1e6 > q->unpack_s)
			q->unpack_s = m->u.done.unpack_us / 1e6;
		if (m->u.done.status && !q->done_status) {
			q->done_status = m->u.done.status;
			snprintf(q->done_why, sizeof(q->done_why), "decode rank %u: %s", d->rank,
				 m->u.done.status == EBADMSG ? "verification failed"
							     : strerror(m->u.done.status));
		}
		return;
	case KV_MSG_CANCEL:
		if (q) {
			kvs_cancel(s, q, m->u.cancel.code ? KV_EV_FAILED : KV_EV_CANCELLED,
				   m->u.cancel.code, m->u.cancel.text);
		} else {
			struct kv_msg a = { .type = KV_MSG_CANCEL, .req = m->req };

			snprintf(a.u.cancel.text, sizeof(a.u.cancel.text),
				 "request %u is over here", m->req);
			kvs_send(s, d, &a);
		}
		return;
	default:
		snprintf(d->why, sizeof(d->why), "unexpected %s message%s%.200s",
			 kv_msg_name(m->type), m->type == KV_MSG_ERROR ? ": " : "",
			 m->type == KV_MSG_ERROR ? m->u.cancel.text : "");
		d->dead = true;
	}
}
