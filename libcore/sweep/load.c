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

/* sweep_bulk's latencies, from the engine's notes: a write is posted when
 * the burst finds room for it (the write depth before it done: when its
 * note came) and done at the note that counts it. */
struct bulk_lat {
	double t0;
	double *done_at; /* done_at[d % depth]: when d writes were seen done */
	uint64_t depth, seen;
	double *lat;
	int cap, *nlat;
};

static void bulk_seen(struct bulk_lat *b, uint64_t done, double now)
{
	for (; b->seen < done; b->seen++) {
		uint64_t w = b->seen; /* write w is done: w + 1 are */
		double sent_at = w < b->depth ? b->t0 : b->done_at[(w + 1) % b->depth];

		if (b->lat && *b->nlat < b->cap)
			b->lat[(*b->nlat)++] = (now - sent_at) * 1e6;
		b->done_at[(w + 1) % b->depth] = now;
	}
}

static void bulk_note(void *arg, uint64_t done, double now)
{
	bulk_seen(arg, done, now);
}

int sweep_bulk(struct sweep *s, int peer, double seconds, double *lat, int cap, int *nlat,
	       uint64_t *bytes, struct rc_err *err)
{
	const struct rc_sweep_opts *o = s->o;
	double t0 = rc_now();
	struct bulk_lat bl = { .t0 = t0,
			       .done_at = calloc((size_t)o->depth, sizeof(double)),
			       .depth = (uint64_t)o->depth,
			       .lat = lat,
			       .cap = cap,
			       .nlat = nlat };
	/* The engine's pipeline, every write signalled: each one seen done. */
	struct rc_group_burst b = { .laddr = s->mem.buf,
				    .len = (uint32_t)o->msg_size,
				    .lkey = s->mr->lkey,
				    .raddr = s->theirs[peer].addr,
				    .rkey = s->theirs[peer].rkey,
				    .until = t0 + seconds,
				    .depth = o->depth,
				    .signal_every = 1,
				    .note = bulk_note,
				    .note_arg = &bl };
	uint64_t posted = 0;
	int rc;

	if (!bl.done_at)
		return rc_err_set(err, ENOMEM, "out of memory");
	rc = rc_group_write_burst(s->g, peer, &b, &posted, err);
	if (!rc) /* the last ones, done as the burst drained */
		bulk_seen(&bl, posted, rc_now());
	*bytes = posted * o->msg_size;
	free(bl.done_at);
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
