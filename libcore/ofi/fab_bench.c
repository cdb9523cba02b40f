// SPDX-License-Identifier: MIT
/* write, read and atomic --bench / --lat over libfabric (rdmactl/fabric.h,
 * rc_fcli_bench): the one engine over the libfabric transport (fab_stream),
 * as write --bench runs it over verbs: a window of depth operations, each
 * completing, from one local buffer to the same remote offset. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_dl.h" /* before libfabric's headers */

#include <rdmactl/ops_core.h>

#include "fab_int.h"

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

int rc_fcli_bench(struct rc_fcli *c, const struct rc_fcli_bench *b, struct rc_stream_result *res,
		  struct rc_err *err)
{
	static const enum rc_op op[] = { [RC_FBENCH_WRITE] = RC_OP_WRITE,
					 [RC_FBENCH_READ] = RC_OP_READ,
					 [RC_FBENCH_FAA] = RC_OP_FAA,
					 [RC_FBENCH_CAS] = RC_OP_CAS };
	size_t len = (b->msg + 4095) & ~(size_t)4095;
	struct rc_ofi_mr mr;
	void *buf;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = bench_check(c, b, err)))
		return rc;
	if (!(buf = aligned_alloc(4096, len)))
		return rc_err_set(err, ENOMEM, "out of memory for the benchmark's buffer");
	memset(buf, 0xa5, len);
	if (!(rc = rc_ofi_reg(&c->o, buf, len, RC_OFI_LOCAL, &mr, err))) {
		/* perftest's shape: every operation from one buffer to one span */
		struct rc_stream s = { .op = op[b->op],
				       .buf = buf,
				       .chunk = b->msg,
				       .depth = b->depth,
				       .total = b->msg,
				       .iters = b->iters,
				       .compare_add = b->compare_add,
				       .swap = b->swap,
				       .timeout_ms =
					       b->timeout_ms > 0 ? b->timeout_ms : c->timeout_ms,
				       .lat_us = b->lat_us,
				       .posted_s = b->posted_s,
				       .completed_s = b->completed_s,
				       .lat_clock = b->lat_clock,
				       .one_buffer = true };

		rc = fab_stream(c, &s, &mr, b->off, res, err);
		rc_ofi_dereg(&mr);
	}
	free(buf);
	return rc;
}
