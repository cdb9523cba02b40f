// SPDX-License-Identifier: MIT
/*
 * kvxfer send, the writes: a layer's writes to one decode rank built from
 * its route's segments (merged where adjacent, gathered or copied into
 * staging when packed), queued per data QP with one WRITE_WITH_IMM ending
 * each QP's share, posted in chains as the send queues have room, and a
 * cancelled request's queued writes dropped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_send.h"
#include <rdmactl/mem_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/kv_core.h>

char *kvs_src_addr(struct kv_sender *s, uint32_t slot, uint32_t layer, uint32_t half, uint32_t page)
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

int kvs_to_gpu(struct kv_sender *s, const char *p, size_t len, struct rc_err *err)
{
	if (s->mem.kind != RC_MEM_CUDA || !len)
		return 0;
	return rc_mem_write(&s->mem, (size_t)(p - s->pool), p, len, err);
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

/* The writes of one layer to one decode rank, as they are built: v[0..n),
 * and the part of the staging slot that packing by copy wrote (lo to hi). */
struct wbuild {
	struct wr_ent *v;
	size_t n;
	char *lo, *hi;
};

/* Packed by gather: the segments, in destination order, pieces of one
 * write while the destination is contiguous (a piece grows while the source
 * is too). 0, or -ENOMEM. */
static int add_gathered(struct kv_sender *s, struct wbuild *b, const struct wr_ent *w)
{
	struct wr_ent *last = b->n ? &b->v[b->n - 1] : NULL;

	s->sum->gathered_bytes += w->len;
	if (last && last->raddr + last->len == w->raddr && last->len + w->len <= KV_WRITE_MAX) {
		if (!last->sg && last->laddr + last->len == w->laddr) {
			last->len += w->len;
			return 0;
		}
		if (last->sg &&
		    last->sg[last->nsg - 1].addr + last->sg[last->nsg - 1].len == w->laddr) {
			last->sg[last->nsg - 1].len += w->len;
			last->len += w->len;
			return 0;
		}
		if (!last->sg) {
			if (!(last->sg = malloc(s->gather * sizeof(*last->sg))))
				return -ENOMEM;
			last->sg[0] = (struct rc_sg){ last->laddr, last->len };
			last->nsg = 1;
		}
		if (last->nsg < s->gather) {
			last->sg[last->nsg++] = (struct rc_sg){ w->laddr, w->len };
			last->len += w->len;
			return 0;
		}
	}
	b->v[b->n++] = *w;
	return 0;
}

/* Packed by copy: the segments, in destination order, copied one after the
 * other at *stage, so that the staging side is contiguous wherever the
 * destination is; w then writes from there. */
static void add_staged(struct kv_sender *s, struct wbuild *b, char **stage, struct wr_ent *w)
{
	memcpy(*stage, (const void *)(uintptr_t)w->laddr, w->len);
	if (!b->lo || *stage < b->lo)
		b->lo = *stage;
	if (*stage + w->len > b->hi)
		b->hi = *stage + w->len;
	w->laddr = (uintptr_t)*stage;
	*stage += w->len;
	s->sum->packed_bytes += w->len;
}

/* Pages that happen to be adjacent on both sides merge. */
static void add_write(struct wbuild *b, const struct wr_ent *w)
{
	struct wr_ent *last = b->n ? &b->v[b->n - 1] : NULL;

	if (last && last->laddr + last->len == w->laddr && last->raddr + last->len == w->raddr &&
	    last->len + w->len <= KV_WRITE_MAX) {
		last->len += w->len;
		return;
	}
	b->v[b->n++] = *w;
}

/* The writes of layer l to d (the di-th decode rank) for the segments first
 * to end - 1 of the layer (both halves in a row), into b. 0, or -ENOMEM. */
static int build_writes(struct kv_sender *s, struct sreq *q, struct sdst *d, int di, uint32_t l,
			size_t first, size_t end, struct wbuild *b)
{
	uint32_t halves = kv_halves(s->g);

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
			struct wr_ent w = { .len = g->len,
					    .slot = (uint16_t)q->slot,
					    .layer = (uint16_t)l };

			if (at < first || at >= end) {
				stage += d->pack ? g->len : 0;
				continue;
			}
			w.laddr =
				(uintptr_t)kvs_src_addr(s, q->slot, l, h, g->src_page) + g->src_off;
			w.raddr = d->land ? block + g->dst_off
					  : d->base +
						    (((uint64_t)l * halves + h) * d->pool_pages +
						     q->pages[di][g->dst_page]) *
							    d->page_bytes +
						    g->dst_off;
			if (d->pack && s->gather > 1) {
				if (add_gathered(s, b, &w))
					return -ENOMEM;
				continue;
			}
			if (d->pack)
				add_staged(s, b, &stage, &w);
			add_write(b, &w);
		}
	}
	return 0;
}

/* Contiguous shares of b per unit u0 to u1 - 1, unit u on data QP u / m; a
 * QP's last unit ends with the notification (a zero-length write carries it
 * where the unit has no bytes). A queued entry owns its gather list; b keeps
 * those not queued. 0, or -ENOMEM. */
