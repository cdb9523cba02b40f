// SPDX-License-Identifier: MIT
/* What a clock read costs (rc_clock_cost, libcore/verbs/clock.c), taken off
 * every latency sample: more than nothing, less than a millisecond, and no
 * more than what reads back to back take on average. */
#include "check.h"

#include <rdmactl/ops.h>

int main(void)
{
	double cost = rc_clock_cost(), t0, t1;

	CHECK(cost > 0);
	CHECK(cost < 1e-3);
	/* 4096 reads one after another: each gap holds a read's cost, so their
	 * mean is at least the median gap of a quiet moment, up to noise (half). */
	t0 = rc_now();
	t1 = t0;
	for (int i = 0; i < 4096; i++)
		t1 = rc_now();
	CHECK((t1 - t0) / 4096 >= cost / 2);
	CHECK_DONE();
}
