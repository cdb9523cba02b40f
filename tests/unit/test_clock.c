// SPDX-License-Identifier: MIT
/* What a clock read costs (rc_clock_cost, libcore/verbs/lat_clock.c), taken off
 * every latency sample: more than nothing, less than a millisecond, and no
 * more than what reads back to back take on average. The latency clock
 * (libcore/verbs/lat_clock.c): each kind times 20 ms as CLOCK_MONOTONIC does,
 * the TSC where it is offered, and a sample whose two readings came from two
 * CPUs is left out (NaN), not taken as it reads. */
#include "check.h"

#include <errno.h>
#include <math.h>
#include <time.h>

#include <rdmactl/ops.h>
#include <rdmactl/ops_core.h>

/* c times a 20 ms sleep within 5% (2 ms) of CLOCK_MONOTONIC. */
static int times_right(const struct rc_lat_clk *c)
{
	struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };

	for (int tries = 0; tries < 5; tries++) {
		double m0 = rc_now();
		struct rc_stamp a = rc_lat_stamp(c);

		nanosleep(&ts, NULL);
		struct rc_stamp b = rc_lat_stamp(c);
		double m = rc_now() - m0, d = rc_lat_span(c, a, b);

		if (!isnan(d)) /* else the thread moved: again */
			return fabs(d - m) < 0.002;
	}
	return 0;
}

static void lat_clocks(void)
{
	struct rc_lat_clk c;
	struct rc_err e;

	CHECK(rc_lat_clk_init(&c, RC_LAT_CLOCK_MONOTONIC, &e) == 0);
	CHECK(c.kind == RC_LAT_CLOCK_MONOTONIC);
	CHECK(c.hz == 1e9);
	CHECK(c.cost > 0 && c.cost < 1e-3);
	CHECK(times_right(&c));
	/* the same CPU or not, a monotonic reading is one clock */
	CHECK(!isnan(rc_lat_span(&c, (struct rc_stamp){ 10, 0 }, (struct rc_stamp){ 20, 1 })));

	CHECK(rc_lat_clk_init(&c, RC_LAT_CLOCK_AUTO, &e) == 0);
	CHECK(c.kind == RC_LAT_CLOCK_TSC || c.kind == RC_LAT_CLOCK_MONOTONIC);
	CHECK(c.cost > 0 && c.cost < 1e-3);
	CHECK(times_right(&c));
	if (rc_lat_clk_init(&c, RC_LAT_CLOCK_TSC, &e) == 0) {
		CHECK(c.kind == RC_LAT_CLOCK_TSC);
		CHECK(c.hz > 1e8);
		CHECK(times_right(&c));
		/* two CPUs, or one reading that straddled two: left out */
		CHECK(isnan(rc_lat_span(&c, (struct rc_stamp){ 10, 0 }, (struct rc_stamp){ 20, 1 })));
		CHECK(isnan(rc_lat_span(&c, (struct rc_stamp){ 10, RC_STAMP_NOCPU },
					(struct rc_stamp){ 20, RC_STAMP_NOCPU })));
		/* one CPU: ticks over the rate, less the cost, never below 0 */
		CHECK(rc_lat_span(&c, (struct rc_stamp){ 10, 3 }, (struct rc_stamp){ 10, 3 }) == 0);
	} else {
		CHECK(e.code == ENOTSUP);
		CHECK(strstr(e.msg, "time-stamp counter") != NULL);
	}
}

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
	lat_clocks();
	CHECK_DONE();
}
