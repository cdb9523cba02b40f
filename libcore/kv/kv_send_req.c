// SPDX-License-Identifier: MIT
/*
 * kvxfer send, the requests: deterministic content in a source slot, layer
 * l posted as soon as it is ready and every decode rank gave its pages,
 * the writes of a layer spread over the data QPs with one WRITE_WITH_IMM
 * ending each QP's share, and cancelling: queued writes are dropped, the
 * posted ones waited for, and only then is the decode side told "stopped".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_send.h"

#define CHAIN 32

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

static char *src_addr(struct kv_sender *s, uint32_t slot, uint32_t layer, uint32_t half,
		      uint32_t page)
{
	return s->pool + slot * s->slot_bytes +
	       (((uint64_t)layer * kv_halves(s->g) + half) * s->src_pages + page) *
		       s->src_page_bytes;
}

/* Where a packed route's layer half is staged: the request slot's part of
 * the staging ring, which the request owns until it finishes (so the
 * in-flight limit bounds the ring), this route's part, then layer and half. */
static char *stage_addr(struct kv_sender *s, uint32_t slot, const struct sdst *d, uint32_t layer,
			uint32_t half)
{
	return s->pool + s->stage_base + slot * s->stage_slot_bytes + d->stage_off +
	       ((uint64_t)layer * kv_halves(s->g) + half) *
		       kv_route_bytes(s->g, &d->route, s->o->tokens);
}

struct fpage {
	struct kv_sender *s;
	uint32_t slot;
};

static char *fill_page(void *arg, uint32_t layer, uint32_t half, uint32_t i)
{
	struct fpage *f = arg;

	return src_addr(f->s, f->slot, layer, half, i);
}

/* Take a slot for the next request; its content is filled in slices
 * (kvs_fill_step), and only then does its clock start. */
