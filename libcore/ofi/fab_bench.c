// SPDX-License-Identifier: MIT
/* write, read and atomic --bench / --lat over libfabric (rdmactl/fabric.h,
 * rc_fcli_bench): a window of depth operations, each completing, from one
 * local buffer to the same remote offset, completions busy-polled. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_dl.h" /* before libfabric's headers */

#include "fab_int.h"

#define ATOMIC_WORDS 3 /* rc_ofi_atomic's: the old value, the operand, the compare */

/* What b asks of the region and the endpoint, checked before anything is
 * allocated: the span in bounds, the access, the size. */
static int bench_check(const struct rc_fcli *c, const struct rc_fcli_bench *b, struct rc_err *err)
{
	bool atomic = b->op == RC_FBENCH_FAA || b->op == RC_FBENCH_CAS;
	int need = b->op == RC_FBENCH_WRITE ? 2 : b->op == RC_FBENCH_READ ? 1 : 4, rc;

	if (b->op < RC_FBENCH_WRITE || b->op > RC_FBENCH_CAS || !b->msg || b->depth < 1 ||
	    !b->iters || (atomic && b->msg != 8) || (b->lat_us && b->depth != 1))
		return rc_err_set(err, EINVAL,
				  "a benchmark over libfabric needs an operation, a "
				  "size (8 for atomics), iterations and a depth (1 "
				  "for latencies)");
	if (atomic && b->off % 8)
		return rc_err_set(err, EINVAL, "an atomic's offset is a multiple of 8, not %llu",
				  (unsigned long long)b->off);
	if ((rc = rc_fcli_check(c, b->off, b->msg, need, err)))
		return rc;
	if (b->msg > c->o.max_msg)
		return rc_err_set(err, EMSGSIZE,
				  "%zu bytes is above the largest transfer of libfabric's '%s' (%zu)",
				  b->msg, c->o.prov_name, c->o.max_msg);
	return 0;
}

struct bench_run {
	struct rc_fcli *c;
	const struct rc_fcli_bench *b;
	unsigned char *buf;
	struct rc_ofi_mr mr;
	int *free_slots, nfree;
	uint64_t *seq;   /* a slot's operation */
	double *started; /* a slot's post time */
};

static int post_one(struct bench_run *r, int slot, struct rc_err *err)
{
	const struct rc_fcli_bench *b = r->b;
	struct rc_fcli *c = r->c;
	uint64_t raddr = c->region.base + b->off;
	void *ctx = (void *)(uintptr_t)(FAB_ID_BENCH + slot);
	uint64_t *w = (uint64_t *)(void *)(r->buf + (size_t)slot * ATOMIC_WORDS * 8);

	switch (b->op) {
	case RC_FBENCH_WRITE:
		return rc_ofi_write(&c->o, c->peer, r->buf, b->msg, &r->mr, raddr, c->region.key,
				    NULL, ctx, err);
	case RC_FBENCH_READ:
		return rc_ofi_read(&c->o, c->peer, r->buf, b->msg, &r->mr, raddr, c->region.key,
				   ctx, err);
	case RC_FBENCH_FAA:
		return rc_ofi_atomic(&c->o, c->peer, b->compare_add, NULL, w, &r->mr, raddr,
				     c->region.key, ctx, err);
	default:
		return rc_ofi_atomic(&c->o, c->peer, b->swap, &b->compare_add, w, &r->mr, raddr,
				     c->region.key, ctx, err);
	}
}

/* The completions there are: each frees its slot and is timed. */
static int reap(struct bench_run *r, uint64_t *done, struct rc_err *err)
{
	const struct rc_fcli_bench *b = r->b;
	struct rc_ofi_wc wc[16];
	int n = rc_ofi_poll(&r->c->o, wc, 16, 0, err);

	for (int i = 0; i < n; i++) {
		uintptr_t slot = (uintptr_t)wc[i].ctx - FAB_ID_BENCH;
		double t = fab_now();

		if (wc[i].err)
			return rc_err_set(err, wc[i].err, "a benchmark operation failed (%s): %s",
					  r->c->o.prov_name,
					  wc[i].why[0] ? wc[i].why : strerror(wc[i].err));
		if ((uintptr_t)wc[i].ctx < FAB_ID_BENCH || slot >= (uintptr_t)b->depth)
			continue; /* not ours: the control plane's */
		if (b->completed_s)
			b->completed_s[r->seq[slot]] = t;
		if (b->lat_us)
			b->lat_us[r->seq[slot]] = (t - r->started[slot]) * 1e6;
		r->free_slots[r->nfree++] = (int)slot;
		(*done)++;
	}
	return n < 0 ? n : 0;
}

static int bench_loop(struct bench_run *r, uint64_t *ops, struct rc_err *err)
{
	const struct rc_fcli_bench *b = r->b;
	double quiet_since = fab_now();
	uint64_t posted = 0, before;
	int rc;

	while (*ops < b->iters) {
		while (posted < b->iters && r->nfree) {
			int slot = r->free_slots[--r->nfree];
			double t = fab_now();

			r->seq[slot] = posted;
			r->started[slot] = t;
			if (b->posted_s)
				b->posted_s[posted] = t;
			if ((rc = post_one(r, slot, err)))
				return rc;
			posted++;
		}
		before = *ops;
		if ((rc = reap(r, ops, err)))
			return rc;
		if (*ops > before)
			quiet_since = fab_now();
		else if (fab_now() - quiet_since > b->timeout_ms / 1e3)
			return rc_err_set(err, ETIMEDOUT,
					  "no benchmark operation completed in %d ms (%s; %llu of "
					  "%llu done)",
					  b->timeout_ms, r->c->o.prov_name,
					  (unsigned long long)*ops, (unsigned long long)b->iters);
	}
	return 0;
}

int rc_fcli_bench(struct rc_fcli *c, const struct rc_fcli_bench *b, uint64_t *ops, double *seconds,
		  struct rc_err *err)
{
	size_t words = (size_t)b->depth * ATOMIC_WORDS * 8;
	size_t len = b->msg > words ? b->msg : words;
	struct bench_run r = { .c = c, .b = b };
	double t0;
	int rc;

	*ops = 0;
	*seconds = 0;
	if ((rc = bench_check(c, b, err)))
		return rc;
	len = (len + 4095) & ~(size_t)4095;
	r.buf = aligned_alloc(4096, len);
	r.free_slots = calloc((size_t)b->depth, sizeof(int));
	r.seq = calloc((size_t)b->depth, sizeof(uint64_t));
	r.started = calloc((size_t)b->depth, sizeof(double));
	if (!r.buf || !r.free_slots || !r.seq || !r.started) {
		rc = rc_err_set(err, ENOMEM, "out of memory for the benchmark's buffer");
		goto out;
	}
	memset(r.buf, 0xa5, len);
	if ((rc = rc_ofi_reg(&c->o, r.buf, len, RC_OFI_LOCAL, &r.mr, err)))
		goto out;
	for (int i = b->depth - 1; i >= 0; i--)
		r.free_slots[r.nfree++] = i;
	t0 = fab_now();
	rc = bench_loop(&r, ops, err);
	*seconds = fab_now() - t0;
	if (rc) /* what is in flight completes into the buffer: wait a little */
		for (double end = fab_now() + 0.5; r.nfree < b->depth && fab_now() < end;)
			if (reap(&r, ops, &(struct rc_err){ 0 }))
				break;
	rc_ofi_dereg(&r.mr);
out:
	free(r.buf);
	free(r.free_slots);
	free(r.seq);
	free(r.started);
	return rc;
}
