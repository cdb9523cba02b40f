// SPDX-License-Identifier: MIT
/*
 * sweep --load: after the idle rounds, each direction's 8-byte WRITE and
 * READ latency timed again while background bulk WRITEs run (who writes
 * where: rc_sweep_load_target), one direction at a time so that the only
 * load is the one asked for. The loaders write for the duration; the
 * measuring rank lets the load build up for a fifth of it, then alternates
 * WRITE and READ samples until it has lat_iters of each or nine tenths of
 * the duration have passed, so that every sample is taken under load.
 * Each rank reads its port's congestion counters around the whole pass.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/group_core.h>
#include <rdmactl/sweep_core.h>

#include "sweep_int.h"

#define LOAD_RAMP 0.2 /* of the duration: the load builds up */
#define LOAD_STOP 0.9 /* of the duration: the last sample starts before */

int sweep_bulk(struct sweep *s, int peer, double seconds, double *lat, int cap, int *nlat,
	       uint64_t *bytes, struct rc_err *err)
{
	const struct rc_sweep_opts *o = s->o;
	uint64_t base = rc_group_writes_done(s->g, peer), posted = 0, seen = 0;
	double end = rc_now() + seconds, *t_post = calloc((size_t)o->depth, sizeof(double));
	int rc = 0;

	if (!t_post)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (;;) {
		bool more = rc_now() < end;
		uint64_t done = rc_group_writes_done(s->g, peer) - base;

		/* completions come in order: each one's post time is known */
		for (double now = rc_now(); seen < done; seen++)
			if (lat && *nlat < cap)
				lat[(*nlat)++] = (now - t_post[seen % (uint64_t)o->depth]) * 1e6;
		if (more && posted - done < (uint64_t)o->depth) {
			t_post[posted % (uint64_t)o->depth] = rc_now();
			rc = rc_group_write_imm(s->g, peer, s->mem.buf, o->msg_size, s->mr->lkey,
						s->theirs[peer].addr, s->theirs[peer].rkey, -1, 0,
						err);
			if (rc)
				break;
			posted++;
			continue;
		}
		if (!more)
			break;
		if ((rc = sweep_wait_done(s, peer, base + done + 1, err)))
			break;
	}
	if (!rc && !(rc = sweep_wait_done(s, peer, base + posted, err)))
		for (double now = rc_now(); seen < posted; seen++)
			if (lat && *nlat < cap)
				lat[(*nlat)++] = (now - t_post[seen % (uint64_t)o->depth]) * 1e6;
	*bytes = posted * o->msg_size;
	free(t_post);
	return rc;
}

/* The measuring rank's part: WRITE and READ samples in turn, under load. */
static int loaded_lat(struct sweep *s, int peer, double t0, double *w, double *r, struct rc_err *err)
{
	struct rc_sweep_cell *c = &s->row[peer];
	double D = s->o->duration_s;
	int n = 0, rc;

	while (rc_now() < t0 + LOAD_RAMP * D)
		usleep(1000);
	while (n < s->o->lat_iters && rc_now() < t0 + LOAD_STOP * D) {
		if ((rc = sweep_lat_one(s, peer, false, &w[n], err)) ||
		    (rc = sweep_lat_one(s, peer, true, &r[n], err)))
			return rc;
		n++;
	}
	rc_sweep_tail_of(w, n, &c->wload);
	rc_sweep_tail_of(r, n, &c->rload);
	if (s->cdf) {
		rc_sweep_cdf_of(w, n, sweep_cdf(s, peer, RC_SWEEP_CDF_WRITE_LOAD));
		rc_sweep_cdf_of(r, n, sweep_cdf(s, peer, RC_SWEEP_CDF_READ_LOAD));
	}
	return 0;
}

/* One loaded phase: a times its latency to b, the others load as the mode
 * says; the group's barrier around it. */
static int loaded_phase(struct sweep *s, int a, int b, double *w, double *r, struct rc_err *err)
{
	int target = rc_sweep_load_target(s->o->load, s->world, s->round, s->me, a, b), rc;
	double t0;
	uint64_t bytes;

	if ((rc = rc_group_barrier(s->g, err)))
		return rc;
	t0 = rc_now();
	if (s->me == a && rc_group_link(s->g, b, NULL) == RC_LINK_UP) {
		sweep_say(s, b, "latency under load");
		rc = loaded_lat(s, b, t0, w, r, err);
	} else if (target >= 0 && rc_group_link(s->g, target, NULL) == RC_LINK_UP) {
		sweep_say(s, target, "background load");
		rc = sweep_bulk(s, target, s->o->duration_s, NULL, 0, NULL, &bytes, err);
	}
	if (rc)
		return rc;
	return rc_group_barrier(s->g, err);
}

static bool wanted_pair(const struct sweep *s, int a, int b)
{
	return !s->o->want || s->o->want[(size_t)a * (size_t)s->world + (size_t)b];
}

int sweep_load_pass(struct sweep *s, struct rc_err *err)
{
	double *w = calloc((size_t)s->o->lat_iters, sizeof(double)),
	       *r = calloc((size_t)s->o->lat_iters, sizeof(double));
	struct rc_cong before, after;
	int rc = 0;

	if (!w || !r) {
		free(w);
		free(r);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	rc_cong_read(s->o->sysfs, rc_group_dev(s->g), rc_group_port(s->g), &before);
	/* every rank walks the same directions in the same order */
	for (s->round = 0; !rc && s->round < s->rounds; s->round++)
		for (int i = 0; !rc && i < s->world; i++) {
			int p = rc_sweep_partner(s->world, s->round, i);

			if (p < i || !wanted_pair(s, i, p))
				continue;
			if (!(rc = loaded_phase(s, i, p, w, r, err)))
				rc = loaded_phase(s, p, i, w, r, err);
		}
	rc_cong_read(s->o->sysfs, rc_group_dev(s->g), rc_group_port(s->g), &after);
	rc_cong_moved(&before, &after, &s->cong);
	free(w);
	free(r);
	return rc;
}