int kvs_admit(struct kv_sender *s, struct rc_err *err)
{
	uint32_t L = s->g->layers, slot = 0;
	struct sreq *q;

	while (s->reqs[slot].used)
		slot++;
	q = &s->reqs[slot];
	memset(q, 0, sizeof(*q));
	q->ready = malloc(L * sizeof(double));
	q->landed = malloc(L * sizeof(double));
	q->pending = calloc(L, sizeof(uint32_t));
	if (!q->ready || !q->landed || !q->pending) {
		free(q->ready);
		free(q->landed);
		free(q->pending);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	q->used = true;
	q->filling = true;
	q->slot = slot;
	q->id = s->next_id++;
	q->done_flags = KV_DONE_CHECKED | KV_DONE_VERIFIED;
	q->admitted = q->last = rc_now();
	s->active++;
	return 0;
}

/* The "compute" is done: the layers' clock starts, the decode ranks hear of it. */
static void start(struct kv_sender *s, struct sreq *q)
{
	const struct kv_send_opts *o = s->o;
	uint32_t L = s->g->layers;
	double now = rc_now();

	q->filling = false;
	q->admitted = q->last = now;
	q->t0 = s->compute_free > now ? s->compute_free : now;
	for (uint32_t l = 0; l < L; l++) {
		q->ready[l] = q->t0 + (l + 1) * o->layer_compute_us * 1e-6;
		q->landed[l] = -1;
	}
	s->compute_free = q->ready[L - 1];
	for (int i = 0; i < s->nd; i++) {
		struct kv_msg m = { .type = KV_MSG_REQ, .req = q->id };

		m.u.request.tokens = o->tokens;
		kvs_send(s, &s->d[i], &m);
	}
}

/*
 * The content of admitted requests, FILL_SLICE_S at a time between polls
 * of the event loop: filling a large request takes seconds, and the decode
 * ranks' heartbeats (16 receive buffers) wait for the loop meanwhile. A
 * slice rather than a worker thread: the slot is ours alone until REQ goes
 * out, a cancel just ends it between two slices, and no lock is needed.
 */
#define FILL_SLICE_S 0.005

/* GPU memory: copy len bytes of the host copy at p to the GPU. */
static int kvs_to_gpu(struct kv_sender *s, const char *p, size_t len, struct rc_err *err)
{
	if (s->mem.kind != RC_MEM_CUDA || !len)
		return 0;
	return rc_mem_write(&s->mem, (size_t)(p - s->pool), p, len, err);
}

#define GPU_CHUNK (1u << 20) /* bytes per copy to the GPU, between looks at the clock */

/* GPU memory: copy what the fill finished of q's slot (the layer halves
 * before the cursor's, all of it once done) to the GPU, until end (at least
 * one chunk, so that it moves on). 1: all of the slot is there; 0: more to
 * copy; < 0: the copy failed. */
static int copy_filled(struct kv_sender *s, struct sreq *q, bool filled, double end,
		       struct rc_err *err)
{
	uint64_t half_bytes = (uint64_t)s->src_pages * s->src_page_bytes;
	uint64_t upto = filled ? s->slot_bytes
			       : ((uint64_t)q->fc.layer * kv_halves(s->g) + q->fc.half) * half_bytes;
	const char *base = s->pool + (uint64_t)q->slot * s->slot_bytes;
	int rc;

	if (s->mem.kind != RC_MEM_CUDA)
		return 1;
	do {
		uint64_t n = upto - q->copied < GPU_CHUNK ? upto - q->copied : GPU_CHUNK;

		if (!n)
			break;
		if ((rc = kvs_to_gpu(s, base + q->copied, (size_t)n, err)))
			return rc;
		q->copied += n;
	} while (rc_now() < end);
	return q->copied == s->slot_bytes;
}

bool kvs_fill_step(struct kv_sender *s)
{
	struct sreq *q = NULL;
	struct fpage fp = { s, 0 };
	struct kv_walk w = { .g = s->g,
			     .dst = false,
			     .check = false,
			     .rank = s->o->c.rank,
			     .tokens = s->o->tokens,
			     .npages = s->src_pages,
			     .page = fill_page,
			     .arg = &fp };
	double end = rc_now() + FILL_SLICE_S;
	struct rc_err e;
	int rc;
	bool walked;

	/* One request at a time, in the order they were admitted. */
	for (uint32_t i = 0; i < s->o->inflight; i++) {
		struct sreq *c = &s->reqs[i];

		if (c->used && c->filling && !c->cancelling && (!q || c->id < q->id))
			q = c;
	}
	if (!q)
		return false;
	fp.slot = q->slot;
	w.req = q->id;
	/* The fill, then (GPU memory) the copy of what it finished, both in
	 * the one slice; the slot's content is complete only once copied. */
	walked = q->fc.layer < s->g->layers;
	rc = walked ? kv_walk_slice(&w, &q->fc, FILL_SLICE_S, &e) : 1;
	/* test hook: one wrong byte, in the last layer half (copied last) */
	if (rc == 1 && walked && s->o->corrupt && s->o->corrupt_req == q->id)
		fill_page(&fp, s->g->layers - 1, kv_halves(s->g) - 1, s->src_pages - 1)[0] ^= 0x5a;
	if (rc >= 0) {
		int c = copy_filled(s, q, rc == 1, end, &e);

		rc = c < 0 ? c : rc == 1 && c == 1;
	}
	if (rc < 0)
		kvs_cancel(s, q, KV_EV_FAILED, -rc, e.msg);
	else if (rc == 1)
		start(s, q);
	return true; /* the next one, or the rest of this one */
}

static int push(struct sqp *qp, const struct wr_ent *w)
{
	if (qp->qhead + qp->qlen == qp->qcap) {
		if (qp->qhead) {
			memmove(qp->q, qp->q + qp->qhead, qp->qlen * sizeof(*w));
			qp->qhead = 0;
		} else {
			size_t cap = qp->qcap ? qp->qcap * 2 : 256;
			struct wr_ent *v = realloc(qp->q, cap * sizeof(*w));

			if (!v)
				return -ENOMEM;
			qp->q = v;
			qp->qcap = cap;
		}
	}
	qp->q[qp->qhead + qp->qlen++] = *w;
	return 0;
}

/* Free the gather lists of n entries and the array. */
static void drop(struct wr_ent *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].sg);
	free(v);
}

