// SPDX-License-Identifier: MIT
/*
 * kvxfer serve, the requests: pages from the free list, ALLOC to the
 * sources, notifications counted per layer and source rank, verification,
 * and the end of a request. Pages of a cancelled or failed request go back
 * to the free list only once every source that had their addresses
 * confirmed it stopped (or its QPs are destroyed), so a late write can
 * never land in a reused page.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/err_core.h>
#include <rdmactl/kv_core.h>

#include "kv_recv.h"

void kvr_emit(struct kv_receiver *r, struct kv_event *ev)
{
	if (r->o->c.on_event)
		r->o->c.on_event(r->o->c.arg, ev);
}

enum { KV_POISON = 0xa5 };

char *kvr_page_addr(struct kv_receiver *r, uint32_t layer, uint32_t half, uint32_t page)
{
	return (char *)r->pool.buf +
	       (((uint64_t)layer * kv_halves(r->g) + half) * r->o->pool_pages + page) *
		       r->page_bytes;
}

int kvr_send_msg(struct kv_receiver *r, struct rpeer *p, struct kv_msg *m)
{
	struct rc_err e;

	if (p->dead || !p->q[0])
		return -ENOTCONN;
	if (kv_chan_send(&p->q[0]->ch, m, &e)) {
		snprintf(p->why, sizeof(p->why), "%.200s", e.msg);
		p->dead = true;
		return -EIO;
	}
	return 0;
}

static void send_cancel(struct kv_receiver *r, struct rpeer *p, uint32_t id, int code,
			const char *why)
{
	struct kv_msg m = { .type = KV_MSG_CANCEL, .req = id };

	m.u.cancel.code = code;
	snprintf(m.u.cancel.text, sizeof(m.u.cancel.text), "%s", why);
	kvr_send_msg(r, p, &m);
}

struct rreq *kvr_req_find(struct kv_receiver *r, uint32_t id)
{
	for (int i = 0; i < KV_MAX_SLOTS; i++)
		if (r->reqs[i].used && r->reqs[i].id == id)
			return &r->reqs[i];
	return NULL;
}

static void page_free(struct kv_receiver *r, uint32_t page)
{
	r->freel[(r->fhead + r->nfree++) % r->o->pool_pages] = page;
}

/* With --verify, released pages are poisoned before they are free again:
 * whatever a source wrote there (a request cancelled, failed or killed
 * halfway) cannot satisfy the check of a later request that reuses them,
 * even one with the same id. The poisoning runs in slices too
 * (poison_step), so they wait in a ring of their own meanwhile. */
void kvr_req_release(struct kv_receiver *r, struct rreq *q)
{
	for (uint32_t i = 0; q->pages && r->land_off && q->land_at != KV_LAND_NONE && i < q->npages;
	     i++)
		r->land_used[q->land_at + i] = 0;
	for (uint32_t i = 0; q->pages && i < q->npages; i++) {
		if (r->o->verify)
			r->dirtyl[(r->dhead + r->ndirty++) % r->o->pool_pages] = q->pages[i];
		else
			page_free(r, q->pages[i]);
	}
	free(q->pages);
	kv_tally_fini(&q->tally);
	free(q->landed);
	r->gen[q->slot]++;
	memset(q, 0, sizeof(*q));
}

/* The last layer landed -> every layer in the pool (q->complete), in
 * seconds; -1 before. */
static double unpack_time(const struct kv_receiver *r, const struct rreq *q)
{
	double last = 0;

	if (q->complete <= 0 || !q->landed)
		return -1;
	for (uint32_t l = 0; l < r->g->layers; l++)
		if (q->landed[l] > last)
			last = q->landed[l];
	last = q->complete - q->t0 - last / 1e6;
	return last > 0 ? last : 0;
}

