// SPDX-License-Identifier: MIT
/* The all-to-all driver: buffers, the iteration loop, content and checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rdmactl/ops.h>
#include <rdmactl/err_core.h>
#include <rdmactl/mem_core.h>
#include <rdmactl/group_core.h>
#include <rdmactl/a2a_core.h>

#include "a2a_int.h"

/* Tokens of staging on every rank (only < 0) or on rank only, into st[W]:
 * ring, the blocks it forwards (every rank's at once); flat and hierarchical
 * (whose rails write straight into the node's shared segment), none. 0 or
 * -ENOMEM. */
static int staging(const struct a2a *a, int only, uint64_t *st)
{
	if (a->o->algo == RC_A2A_RING)
		return a2a_stage_tokens_all(a, st);
	if (only < 0)
		memset(st, 0, (size_t)a->W * sizeof(*st));
	else
		st[only] = 0;
	return 0;
}

/* Bytes of a rank's token buffers, all of them registered, for the tokens
 * it sends (stoks) and receives (rtoks): dsend | crecv0 | crecv1 (by
 * destination), csend | drecv0 | drecv1 (by source), then its staging. */
static size_t tokens_len(const struct a2a *a, uint64_t stoks, uint64_t rtoks, uint64_t staging)
{
	return 3 * (size_t)stoks * a->tb + 3 * (size_t)rtoks * a->tb + (size_t)staging * a->tb + 64;
}

/* What rc_a2a_run checks before it sets up. */
static int run_fits(struct a2a *a, struct rc_err *err)
{
	int rc = rc_a2a_counts_fit(a->o->counts, a->W, a->tb, err);

	if (rc || a->o->algo != RC_A2A_HIER)
		return rc;
	a->L = a->o->ranks_per_node;
	if (a->L < 1 || a->W % a->L)
		return rc_err_set(err, EINVAL, "%d ranks do not split into nodes of %d", a->W, a->L);
	return 0;
}