/* Queue the writes of one layer to one decode rank: units u0 to u1 - 1 of
 * its segments (both halves in a row) cut into nqps * m units, QP-major:
 * unit u goes on data QP u / m, and the last unit of a QP (u % m == m - 1)
 * ends with its notification. The whole layer: u0 0, u1 nqps, m 1. */
static int queue_layer(struct kv_sender *s, struct sreq *q, struct sdst *d, int di, uint32_t l,
		       uint32_t u0, uint32_t u1, uint32_t m, struct rc_err *err)
{
	uint32_t units = s->o->nqps * m, halves = kv_halves(s->g);
	size_t total = d->nsegs * halves, first = total * u0 / units, end = total * u1 / units,
	       n = 0;
	struct wr_ent *v = malloc((end - first + 1) * sizeof(*v));
	char *staged_lo = NULL, *staged_hi = NULL; /* what packing wrote */
	int rc = 0;

	if (!v)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (uint32_t h = 0; h < halves; h++) {
		char *stage = stage_addr(s, q->slot, d, l, h);
		/* Landing: the route's block of this layer half in the request's run. */
		uint64_t block =
			d->land ? d->land_base + kv_land_block(s->g, &d->route, s->o->tokens,
							       d->land_units, q->land_at[di], l, h)
				: 0;

		for (size_t i = 0; i < d->nsegs; i++) {
			const struct kv_seg *g = &d->segs[i];
			size_t at = h * d->nsegs + i;

			if (at < first || at >= end) {
				stage += d->pack ? g->len : 0;
				continue;
			}
			uint64_t la =
				(uintptr_t)src_addr(s, q->slot, l, h, g->src_page) + g->src_off;
			uint64_t ra = d->land ? block + g->dst_off
					      : d->base +
							(((uint64_t)l * halves + h) * d->pool_pages +
							 q->pages[di][g->dst_page]) *
								d->page_bytes +
							g->dst_off;
			struct wr_ent *last = n ? &v[n - 1] : NULL;

			/* Packed by gather: the segments, in destination order,
			 * pieces of one write while the destination is contiguous
			 * (a piece grows while the source is too). */
			if (d->pack && s->gather > 1) {
				s->sum->gathered_bytes += g->len;
				if (last && last->raddr + last->len == ra &&
				    last->len + g->len <= KV_WRITE_MAX) {
					if (!last->sg && last->laddr + last->len == la) {
						last->len += g->len;
						continue;
					}
					if (last->sg && last->sg[last->nsg - 1].addr +
									last->sg[last->nsg - 1].len ==
								la) {
						last->sg[last->nsg - 1].len += g->len;
						last->len += g->len;
						continue;
					}
					if (!last->sg) {
						if (!(last->sg = malloc(s->gather *
									sizeof(*last->sg)))) {
							rc = -ENOMEM;
							goto out;
						}
						last->sg[0] =
							(struct rc_sg){ last->laddr, last->len };
						last->nsg = 1;
					}
					if (last->nsg < s->gather) {
						last->sg[last->nsg++] = (struct rc_sg){ la, g->len };
						last->len += g->len;
						continue;
					}
				}
				v[n++] = (struct wr_ent){ .laddr = la,
							  .raddr = ra,
							  .len = g->len,
							  .slot = (uint16_t)q->slot,
							  .layer = (uint16_t)l };
				continue;
			}
			/* Packed by copy: the segments, in destination order, copied
			 * one after the other, so that the staging side is contiguous
			 * wherever the destination is. */
			if (d->pack) {
				memcpy(stage, (const void *)(uintptr_t)la, g->len);
				if (!staged_lo || stage < staged_lo)
					staged_lo = stage;
				if (stage + g->len > staged_hi)
					staged_hi = stage + g->len;
				la = (uintptr_t)stage;
				stage += g->len;
				s->sum->packed_bytes += g->len;
			}
			/* Pages that happen to be adjacent on both sides merge. */
			if (last && last->laddr + last->len == la &&
			    last->raddr + last->len == ra && last->len + g->len <= KV_WRITE_MAX) {
				last->len += g->len;
				continue;
			}
			v[n++] = (struct wr_ent){ .laddr = la,
						  .raddr = ra,
						  .len = g->len,
						  .slot = (uint16_t)q->slot,
						  .layer = (uint16_t)l };
		}
	}
	/* GPU memory: what was packed goes to the GPU before any write reads it. */
	if (staged_lo && (rc = kvs_to_gpu(s, staged_lo, (size_t)(staged_hi - staged_lo), err))) {
		drop(v, n);
		return rc;
	}
	/* Contiguous shares per unit; a QP's last unit ends with the notification
	 * (a zero-length write carries it where the unit has no bytes). A queued
	 * entry owns its gather list; v keeps those not queued. */
	for (uint32_t u = u0; !rc && u < u1; u++) {
		size_t a = n * (u - u0) / (u1 - u0), b = n * (u + 1 - u0) / (u1 - u0);
		struct sqp *qp = &d->qp[u / m];
		struct wr_ent imm = { .laddr = (uintptr_t)s->pool,
				      .raddr = d->base,
				      .slot = (uint16_t)q->slot,
				      .layer = (uint16_t)l };

		for (size_t i = a; !rc && i + 1 < b; i++)
			if (!(rc = push(qp, &v[i])))
				v[i].sg = NULL;
		if (u % m != m - 1) {
			if (!rc && b > a && !(rc = push(qp, &v[b - 1])))
				v[b - 1].sg = NULL;
			continue;
		}
		if (b > a)
			imm = v[b - 1];
		imm.has_imm = true;
		imm.imm = kv_imm(q->rgen[di], q->rslot[di], l, s->o->c.rank);
		if (!rc && !(rc = push(qp, &imm)) && b > a)
			v[b - 1].sg = NULL;
		q->pending[l]++;
	}
out:
	drop(v, n);
	return rc ? rc_err_set(err, -rc, "out of memory") : 0;
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

/* The work request of one queued write: the stream's signalling rule, plus
 * every notification and every forced one (force) signalled. */
static void next_wr(const struct kv_sender *s, struct sqp *qp, struct wr_ent *w, uint32_t lkey,
		    uint32_t rkey, bool force, struct rc_wr *wr)
{
	uint64_t seq = qp->sq.posted;

	qp->bytes += w->len;
	/* Queued writes name the CPU's view of the pool; the NIC gets its own. */
	*wr = (struct rc_wr){ .op = w->has_imm ? RC_OP_WRITE_IMM : RC_OP_WRITE,
			      .laddr = w->laddr + s->wire_delta,
			      .len = w->len,
			      .lkey = lkey,
			      .raddr = w->raddr,
			      .rkey = rkey,
			      .imm = w->imm,
			      .user = kv_wrid((uint32_t)seq, w->slot, w->layer, w->has_imm),
			      .sg = w->sg,
			      .nsg = w->sg ? w->nsg : 0 };
	for (uint32_t i = 0; w->sg && s->wire_delta && i < w->nsg; i++)
		w->sg[i].addr += s->wire_delta;
	wr->signaled = rc_sq_next(&qp->sq, force || w->has_imm);
}

int kvs_post_queued(struct kv_sender *s, struct sdst *d)
{
	for (uint32_t k = 0; !d->dead && k < s->o->nqps; k++) {
		struct sqp *qp = &d->qp[k];

		while (qp->qlen && qp->sq.posted - qp->sq.done < SQ_DEPTH) {
			struct rc_chain ch;
			struct rc_err e;
			int rc;

			ch.n = 0;
			while (ch.n < CHAIN && qp->qlen && qp->sq.posted - qp->sq.done < SQ_DEPTH &&
			       rc_chain_room(&ch, qp->q[qp->qhead].nsg)) {
				struct wr_ent *w = &qp->q[qp->qhead];
				struct rc_wr wr;

				next_wr(s, qp, w, d->mr->lkey, d->rkey, false, &wr);
				rc_chain_add(&ch, &wr); /* copies the gather list */
				free(w->sg);
				w->sg = NULL;
				qp->qhead++;
				qp->qlen--;
			}
			rc = rc_chain_post(qp->c, &ch, &e);
			if (rc < 0) {
				snprintf(d->why, sizeof(d->why), "%.200s", e.msg);
				d->dead = true;
				return rc;
			}
		}
	}
	return 0;
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
	for (int i = 0; i < s->nd; i++) {
		struct sdst *d = &s->d[i];

		for (uint32_t k = 0; k < s->o->nqps; k++) {
			struct sqp *qp = &d->qp[k];
			size_t keep = 0;

			for (size_t j = 0; j < qp->qlen; j++) {
				struct wr_ent *w = &qp->q[qp->qhead + j];

				if (w->slot != q->slot) {
					qp->q[qp->qhead + keep++] = *w;
					continue;
				}
				free(w->sg);
				if (w->has_imm)
					q->pending[w->layer]--;
			}
			qp->qlen = keep;
			/* Unsignalled writes at the tail: one signalled write of no
			 * bytes after them tells when they are done. */
			if (!d->dead && qp->sq.signaled < qp->sq.posted) {
				struct wr_ent w = { .laddr = (uintptr_t)s->pool,
						    .raddr = d->base,
						    .slot = (uint16_t)q->slot };
				struct rc_chain ch;
				struct rc_wr wr;

				ch.n = 0;
				next_wr(s, qp, &w, d->mr->lkey, d->rkey, true, &wr);
				rc_chain_add(&ch, &wr);
				if (rc_chain_post(qp->c, &ch, NULL) < 0) {
					snprintf(d->why, sizeof(d->why), "cannot post to %.64s",
						 d->name);
					d->dead = true;
				}
			}
			q->mark[i][k] = qp->sq.posted;
		}
	}
}

static bool quiesced(struct kv_sender *s, struct sreq *q)
{
	for (int i = 0; i < s->nd; i++)
		for (uint32_t k = 0; !s->d[i].closed && k < s->o->nqps; k++)
			if (s->d[i].qp[k].sq.done < q->mark[i][k])
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

static void progress_one(struct kv_sender *s, struct sreq *q, double now)
{
	const struct kv_common_opts *c = &s->o->c;
	uint32_t L = s->g->layers;
	double quiet = c->timeout_ms / 1000.0;
	char why[KV_REASON_MAX];

	if (q->cancelling) {
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
				if (s->d[i].closed || s->d[i].qp[k].sq.done >= q->mark[i][k])
					continue;
				snprintf(s->d[i].why, sizeof(s->d[i].why),
					 "writes did not complete within %d ms", c->timeout_ms);
				s->d[i].dead = true;
			}
		}
		return;
	}
	if (q->filling)
		return; /* kvs_fill_step */
	if (!all_alloc(s, q)) {
		for (int i = 0; now - q->admitted > quiet && i < s->nd; i++) {
			if (q->alloc[i])
				continue;
			snprintf(why, sizeof(why),
				 "no pages from decode rank %u (%.64s) within %d ms", s->d[i].rank,
				 s->d[i].name, c->timeout_ms);
			kvs_cancel(s, q, KV_EV_FAILED, ETIMEDOUT, why);
			return;
		}
		return;
	}
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
			return;
		}
		if (!q->layers_posted && !j)
			q->first_post = now;
		for (int i = 0; i < s->nd; i++) {
			struct rc_err e;
			int rc = queue_layer(s, q, &s->d[i], i, q->layers_posted, u0, u1, m, &e);

			if (rc) {
				kvs_cancel(s, q, KV_EV_FAILED, -rc, e.msg);
				return;
			}
		}
		q->pieces_posted = pieces && j + 1 < nq * m ? j + 1 : 0;
		q->layers_posted += !q->pieces_posted;
		q->last = now;
	}
	if (q->layers_landed < L)
		return;
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

	qp->sq.done += (uint32_t)(seq + 1 - (uint32_t)qp->sq.done);
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