static void report(struct kv_receiver *r, struct rreq *q, enum kv_ev_kind kind, bool checked,
		   bool verified)
{
	struct kv_heads h;
	struct kv_report rep = { .req = q->id,
				 .tokens = q->tokens,
				 .layers = r->g->layers,
				 .exposed_s = -1,
				 .landed_us = q->landed,
				 .layers_landed = q->layers_landed,
				 .sources = q->asked,
				 .checked = checked,
				 .verified = verified,
				 .reason = kind == KV_EV_DONE ? NULL : q->reason };
	struct kv_event ev = { .kind = kind, .rank = r->o->c.rank, .rep = &rep };
	double now = rc_now();

	kv_rank_heads(r->g, r->g->dst_tp, r->o->c.rank, &h);
	rep.bytes =
		(uint64_t)q->tokens * h.count * kv_row_bytes(r->g) * kv_halves(r->g) * r->g->layers;
	rep.seconds = now - q->t0;
	rep.unpack_s = unpack_time(r, q);
	rep.complete_s = q->complete > 0 ? q->complete - q->t0 : -1;
	rep.started_at = rc_wall(q->t0);
	kvr_emit(r, &ev);
	if (kind == KV_EV_DONE) {
		r->sum->done++;
		r->sum->bytes += rep.bytes;
		for (uint32_t s = 0; r->sum->nrails && s < r->g->src_tp && s < KV_MAX_TP; s++)
			if (q->asked >> s & 1 && r->by_rank[s])
				r->sum->rails[r->by_rank[s]->rail].bytes +=
					kv_route_bytes(r->g, &r->from[s], q->tokens) *
					kv_halves(r->g) * r->g->layers;
		r->sum->verified += verified;
	} else {
		r->sum->cancelled += kind == KV_EV_CANCELLED;
		r->sum->failed += kind == KV_EV_FAILED;
	}
	r->sum->seconds = now - r->first;
	r->finished++;
	r->last_finish = now;
}

/* A cancelled or failed request: report and free once nothing can land. */
void kvr_maybe_finish(struct kv_receiver *r, struct rreq *q)
{
	struct tomb *t = &r->tombs[0];

	if (!q->used || !q->cancelling || (q->alloced & ~q->quiesced))
		return;
	report(r, q, q->final, false, false);
	for (int i = 0; i < TOMBS; i++)
		if (!r->tombs[i].used || r->tombs[i].t < t->t)
			t = &r->tombs[i];
	*t = (struct tomb){ true, q->id, q->quiesced, rc_now() };
	kvr_req_release(r, q);
}

void kvr_cancel_req(struct kv_receiver *r, struct rreq *q, enum kv_ev_kind final, int code,
		    const char *why)
{
	if (q->cancelling)
		return;
	q->cancelling = true;
	q->final = final;
	snprintf(q->reason, sizeof(q->reason), "%s", why);
	for (uint32_t s = 0; s < r->g->src_tp; s++)
		if ((q->asked & ~q->quiesced) >> s & 1 && r->by_rank[s])
			send_cancel(r, r->by_rank[s], q->id, code, why);
	kvr_maybe_finish(r, q);
}

static void send_alloc(struct kv_receiver *r, struct rreq *q, uint32_t s)
{
	struct kv_msg m = { .type = KV_MSG_ALLOC, .req = q->id };

	m.u.alloc.slot = q->slot;
	m.u.alloc.gen = r->gen[q->slot];
	m.u.alloc.npages = q->npages;
	m.u.alloc.pages = q->pages;
	m.u.alloc.land = r->land_off ? q->land_at : KV_LAND_NONE;
	if (kvr_send_msg(r, r->by_rank[s], &m) == 0)
		q->alloced |= 1ULL << s;
}

/* A run of q->npages free units of the landing area for q (first fit):
 * false when none is free yet. Every run is as long as the request has
 * pages, so with no other request held, one always is; a request of more
 * pages than the area has units gets none (KV_LAND_NONE), and is refused
 * where a route of it lands (kvr_on_req). */
