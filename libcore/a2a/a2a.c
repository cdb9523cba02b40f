// SPDX-License-Identifier: MIT
/* The all-to-all driver: buffers, the iteration loop, content and checks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>

#include "a2a_int.h"

uint64_t a2a_recv_off(const struct a2a *a, int dst, int src)
{
	uint64_t off = 0;

	for (int s = 0; s < src; s++)
		off += a->o->counts[s * a->W + dst];
	return off;
}

uint64_t a2a_send_off(const struct a2a *a, int src, int dst)
{
	uint64_t off = 0;

	for (int d = 0; d < dst; d++)
		off += a->o->counts[src * a->W + d];
	return off;
}

static bool o_ring(const struct a2a *a)
{
	return a->o->algo == RC_A2A_RING;
}

static int setup(struct a2a *a, struct rc_err *err)
{
	int W = a->W, me = a->me;
	uint64_t stoks, rtoks;
	size_t sb, rb;
	struct a2a_remote mine = { 0 };
	int rc;

	a->soff = calloc((size_t)W + 1, sizeof(uint64_t));
	a->roff = calloc((size_t)W + 1, sizeof(uint64_t));
	a->remote = calloc((size_t)W, sizeof(*a->remote));
	a->scratch = malloc(a->tb);
	if (!a->soff || !a->roff || !a->remote || !a->scratch)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int j = 0; j < W; j++) {
		a->soff[j + 1] = a->soff[j] + a->o->counts[me * W + j];
		a->roff[j + 1] = a->roff[j] + a->o->counts[j * W + me];
	}
	stoks = a->soff[W];
	rtoks = a->roff[W];
	sb = (size_t)stoks * a->tb;
	rb = (size_t)rtoks * a->tb;
	/* dsend | crecv0 | crecv1 (by destination), csend | drecv0 | drecv1 (by source) */
	size_t stb = o_ring(a)				 ? (size_t)a2a_stage_tokens(a, me) * a->tb
		     : a->o->algo == RC_A2A_HIER ? (size_t)a2a_rail_tokens(a, me) * a->tb
						 : 0;

	a->mem_len = 3 * sb + 3 * rb + stb + 64;
	if (a->o->mem != RC_MEM_HOST && a->o->mem != RC_MEM_HUGEPAGE)
		return rc_err_set(err, ENOTSUP,
				  "the token buffers are filled, copied and checked by the CPU: host or "
				  "hugepage memory, not %s", rc_mem_kind_name(a->o->mem));
	if ((rc = rc_mem_alloc(&a->m, a->o->mem, a->mem_len, NULL, true, err)))
		return rc;
	a->mem = a->m.buf;
	memset(a->mem, 0, a->mem_len);
	a->dsend = a->mem;
	a->crecv[0] = a->dsend + sb;
	a->crecv[1] = a->crecv[0] + sb;
	a->csend = a->crecv[1] + sb;
	a->drecv[0] = a->csend + rb;
	a->drecv[1] = a->drecv[0] + rb;
	a->stage = a->drecv[1] + rb;
	a->mr = ibv_reg_mr(rc_group_pd(a->g), a->mem, a->mem_len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!a->mr)
		return rc_err_set(err, errno, "cannot register %zu bytes of token buffers: %s",
				  a->mem_len, strerror(errno));
	for (int p = 0; p < 2; p++) {
		mine.drecv[p] = (uintptr_t)a->drecv[p];
		mine.crecv[p] = (uintptr_t)a->crecv[p];
	}
	mine.stage = (uintptr_t)a->stage;
	mine.rkey = a->mr->rkey;
	return rc_group_exchange(a->g, &mine, sizeof(mine), a->remote, err);
}

static void teardown(struct a2a *a)
{
	if (a->mr)
		ibv_dereg_mr(a->mr);
	rc_mem_free(&a->m);
	free(a->soff);
	free(a->roff);
	free(a->remote);
	free(a->scratch);
}

