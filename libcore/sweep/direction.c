// SPDX-License-Identifier: MIT
/*
 * What the idle rounds (sweep.c), --load (load.c) and --incast (incast.c)
 * do to one peer: say where the sweep is, wait for the one-sided operations
 * done to it, time one 8-byte WRITE or READ. They call nothing of theirs
 * back, so the passes stand on these and on each other one way.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/group_core.h>
#include <rdmactl/sweep_core.h>

#include "sweep_int.h"

void sweep_say(struct sweep *s, int peer, const char *what)
{
	if (s->o->progress)
		s->o->progress(s->o->progress_arg, s->round, s->rounds, peer, what);
}

/* Until the one-sided operations done to peer reach target; the deadline
 * moves with every completion. */
int sweep_wait_done(struct sweep *s, int peer, uint64_t target, struct rc_err *err)
{
	double deadline = rc_now() + s->timeout_ms / 1000.0;
	uint64_t seen = rc_group_writes_done(s->g, peer);

	while (seen < target) {
		int rc = rc_group_poll(s->g, 100, err);
		uint64_t now_done = rc_group_writes_done(s->g, peer);

		if (rc)
			return rc;
		if (now_done != seen) {
			seen = now_done;
			deadline = rc_now() + s->timeout_ms / 1000.0;
		} else if (rc_now() > deadline) {
			return rc_err_set(
				err, ETIMEDOUT,
				"rank %d: %llu operations to rank %d did not complete within %d ms",
				s->me, (unsigned long long)(target - seen), peer, s->timeout_ms);
		}
	}
	return 0;
}

int sweep_lat_one(struct sweep *s, int peer, bool read, double *us, struct rc_err *err)
{
	uint64_t base = rc_group_writes_done(s->g, peer);
	struct rc_stamp t0 = rc_lat_stamp(&s->clk);
	int rc = read ? rc_group_read(s->g, peer, s->mem.buf, LAT_BYTES, s->mr->lkey,
				      s->theirs[peer].addr, s->theirs[peer].rkey, err)
		      : rc_group_write_imm(s->g, peer, s->mem.buf, LAT_BYTES, s->mr->lkey,
					   s->theirs[peer].addr, s->theirs[peer].rkey, -1, 0, err);

	if (rc || (rc = sweep_wait_done(s, peer, base + 1, err)))
		return rc;
	*us = rc_lat_span(&s->clk, t0, rc_lat_stamp(&s->clk)) * 1e6;
	return 0;
}

/* 8-byte operations one at a time, post to completion, less a clock
 * reading's cost (a microsecond where each reading is a system call). The
 * wait sleeps, so a sample's two readings may come from two CPUs: the
 * monotonic clock, not write --lat's time-stamp counter. With cdf the
 * distribution is kept too, bounded (rc_sweep_cdf_of). */
int sweep_time_lat(struct sweep *s, int peer, bool read, int n, struct rc_sweep_tail *t,
		   struct rc_sweep_cdf *cdf, struct rc_err *err)
{
	int rc;

	for (int k = -LAT_WARMUP; k < n; k++) {
		double us;

		if ((rc = sweep_lat_one(s, peer, read, &us, err)))
			return rc;
		if (k >= 0)
			s->lat[k] = us;
	}
	rc_sweep_tail_of(s->lat, n, t);
	if (cdf)
		rc_sweep_cdf_of(s->lat, n, cdf);
	return 0;
}