static bool land_run(struct kv_receiver *r, struct rreq *q)
{
	q->land_at = KV_LAND_NONE;
	if (q->npages > r->land_units)
		return true;
	for (uint32_t at = 0, n = 0; at < r->land_units; at++) {
		n = r->land_used[at] ? 0 : n + 1;
		if (n < q->npages)
			continue;
		q->land_at = at + 1 - n;
		memset(r->land_used + q->land_at, 1, n);
		return true;
	}
	return false;
}

/* Give pages to the oldest requests waiting for them. */
static void allocate_waiting(struct kv_receiver *r)
{
	for (;;) {
		struct rreq *q = NULL;

		for (int i = 0; i < KV_MAX_SLOTS; i++) {
			struct rreq *c = &r->reqs[i];

			if (c->used && !c->pages && !c->cancelling && (!q || c->t0 < q->t0))
				q = c;
		}
		if (!q || q->npages > r->nfree)
			return;
		q->pages = malloc(q->npages * sizeof(uint32_t));
		if (!q->pages) {
			kvr_cancel_req(r, q, KV_EV_FAILED, ENOMEM, "out of memory");
			continue;
		}
		if (r->land_off && !land_run(r, q)) {
			free(q->pages);
			q->pages = NULL;
			return;
		}
		for (uint32_t i = 0; i < q->npages; i++, r->nfree--)
			q->pages[i] = r->freel[r->fhead++ % r->o->pool_pages];
		r->fhead %= r->o->pool_pages;
		for (uint32_t s = 0; s < r->g->src_tp; s++)
			if (q->asked >> s & 1)
				send_alloc(r, q, s);
	}
}

/* A REQ of an id that ended here lately (its tomb): true when p is told it
 * is over; a rank that already saw it end starts a new request. */
static bool req_over(struct kv_receiver *r, struct rpeer *p, const struct kv_msg *m)
{
	for (int i = 0; i < TOMBS; i++) {
		struct tomb *t = &r->tombs[i];

		if (!t->used || t->id != m->req)
			continue;
		if (t->quiesced >> p->rank & 1 || rc_now() - t->t > r->o->c.timeout_ms / 1000.0) {
			t->used = false;
			continue;
		}
		send_cancel(r, p, m->req, ECANCELED, "the request was already cancelled or failed");
		return true;
	}
	return false;
}

/* The first REQ of a request: a slot for it, or p told why not; NULL then,
 * or when it failed at once. */
static struct rreq *req_new(struct kv_receiver *r, struct rpeer *p, const struct kv_msg *m)
{
	uint32_t need = kv_pages_for(r->g, true, m->u.request.tokens);
	char why[KV_REASON_MAX];
	struct rreq *q;
	int slot = -1;

	for (int i = 0; i < KV_MAX_SLOTS && slot < 0; i++)
		if (!r->reqs[i].used)
			slot = i;
	if (slot < 0 || need > r->o->pool_pages || need > KV_MAX_REQ_PAGES ||
	    m->u.request.tokens == 0) {
		snprintf(why, sizeof(why),
			 slot < 0 ? "decode rank %u holds %d requests already"
			 : m->u.request.tokens == 0
				 ? "decode rank %u: a request of no tokens"
				 : "decode rank %u: pool too small: the request needs %u pages, the pool has %u",
			 r->o->c.rank, slot < 0 ? KV_MAX_SLOTS : need, r->o->pool_pages);
		send_cancel(r, p, m->req, ENOSPC, why);
		return NULL;
	}
	q = &r->reqs[slot];
	q->used = true;
	q->slot = (uint32_t)slot;
	q->id = m->req;
	q->tokens = m->u.request.tokens;
	q->npages = need;
	q->t0 = rc_now();
	q->landed = malloc(r->g->layers * sizeof(double));
	if (kv_tally_init(&q->tally, r->g->layers, r->g->src_tp, r->contrib) || !q->landed) {
		kvr_cancel_req(r, q, KV_EV_FAILED, ENOMEM, "out of memory");
		return NULL;
	}
	for (uint32_t l = 0; l < r->g->layers; l++)
		q->landed[l] = -1;
	return q;
}

