// SPDX-License-Identifier: MIT
/*
 * kvxfer send, a request's source slot: taken when the request is
 * admitted, filled with deterministic content in slices between polls (and,
 * for GPU memory, copied to the GPU), and only then started: its layers'
 * clock starts and the decode ranks hear of it (REQ).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv_send.h"
#include <rdmactl/kv_core.h>

struct fpage {
	struct kv_sender *s;
	uint32_t slot;
};

static char *fill_page(void *arg, uint32_t layer, uint32_t half, uint32_t i)
{
	struct fpage *f = arg;

	return kvs_src_addr(f->s, f->slot, layer, half, i);
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