/* Fill what this rank sends in iteration iter. */
static void prepare(struct a2a *a, uint32_t iter)
{
	for (int j = 0; j < a->W; j++) {
		for (uint64_t t = a->soff[j]; t < a->soff[j + 1]; t++)
			rc_a2a_token_fill(a->dsend + t * a->tb, a->tb, a->me, j, t - a->soff[j], iter,
					  PH_DISPATCH);
		/* combine: the tokens that came from j go back to j */
		for (uint64_t t = a->roff[j]; t < a->roff[j + 1]; t++)
			rc_a2a_token_fill(a->csend + t * a->tb, a->tb, a->me, j, t - a->roff[j], iter,
					  PH_COMBINE);
	}
}

static void check(struct a2a *a, uint32_t iter, struct rc_a2a_result *res)
{
	int p = iter & 1;

	for (int j = 0; j < a->W; j++) {
		for (uint64_t t = a->roff[j]; t < a->roff[j + 1]; t++) {
			rc_a2a_token_fill(a->scratch, a->tb, j, a->me, t - a->roff[j], iter,
					  PH_DISPATCH);
			res->wrong += memcmp(a->scratch, a->drecv[p] + t * a->tb, a->tb) != 0;
		}
		for (uint64_t t = a->soff[j]; t < a->soff[j + 1]; t++) {
			rc_a2a_token_fill(a->scratch, a->tb, j, a->me, t - a->soff[j], iter,
					  PH_COMBINE);
			res->wrong += memcmp(a->scratch, a->crecv[p] + t * a->tb, a->tb) != 0;
		}
		res->checked += (a->roff[j + 1] - a->roff[j]) + (a->soff[j + 1] - a->soff[j]);
	}
	res->checked_bytes = res->checked * a->tb;
}

int rc_a2a_run(struct rc_group *g, const struct rc_a2a_opts *o, struct rc_a2a_result *res,
	       struct rc_err *err)
{
	struct a2a a = { .g = g, .o = o, .m = { .fd = -1, .dmabuf_fd = -1 } };
	int rc, total = o->warmup + o->iters;

	a.W = rc_group_world(g);
	a.me = rc_group_rank(g);
	a.tb = rc_a2a_token_bytes(o->hidden, o->dtype);
	res->wrong = res->checked = res->checked_bytes = 0;
	res->seconds = 0;
	if (o->algo == RC_A2A_HIER) {
		a.L = o->ranks_per_node;
		if (a.L < 1 || a.W % a.L)
			return rc_err_set(err, EINVAL, "%d ranks do not split into nodes of %d", a.W,
					  a.L);
	}
	rc = setup(&a, err);
	if (!rc && o->algo == RC_A2A_HIER)
		rc = a2a_hier_setup(&a, err);
	if (!rc)
		rc = rc_group_barrier(g, err);
	for (int i = 0; !rc && i < total; i++) {
		uint32_t iter = (uint32_t)i;
		double t0;

		/* the previous iteration's writes left the send buffers */
		rc = rc_group_flush(g, err);
		if (rc)
			break;
		prepare(&a, iter);
		t0 = rc_now();
		rc = o->algo == RC_A2A_RING   ? a2a_ring_iter(&a, iter, err)
		     : o->algo == RC_A2A_HIER ? a2a_hier_iter(&a, iter, err)
					      : a2a_flat_iter(&a, iter, err);
		if (rc)
			break;
		if (i >= o->warmup) {
			double dt = rc_now() - t0;

			res->seconds += dt;
			if (res->lat_us)
				res->lat_us[i - o->warmup] = dt * 1e6;
		}
		if (o->check)
			check(&a, iter, res);
		if (o->progress)
			o->progress(o->progress_arg, i + 1, total);
	}
	if (!rc)
		rc = rc_group_flush(g, err);
	if (o->algo == RC_A2A_HIER)
		a2a_hier_teardown(&a);
	teardown(&a);
	if (rc)
		rc_group_abort(g, err->msg);
	return rc;
}