void kvr_on_req(struct kv_receiver *r, struct rpeer *p, const struct kv_msg *m)
{
	struct rreq *q = kvr_req_find(r, m->req);
	char why[KV_REASON_MAX];
	char opt[64];

	if (!q && (req_over(r, p, m) || !(q = req_new(r, p, m))))
		return;
	/* A REQ again refreshes nothing: a request held that way still times out. */
	if (q->asked >> p->rank & 1)
		return;
	q->last = rc_now();
	q->asked |= 1ULL << p->rank;
	if (!q->cancelling && kv_tally_join(&q->tally, p->rank, p->nqps)) {
		snprintf(why, sizeof(why), "source rank %u cannot join request %u with %u data QPs",
			 p->rank, q->id, p->nqps);
		kvr_cancel_req(r, q, KV_EV_FAILED, EPROTO, why);
		return;
	}
	if (q->cancelling) {
		send_cancel(r, p, q->id, ECANCELED, q->reason);
		return;
	}
	if (q->tokens != m->u.request.tokens) {
		snprintf(why, sizeof(why),
			 "source ranks disagree on the tokens of request %u: %u and %u", q->id,
			 q->tokens, m->u.request.tokens);
		kvr_cancel_req(r, q, KV_EV_FAILED, EPROTO, why);
		return;
	}
	if (p->land && q->npages > r->land_units) {
		snprintf(why, sizeof(why),
			 "decode rank %u: landing area too small: request %u needs %u "
			 "pages, %s is %u",
			 r->o->c.rank, q->id, q->npages,
			 rc_param_name("land_pages", opt, sizeof(opt)), r->land_units);
		kvr_cancel_req(r, q, KV_EV_FAILED, ENOSPC, why);
		return;
	}
	q->land |= (uint64_t)p->land << p->rank;
	if (q->pages)
		send_alloc(r, q, p->rank);
	else
		allocate_waiting(r);
}

/* DONE to the sources and the report: verified (rc 0), wrong, or unchecked. */
static void complete(struct kv_receiver *r, struct rreq *q, int rc, const struct rc_err *e)
{
	struct kv_msg m = { .type = KV_MSG_DONE, .req = q->id };

	m.u.done.flags = r->o->verify ? KV_DONE_CHECKED | (rc ? 0 : KV_DONE_VERIFIED) : 0;
	m.u.done.status = rc < 0 ? -rc : 0;
	m.u.done.unpack_us = unpack_time(r, q) > 0 ? (uint32_t)(unpack_time(r, q) * 1e6 + 0.5) : 0;
	for (uint32_t s = 0; s < r->g->src_tp; s++)
		if (q->asked >> s & 1 && r->by_rank[s])
			kvr_send_msg(r, r->by_rank[s], &m);
	if (rc)
		snprintf(q->reason, sizeof(q->reason), "verification failed: %.200s", e->msg);
	report(r, q, rc ? KV_EV_FAILED : KV_EV_DONE, r->o->verify, r->o->verify && !rc);
	kvr_req_release(r, q);
	allocate_waiting(r);
}

struct vpage {
	struct kv_receiver *r;
	const struct rreq *q;
};

static char *verify_page(void *arg, uint32_t layer, uint32_t half, uint32_t i)
{
	struct vpage *v = arg;

	return kvr_page_addr(v->r, layer, half, v->q->pages[i]);
}

/*
 * --verify runs in slices of VERIFY_SLICE_S between polls of the event
 * loop, not in one go: a large request takes seconds to check, and the
 * heartbeats of the sources (and their other messages, their 16 receive
 * buffers) wait for the loop meanwhile. A slice rather than a worker
 * thread: the pages cannot be released under it, a cancel or a dead source
 * simply ends the request between two slices, and no lock is needed.
 */
#define VERIFY_SLICE_S 0.005

