// SPDX-License-Identifier: MIT
/* write, read and atomic --bench / --lat over libfabric (rdmactl/fabric.h,
 * rc_fcli_bench): the one engine (rc_stream_run, verbs/ops_core.h) over the
 * libfabric transport (tp_ofi.c), as write --bench runs it over verbs: a
 * window of depth operations, each completing, from one local buffer to the
 * same remote offset. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_dl.h" /* before libfabric's headers */

#include "fab_int.h"
#include "tp_ofi.h"

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

struct bench_mem {
	unsigned char *buf;
	struct rc_ofi_mr mr;
	struct rc_ofi_tp t;
};

/* The engine's stream of b: perftest's shape, one buffer, every operation
 * completing (libfabric completes each: signal every 1). */
static struct rc_stream bench_stream(struct rc_fcli *c, const struct rc_fcli_bench *b,
				     struct bench_mem *m, void *const *ep)
{
	static const enum rc_op op[] = { [RC_FBENCH_WRITE] = RC_OP_WRITE,
					 [RC_FBENCH_READ] = RC_OP_READ,
					 [RC_FBENCH_FAA] = RC_OP_FAA,
					 [RC_FBENCH_CAS] = RC_OP_CAS };

	return (struct rc_stream){ .op = op[b->op],
				   .nconns = 1,
				   .tp = &rc_ofi_transport,
				   .eps = ep,
				   .buf = m->buf,
				   .lkey = rc_ofi_tp_key(&m->t, &m->mr),
				   .chunk = b->msg,
				   .depth = b->depth,
				   .batch = 1,
				   .signal_every = 1,
				   .raddr = c->region.base + b->off,
				   .rkey = c->region.key,
				   .total = b->msg,
				   .iters = b->iters,
				   .compare_add = b->compare_add,
				   .swap = b->swap,
				   .timeout_ms = b->timeout_ms > 0 ? b->timeout_ms : c->timeout_ms,
				   .lat_us = b->lat_us,
				   .posted_s = b->posted_s,
				   .completed_s = b->completed_s,
				   .lat_clock = b->lat_clock,
				   .one_buffer = true };
}

int rc_fcli_bench(struct rc_fcli *c, const struct rc_fcli_bench *b, struct rc_stream_result *res,
		  struct rc_err *err)
{
	size_t len = (b->msg + 4095) & ~(size_t)4095;
	struct bench_mem m = { 0 };
	char who[sizeof(c->region.name) + 16];
	void *ep = &m.t;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = bench_check(c, b, err)))
		return rc;
	if (!(m.buf = aligned_alloc(4096, len)))
		return rc_err_set(err, ENOMEM, "out of memory for the benchmark's buffer");
	memset(m.buf, 0xa5, len);
	if ((rc = rc_ofi_reg(&c->o, m.buf, len, RC_OFI_LOCAL, &m.mr, err)))
		goto out;
	snprintf(who, sizeof(who), "region '%s'", c->region.name);
	if (!(rc = rc_ofi_tp_init(&m.t, &c->o, c->peer, who, b->depth, b->timeout_ms, err))) {
		struct rc_stream s = bench_stream(c, b, &m, &ep);

		rc = rc_stream_run(&s, res, err);
		rc_ofi_tp_quiesce(&m.t, 500); /* a failed run's operations still in flight */
		rc_ofi_tp_fini(&m.t);
	}
	rc_ofi_dereg(&m.mr);
out:
	free(m.buf);
	return rc;
}