static int queue_units(struct kv_sender *s, struct sreq *q, struct sdst *d, int di, uint32_t l,
		       uint32_t u0, uint32_t u1, uint32_t m, struct wbuild *b)
{
	struct wr_ent *v = b->v;
	size_t n = b->n;
	int rc = 0;

	for (uint32_t u = u0; !rc && u < u1; u++) {
		size_t a = n * (u - u0) / (u1 - u0), e = n * (u + 1 - u0) / (u1 - u0);
		struct sqp *qp = &d->qp[u / m];
		struct wr_ent imm = { .laddr = (uintptr_t)s->pool,
				      .raddr = d->base,
				      .slot = (uint16_t)q->slot,
				      .layer = (uint16_t)l };

		for (size_t i = a; !rc && i + 1 < e; i++)
			if (!(rc = push(qp, &v[i])))
				v[i].sg = NULL;
		if (u % m != m - 1) {
			if (!rc && e > a && !(rc = push(qp, &v[e - 1])))
				v[e - 1].sg = NULL;
			continue;
		}
		if (e > a)
			imm = v[e - 1];
		imm.has_imm = true;
		imm.imm = kv_imm(q->rgen[di], q->rslot[di], l, s->o->c.rank);
		if (!rc && !(rc = push(qp, &imm)) && e > a)
			v[e - 1].sg = NULL;
		q->pending[l]++;
	}
	return rc;
}

int kvs_queue_layer(struct kv_sender *s, struct sreq *q, struct sdst *d, int di, uint32_t l,
		    uint32_t u0, uint32_t u1, uint32_t m, struct rc_err *err)
{
	uint32_t units = s->o->nqps * m;
	size_t total = d->nsegs * kv_halves(s->g), first = total * u0 / units,
	       end = total * u1 / units;
	struct wbuild b = { .v = malloc((end - first + 1) * sizeof(*b.v)) };
	int rc;

	if (!b.v)
		return rc_err_set(err, ENOMEM, "out of memory");
	rc = build_writes(s, q, d, di, l, first, end, &b);
	/* GPU memory: what was packed goes to the GPU before any write reads it. */
	if (!rc && b.lo && (rc = kvs_to_gpu(s, b.lo, (size_t)(b.hi - b.lo), err))) {
		drop(b.v, b.n);
		return rc;
	}
	if (!rc)
		rc = queue_units(s, q, d, di, l, u0, u1, m, &b);
	drop(b.v, b.n);
	return rc ? rc_err_set(err, -rc, "out of memory") : 0;
}

/* One queued write to the engine: its signalling rule, plus every
 * notification and every forced one (force) signalled. */
static int add_wr(const struct kv_sender *s, struct sqp *qp, struct wr_ent *w, uint32_t lkey,
		  uint32_t rkey, bool force, struct rc_err *err)
{
	uint64_t seq = rc_pipe_seq(&qp->pipe);
	struct rc_wr wr;

	qp->bytes += w->len;
	/* Queued writes name the CPU's view of the pool; the NIC gets its own. */
	wr = (struct rc_wr){ .op = w->has_imm ? RC_OP_WRITE_IMM : RC_OP_WRITE,
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
	return rc_pipe_add(&qp->pipe, &wr, force || w->has_imm, err); /* copies the gather list */
}

int kvs_post_queued(struct kv_sender *s, struct sdst *d)
{
	for (uint32_t k = 0; !d->dead && k < s->o->nqps; k++) {
		struct sqp *qp = &d->qp[k];
		struct rc_err e;
		int rc = 0;

		while (!rc && qp->qlen && rc_pipe_room(&qp->pipe, qp->q[qp->qhead].nsg)) {
			struct wr_ent *w = &qp->q[qp->qhead];

			rc = add_wr(s, qp, w, d->mr->lkey, d->rkey, false, &e);
			free(w->sg);
			w->sg = NULL;
			qp->qhead++;
			qp->qlen--;
		}
		if (!rc)
			rc = rc_pipe_flush(&qp->pipe, &e);
		if (rc < 0) {
			snprintf(d->why, sizeof(d->why), "%.200s", e.msg);
			d->dead = true;
			return rc;
		}
	}
	return 0;
}

uint64_t kvs_unqueue(struct kv_sender *s, struct sdst *d, struct sqp *qp, struct sreq *q)
{
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
	if (!d->dead && qp->pipe.sq.signaled < qp->pipe.sq.posted) {
		struct wr_ent w = { .laddr = (uintptr_t)s->pool,
				    .raddr = d->base,
				    .slot = (uint16_t)q->slot };

		if (add_wr(s, qp, &w, d->mr->lkey, d->rkey, true, NULL) < 0 ||
		    rc_pipe_flush(&qp->pipe, NULL) < 0) {
			snprintf(d->why, sizeof(d->why), "cannot post to %.64s", d->name);
			d->dead = true;
		}
	}
	return qp->pipe.sq.posted;
}