int rc_a2a_reg_bytes(const struct rc_a2a_opts *o, int world, uint64_t *bytes, struct rc_err *err)
{
	struct a2a a = { .o = o, .W = world, .tb = rc_a2a_token_bytes(o->hidden, o->dtype) };
	size_t shm = 0;
	int rc;

	if (world < 1)
		return rc_err_set(err, EINVAL, "a world of %d ranks", world);
	if ((rc = run_fits(&a, err)))
		return rc;
	if (a2a_line_sums(&a) || staging(&a, -1, bytes)) {
		rc = rc_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	for (int x = 0; x < world; x++) {
		bytes[x] = tokens_len(&a, a.sends[x], a.recvs[x], bytes[x]);
		/* hierarchical: and the node's shared segment (laid out once a node) */
		if (o->algo == RC_A2A_HIER && x % a.L == 0)
			shm = a2a_hier_shm_bytes(&a, x);
		bytes[x] += shm;
	}
out:
	free(a.sends);
	free(a.recvs);
	return rc;
}

/* The token buffers registered on the group's transport: lkey, the rkey
 * peers are told, and (over libfabric) the address a peer names their first
 * byte by. */
static int register_tokens(struct a2a *a, struct rc_err *err)
{
	uint64_t rkey, raddr0;
	int rc;

	if (!rc_group_pd(a->g)) {
		if (a2a_gpu(a) || a->o->algo == RC_A2A_HIER)
			return rc_err_set(err, EOPNOTSUPP,
					  "over libfabric the token buffers are host memory, and the "
					  "algorithm flat or ring");
		rc = rc_group_reg(a->g, a->mem, a->mem_len, true, &a->lkey, &rkey, &raddr0, &a->fmr,
				  err);
		if (rc)
			return rc_err_wrap(err, -rc, "cannot register %zu bytes of token buffers",
					   a->mem_len);
		a->mine.rkey = rkey;
		a->rdelta = raddr0 - (uint64_t)(uintptr_t)a->mem;
		return 0;
	}
	if ((rc = rc_mem_register(&a->m, rc_group_pd(a->g),
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &a->mr, err))) {
		a->mr = NULL;
		return rc_err_wrap(err, -rc, "cannot register %zu bytes of token buffers",
				   a->mem_len);
	}
	a->lkey = a->mr->lkey;
	a->mine.rkey = a->mr->rkey;
	return 0;
}

static int setup(struct a2a *a, struct rc_err *err)
{
	int W = a->W, me = a->me;
	uint64_t stoks, rtoks, *stage;
	size_t sb, rb;
	struct rc_mem_spec spec = a->o->mem;
	int rc;

	a->soff = calloc((size_t)W + 1, sizeof(uint64_t));
	a->roff = calloc((size_t)W + 1, sizeof(uint64_t));
	a->remote = calloc((size_t)W, sizeof(*a->remote));
	a->wait_peers = calloc((size_t)W, sizeof(int));
	a->wait_target = calloc((size_t)W, sizeof(uint64_t));
	a->scratch = malloc(a->tb);
	if (!a->soff || !a->roff || !a->remote || !a->scratch || !a->wait_peers || !a->wait_target)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int j = 0; j < W; j++) {
		a->soff[j + 1] = a->soff[j] + a->o->counts[me * W + j];
		a->roff[j + 1] = a->roff[j] + a->o->counts[j * W + me];
	}
	stoks = a->soff[W];
	rtoks = a->roff[W];
	sb = (size_t)stoks * a->tb;
	rb = (size_t)rtoks * a->tb;
	/* the same sizes rc_a2a_reg_bytes says (--plan) */
	if (!(stage = calloc((size_t)W, sizeof(uint64_t))) || staging(a, me, stage)) {
		free(stage);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	a->mem_len = tokens_len(a, stoks, rtoks, stage[me]);
	free(stage);
	if (spec.kind != RC_MEM_HOST && spec.kind != RC_MEM_HUGEPAGE && spec.kind != RC_MEM_CUDA)
		return rc_err_set(err, EINVAL,
				  "the token buffers are host, hugepage or GPU memory, not %s",
				  rc_mem_kind_name(spec.kind));
	spec.len = a->mem_len;
	spec.path = NULL;
	if ((rc = rc_mem_alloc_spec(&a->m, &spec, true, err)))
		return rc;
	a->mem = a->m.buf;
	if (a2a_gpu(a)) {
		/* The CPU fills and checks a host copy; the GPU's starts zeroed too. */
		if (!(a->mem = rc_mem_host_copy(a->mem_len, "token buffers", err)))
			return -err->code;
		if ((rc = rc_mem_write(&a->m, 0, a->mem, a->mem_len, err)))
			return rc;
	}
	memset(a->mem, 0, a->mem_len);
	a->dsend = a->mem;
	a->crecv[0] = a->dsend + sb;
	a->crecv[1] = a->crecv[0] + sb;
	a->csend = a->crecv[1] + sb;
	a->drecv[0] = a->csend + rb;
	a->drecv[1] = a->drecv[0] + rb;
	a->stage = a->drecv[1] + rb;
	if ((rc = register_tokens(a, err)))
		return rc;
	/* Peers and the work requests get the registered addresses: the
	 * buffers themselves, the GPU's, or the bounce buffer. */
	a->wire_delta = a->fmr ? 0 : a->m.mr_addr - (uint64_t)(uintptr_t)a->mem;
	for (int p = 0; p < 2; p++) {
		a->mine.drecv[p] = (uintptr_t)a2a_wire(a, a->drecv[p]) + a->rdelta;
		a->mine.crecv[p] = (uintptr_t)a2a_wire(a, a->crecv[p]) + a->rdelta;
	}
	a->mine.stage = (uintptr_t)a2a_wire(a, a->stage) + a->rdelta;
	return 0;
}

static void teardown(struct a2a *a)
{
	if (a->mr)
		ibv_dereg_mr(a->mr);
	if (a->fmr)
		rc_group_dereg(a->g, a->fmr);
	if (a2a_gpu(a))
		rc_mem_host_copy_free(a->mem, a->mem_len);
	rc_mem_free(&a->m);
	free(a->soff);
	free(a->sends);
	free(a->recvs);
	free(a->roff);
	free(a->remote);
	free(a->wait_peers);
	free(a->wait_target);
	free(a->scratch);
}

/* Fill what this rank sends in iteration iter (GPU memory: then copy it over). */
static int prepare(struct a2a *a, uint32_t iter, struct rc_err *err)
{
	size_t sb = (size_t)a->soff[a->W] * a->tb, rb = (size_t)a->roff[a->W] * a->tb;
	int rc;

	for (int j = 0; j < a->W; j++) {
		for (uint64_t t = a->soff[j]; t < a->soff[j + 1]; t++)
			rc_a2a_token_fill(a->dsend + t * a->tb, a->tb, a->me, j,
					  t - a->soff[j] + a2a_token_base(a, a->me, j), iter,
					  PH_DISPATCH);
		/* combine: the tokens that came from j go back to j */
		for (uint64_t t = a->roff[j]; t < a->roff[j + 1]; t++)
			rc_a2a_token_fill(a->csend + t * a->tb, a->tb, a->me, j,
					  t - a->roff[j] + a2a_token_base(a, j, a->me), iter,
					  PH_COMBINE);
	}
	if (a->o->corrupt.on && a->o->corrupt.rank == a->me && iter == 0) {
		int ph = a->o->corrupt.phase;
		uint64_t n = ph == PH_DISPATCH ? a->soff[a->W] : a->roff[a->W];

		if (a->o->corrupt.token >= n)
			return rc_err_set(err, EINVAL,
					  "test hook: rank %d sends %llu tokens in %s, not token %llu",
					  a->me, (unsigned long long)n,
					  ph == PH_DISPATCH ? "dispatch" : "combine",
					  (unsigned long long)a->o->corrupt.token);
		(ph == PH_DISPATCH ? a->dsend : a->csend)[a->o->corrupt.token * a->tb] ^= 0x5a;
	}
	if (!a2a_gpu(a))
		return 0;
	return (rc = a2a_copy_in(a, a->dsend, a->dsend, sb, err))
		       ? rc
		       : a2a_copy_in(a, a->csend, a->csend, rb, err);
}

static int check(struct a2a *a, uint32_t iter, struct rc_a2a_result *res, struct rc_err *err)
{
	int p = iter & 1, rc;

	/* GPU memory: the receive buffers back into the host copy first
	 * (hierarchical receives into host shared memory). */
	if (a2a_gpu(a) && a->o->algo != RC_A2A_HIER &&
	    ((rc = a2a_copy_out(a, a->drecv[p], a->drecv[p], (size_t)a->roff[a->W] * a->tb, err)) ||
	     (rc = a2a_copy_out(a, a->crecv[p], a->crecv[p], (size_t)a->soff[a->W] * a->tb, err))))
		return rc;
	for (int j = 0; j < a->W; j++) {
		for (uint64_t t = a->roff[j]; t < a->roff[j + 1]; t++) {
			rc_a2a_token_fill(a->scratch, a->tb, j, a->me,
					  t - a->roff[j] + a2a_token_base(a, j, a->me), iter,
					  PH_DISPATCH);
			res->wrong += memcmp(a->scratch, a->drecv[p] + t * a->tb, a->tb) != 0;
		}
		for (uint64_t t = a->soff[j]; t < a->soff[j + 1]; t++) {
			rc_a2a_token_fill(a->scratch, a->tb, j, a->me,
					  t - a->soff[j] + a2a_token_base(a, a->me, j), iter,
					  PH_COMBINE);
			res->wrong += memcmp(a->scratch, a->crecv[p] + t * a->tb, a->tb) != 0;
		}
		res->checked += (a->roff[j + 1] - a->roff[j]) + (a->soff[j + 1] - a->soff[j]);
	}
	res->checked_bytes = res->checked * a->tb;
	return 0;
}

void rc_a2a_slice_counts(const uint64_t *counts, int world, int slice, int slices, uint64_t *out)
{
	size_t n = (size_t)world * (size_t)world;

	for (size_t k = 0; k < n; k++)
		out[k] = counts[k] * (uint64_t)(slice + 1) / (uint64_t)slices -
			 counts[k] * (uint64_t)slice / (uint64_t)slices;
}

/* o->counts: this slice's; whole: every slice's (NULL: one slice). */
static int run(struct rc_group *g, const struct rc_a2a_opts *o, const uint64_t *whole,
	       struct a2a_sync *sync, struct rc_a2a_result *res, struct rc_err *err);

int a2a_run_sync(struct rc_group *g, const struct rc_a2a_opts *o, struct a2a_sync *sync,
		 struct rc_a2a_result *res, struct rc_err *err)
{
	struct rc_a2a_opts so;
	uint64_t *sliced;
	size_t W = (size_t)rc_group_world(g);
	int rc;

	if (o->slices <= 1)
		return run(g, o, NULL, sync, res, err);
	if (o->slice < 0 || o->slice >= o->slices)
		return rc_err_set(err, EINVAL, "slice %d of %d", o->slice, o->slices);
	if (!(sliced = malloc(W * W * sizeof(uint64_t))))
		return rc_err_set(err, ENOMEM, "out of memory");
	rc_a2a_slice_counts(o->counts, (int)W, o->slice, o->slices, sliced);
	so = *o;
	so.counts = sliced;
	rc = run(g, &so, o->counts, sync, res, err);
	free(sliced);
	return rc;
}

typedef int (*phase_fn)(struct a2a *a, uint32_t iter, int ph, struct rc_err *err);

/* One iteration's dispatch and combine, each timed; a timed one's times
 * into res at idx (< 0: a warmup's), the idle ones' (idx below iters)
 * into lat_us and seconds too. */
static int iteration(struct a2a *a, uint32_t iter, int idx, struct rc_a2a_result *res,
		     struct rc_err *err)
{
	phase_fn fn = a->o->algo == RC_A2A_RING   ? a2a_ring_phase
		      : a->o->algo == RC_A2A_HIER ? a2a_hier_phase
						  : a2a_flat_phase;
	double dt[2];
	int rc;

	for (int ph = PH_DISPATCH; ph <= PH_COMBINE; ph++) {
		double t0 = rc_now();

		if ((rc = fn(a, iter, ph, err)))
			return rc;
		dt[ph] = rc_now() - t0;
	}
	if (idx < 0)
		return 0;
	if (idx < a->o->iters) {
		res->seconds += dt[0] + dt[1];
		if (res->lat_us)
			res->lat_us[idx] = (dt[0] + dt[1]) * 1e6;
	}
	if (res->disp_us)
		res->disp_us[idx] = dt[PH_DISPATCH] * 1e6;
	if (res->comb_us)
		res->comb_us[idx] = dt[PH_COMBINE] * 1e6;
	return 0;
}

/* The iterations of pass (0 idle, 1 under the background), warmup first,
 * numbered on from the previous pass's so that the buffers' parity and
 * the immediate counters go on. */
static int pass(struct a2a *a, int pass, struct rc_a2a_result *res, struct rc_err *err)
{
	const struct rc_a2a_opts *o = a->o;
	int rc = 0, total = o->warmup + o->iters, passes = o->bg ? 2 : 1;

	for (int i = 0; !rc && i < total; i++) {
		uint32_t iter = (uint32_t)(pass * total + i);

		/* the previous iteration's writes left the send buffers */
		if ((rc = rc_group_flush(a->g, err)) || (rc = prepare(a, iter, err)))
			break;
		if (a->sync && (rc = a2a_sync_wait(a->sync, err)))
			break;
		rc = iteration(a, iter, i >= o->warmup ? pass * o->iters + i - o->warmup : -1, res,
			       err);
		if (!rc && o->check)
			rc = check(a, iter, res, err);
		if (!rc && o->progress)
			o->progress(o->progress_arg, pass * total + i + 1, passes * total);
	}
	return rc;
}

/* The passes: idle, then (a background) the same under it, every rank's
 * background started once all are done idle and stopped before any
 * rank's buffers go; its port's congestion counters read around each. */
static int passes(struct a2a *a, struct rc_a2a_result *res, struct rc_err *err)
{
	struct a2a_bg b = { 0 };
	struct rc_cong c[3];
	const char *dev = rc_group_dev(a->g);
	int port = rc_group_port(a->g), rc = 0, rs;

	memset(c, 0, sizeof(c));
	if (a->o->bg) {
		snprintf(res->bg_dev, sizeof(res->bg_dev), "%s", dev ? dev : "");
		res->bg_port = port;
		rc_cong_read(NULL, dev, port, &c[0]);
		rc = a2a_bg_setup(&b, a->o, err);
	}
	if (!rc)
		rc = pass(a, 0, res, err);
	if (rc || !a->o->bg)
		goto out;
	rc_cong_read(NULL, dev, port, &c[1]);
	rc_cong_moved(&c[0], &c[1], &res->bg_cong_idle);
	if ((rc = rc_group_flush(a->g, err)) || (rc = rc_group_barrier(a->g, err)) ||
	    (rc = a2a_bg_start(&b, err)))
		goto out;
	rc = pass(a, 1, res, err);
	rs = a2a_bg_stop(&b, rc ? NULL : err);
	rc = rc ? rc : rs;
	rc_cong_read(NULL, dev, port, &c[2]);
	rc_cong_moved(&c[1], &c[2], &res->bg_cong_loaded);
	res->bg_bytes = b.bytes;
	res->bg_seconds = b.seconds;
	if (!rc)
		rc = rc_group_barrier(a->g, err);
out:
	a2a_bg_stop(&b, NULL);
	a2a_bg_free(&b);
	return rc;
}

static int run(struct rc_group *g, const struct rc_a2a_opts *o, const uint64_t *whole,
	       struct a2a_sync *sync, struct rc_a2a_result *res, struct rc_err *err)
{
	struct a2a a = { .g = g, .o = o, .sync = sync, .m = { .fd = -1, .dmabuf_fd = -1 } };
	int rc;
	struct rc_err own = { 0 };

	if (!err) /* the run tells the group why it stops (rc_group_abort) */
		err = &own;
	if (whole) {
		a.whole = whole;
		a.slice = o->slice;
		a.slices = o->slices;
	}
	a.W = rc_group_world(g);
	a.me = rc_group_rank(g);
	a.tb = rc_a2a_token_bytes(o->hidden, o->dtype);
	res->wrong = res->checked = res->checked_bytes = 0;
	res->seconds = 0;
	res->bg_bytes = 0;
	res->bg_seconds = 0;
	res->bg_dev[0] = '\0';
	res->bg_port = 0;
	res->bg_cong_idle = res->bg_cong_loaded = (struct rc_cong){ 0 };
	res->reg = RC_REG_AUTO;
	res->reg_notes[0] = '\0';
	if ((rc = run_fits(&a, err)))
		return rc;
	rc = setup(&a, err);
	if (a.mr) {
		res->reg = a.m.reg;
		snprintf(res->reg_notes, sizeof(res->reg_notes), "%s", a.m.reg_notes);
	}
	if (!rc && o->algo == RC_A2A_HIER)
		rc = a2a_hier_setup(&a, err);
	/* the peers learn where to write (hierarchical: the shared segment too) */
	if (!rc)
		rc = rc_group_exchange(g, &a.mine, sizeof(a.mine), a.remote, err);
	if (!rc)
		rc = rc_group_barrier(g, err);
	if (!rc)
		rc = passes(&a, res, err);
	if (!rc)
		rc = rc_group_flush(g, err);
	/* the others hear why before this rank's memory goes: a write to it
	 * that fails then does not hide the first cause */
	if (rc)
		rc_group_abort_err(g, err, NULL);
	if (o->algo == RC_A2A_HIER)
		a2a_hier_teardown(&a);
	teardown(&a);
	return rc;
}