/* Poison released pages until end, then free them; true when some remain. */
static bool poison_step(struct kv_receiver *r, double end)
{
	while (r->ndirty && rc_now() < end) {
		uint32_t page = r->dirtyl[r->dhead];

		r->dhead = (r->dhead + 1) % r->o->pool_pages;
		r->ndirty--;
		for (uint32_t l = 0; l < r->g->layers; l++)
			for (uint32_t h = 0; h < kv_halves(r->g); h++)
				memset(kvr_page_addr(r, l, h, page), KV_POISON, r->page_bytes);
		page_free(r, page);
	}
	return r->ndirty != 0;
}

bool kvr_verify_step(struct kv_receiver *r)
{
	bool more = false;

	for (int k = 0; k < KV_MAX_SLOTS; k++) {
		struct rreq *q = &r->reqs[k];
		struct vpage vp = { r, q };
		struct kv_walk w = { .g = r->g,
				     .dst = true,
				     .check = true,
				     .rank = r->o->c.rank,
				     .req = q->id,
				     .tokens = q->tokens,
				     .npages = q->npages,
				     .page = verify_page,
				     .arg = &vp };
		struct rc_err e = { 0 };
		int rc;

		if (!q->used || !q->verifying || q->cancelling)
			continue;
		rc = kv_walk_slice(&w, &q->vc, VERIFY_SLICE_S, &e);
		q->last = rc_now(); /* busy here, not silent there */
		if (rc == 0) {
			more = true;
			continue;
		}
		complete(r, q, rc < 0 ? rc : 0, &e);
	}
	more = poison_step(r, rc_now() + VERIFY_SLICE_S) || more;
	/* Pages given back this turn, poisoned or not (a cancelled or failed
	 * request releases its pages in kvr_maybe_finish, from many places) go
	 * to the requests waiting for them here, once every message of the
	 * turn was handled: a dead source's requests are all cancelled by now. */
	allocate_waiting(r);
	return more;
}

void kvr_on_imm(struct kv_receiver *r, struct rpeer *p, uint32_t qp, uint32_t imm)
{
	uint32_t slot = kv_imm_slot(imm), layer = kv_imm_layer(imm), s = kv_imm_rank(imm);
	struct rreq *q = &r->reqs[slot];
	char why[KV_REASON_MAX];
	int res;

	p->last_rx = rc_now();
	if (!q->used || kv_imm_gen(imm) != r->gen[slot] || q->cancelling)
		return; /* a late notification of a request that is over */
	res = s == p->rank && q->alloced >> s & 1 ? kv_tally_note(&q->tally, s, qp, layer)
						  : KV_TALLY_BAD;
	if (res < 0) {
		if (res == KV_TALLY_DUP)
			snprintf(why, sizeof(why),
				 "source rank %u notified layer %u of request %u twice "
				 "on data QP %u",
				 p->rank, layer, q->id, qp);
		else
			snprintf(why, sizeof(why),
				 "source rank %u sent a notification that does not fit "
				 "(layer %u, request %u, data QP %u, rank %u)",
				 p->rank, layer, q->id, qp, s);
		kvr_cancel_req(r, q, KV_EV_FAILED, EPROTO, why);
		return;
	}
	q->last = p->last_rx;
	if (res != KV_TALLY_LANDED)
		return; /* every contributing source, one on each of its data QPs */
	q->landed[layer] = (p->last_rx - q->t0) * 1e6;
	q->layers_landed++;
	if (r->o->c.cancel_req == (int64_t)q->id && q->layers_landed >= r->o->c.cancel_after &&
	    q->layers_landed < r->g->layers) {
		snprintf(why, sizeof(why), "cancelled by decode rank %u after %u layers (test hook)",
			 r->o->c.rank, q->layers_landed);
		kvr_cancel_req(r, q, KV_EV_CANCELLED, 0, why);
		return;
	}
	if (q->layers_landed < r->g->layers || q->land)
		return; /* landing: kvr_unpack_step ends it */
	kvr_all_landed(r, q);
}

void kvr_all_landed(struct kv_receiver *r, struct rreq *q)
{
	q->complete = rc_now();
	if (r->o->verify)
		q->verifying = true; /* kvr_verify_step, between polls */
	else
		complete(r, q, 0, NULL);
}
