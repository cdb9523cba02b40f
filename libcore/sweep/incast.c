// SPDX-License-Identifier: MIT
/*
 * Incast: N senders write into one receiver at once, N = 1, 2, 4, ... and
 * then all, after a warm-up of every sender for a quarter of the duration;
 * each sender streams WRITEs of msg_size (depth outstanding) for
 * the duration and times each one, post to completion. Per step rank 0
 * gathers every sender's bytes, time and latency tail and makes the
 * receiver's goodput, Jain's index over the senders' bytes, the spread of
 * their completion times and the slowest sender's tail. Each rank reads
 * its port's congestion counters around the whole run.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/group_core.h>
#include <rdmactl/sweep_core.h>

#include "sweep_int.h"

#define INCAST_SAMPLES (1 << 16) /* WRITEs timed per sender and step, the first */
#define INCAST_WARM 0.25         /* of the duration: the warm-up before the steps */

/* This rank's part of a step: send when it is among the first n others. */
static int send_part(struct sweep *s, int receiver, int n, double *lat,
		     struct rc_incast_sender *mine, struct rc_err *err)
{
	int idx = s->me < receiver ? s->me : s->me - 1, nlat = 0, rc;
	double t0 = rc_now();

	*mine = (struct rc_incast_sender){ 0 };
	if (s->me == receiver || idx >= n)
		return 0;
	if (rc_group_link(s->g, receiver, NULL) != RC_LINK_UP) {
		mine->status = -ENOTCONN;
		return 0;
	}
	sweep_say(s, receiver, "incast");
	rc = sweep_bulk(s, receiver, s->o->duration_s, lat, INCAST_SAMPLES, &nlat, &mine->bytes,
			err);
	mine->seconds = rc_now() - t0;
	rc_sweep_tail_of(lat, nlat, &mine->lat);
	rc_sweep_cdf_of(lat, nlat, &mine->cdf);
	return rc;
}

static int warm_up(struct sweep *s, int receiver, struct rc_err *err)
{
	uint64_t bytes;

	if (s->me == receiver || rc_group_link(s->g, receiver, NULL) != RC_LINK_UP)
		return 0;
	return sweep_bulk(s, receiver, s->o->duration_s * INCAST_WARM, NULL, 0, NULL, &bytes, err);
}

/* Rank 0: the step's figures from what its senders sent. */
static void step_figures(struct rc_incast_step *st, int world, int receiver)
{
	double share[RC_GROUP_MAX], longest = 0, first = INFINITY, last = 0, bytes = 0;
	int n = 0;

	st->lat = (struct rc_sweep_tail){ 0 };
	st->slowest = -1;
	for (int r = 0; r < world; r++) {
		const struct rc_incast_sender *w = &st->who[r];
		int idx = r < receiver ? r : r - 1;

		if (r == receiver || idx >= st->senders || w->status)
			continue;
		share[n++] = (double)w->bytes;
		bytes += (double)w->bytes;
		longest = w->seconds > longest ? w->seconds : longest;
		first = w->seconds < first ? w->seconds : first;
		last = w->seconds > last ? w->seconds : last;
		if (w->lat.n && w->lat.p99_us >= st->lat.p99_us) {
			st->lat = w->lat;
			st->slowest = r;
		}
	}
	st->goodput_gbit = longest > 0 ? bytes * 8 / longest / 1e9 : 0;
	st->jain = rc_jain(share, n);
	st->spread_s = n ? last - first : 0;
}

/* Rank 0: what the other ranks sent for a step, each latency distribution
 * bounded and holding together, counting the samples of its tail. */
static int check_senders(const struct sweep *s, const struct rc_incast_step *st, struct rc_err *err)
{
	for (int r = 1; r < s->world; r++)
		if (!rc_sweep_cdf_ok(&st->who[r].cdf) || st->who[r].cdf.n != st->who[r].lat.n)
			return rc_err_set(err, EBADMSG,
					  "rank %d sent an incast latency distribution that does "
					  "not hold together: refused",
					  r);
	return 0;
}

static int incast_steps(struct sweep *s, int receiver, struct rc_incast_result *res,
			struct rc_err *err)
{
	int n[RC_INCAST_STEPS_MAX], rc = 0;
	double *lat = malloc(INCAST_SAMPLES * sizeof(double));
	struct rc_incast_sender mine;

	if (!lat)
		return rc_err_set(err, ENOMEM, "out of memory");
	res->steps = rc_incast_counts(s->world, n, RC_INCAST_STEPS_MAX);
	/* a warm-up, every sender at once and not measured, so that the
	 * first step does not pay alone for cold queues and caches */
	if (!(rc = rc_group_barrier(s->g, err)))
		rc = warm_up(s, receiver, err);
	for (int k = 0; !rc && k < res->steps; k++) {
		struct rc_incast_step *st = &res->step[k];

		st->senders = n[k];
		s->round = k;
		if (!(st->who = calloc((size_t)s->world, sizeof(*st->who))))
			rc = rc_err_set(err, ENOMEM, "out of memory");
		if (!rc && !(rc = rc_group_barrier(s->g, err)) &&
		    !(rc = send_part(s, receiver, n[k], lat, &mine, err)))
			rc = rc_group_gather_tree(s->g, &mine, sizeof(mine), st->who, err);
		if (!rc && s->me == 0 && !(rc = check_senders(s, st, err)))
			step_figures(st, s->world, receiver);
	}
	free(lat);
	return rc;
}

int rc_incast_run(struct rc_group *g, const struct rc_sweep_opts *o, int receiver,
		  struct rc_incast_result *res, struct rc_err *err)
{
	struct sweep s = { .g = g, .o = o, .me = rc_group_rank(g), .world = rc_group_world(g) };
	struct rc_cong before, after;
	double t0 = rc_now();
	int rc;

	memset(res, 0, sizeof(*res));
	if (s.world < 2 || receiver < 0 || receiver >= s.world || !o->msg_size ||
	    o->msg_size > (1ULL << 30) || o->depth < 1 || o->lat_iters < 1 || o->duration_s <= 0)
		return rc_err_set(
			err, EINVAL,
			"an incast needs 2 ranks or more, a receiver among them, a message size up to 1 GiB, a depth and a duration");
	s.timeout_ms = sweep_timeout_ms(g, s.me, s.world);
	s.rounds = rc_incast_counts(s.world, (int[RC_INCAST_STEPS_MAX]){ 0 }, RC_INCAST_STEPS_MAX);
	res->world = s.world;
	res->receiver = receiver;
	if (!(res->nodes = calloc((size_t)s.world, sizeof(*res->nodes)))) {
		rc = rc_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = sweep_setup(&s, err)))
		goto out;
	rc_cong_read(o->sysfs, rc_group_dev(g), rc_group_port(g), &before);
	if ((rc = incast_steps(&s, receiver, res, err)))
		goto out;
	rc_cong_read(o->sysfs, rc_group_dev(g), rc_group_port(g), &after);
	rc_cong_moved(&before, &after, &s.cong);
	if ((rc = rc_group_barrier(g, err)) || (rc = sweep_gather_nodes(&s, res->nodes, err)))
		goto out;
	for (int i = 0; s.me == 0 && i < s.world; i++) {
		struct rc_sweep_node *n = &res->nodes[i];

		if (i && (!sweep_peer_string(n->host, sizeof(n->host)) ||
			  !sweep_peer_string(n->hostname, sizeof(n->hostname)) ||
			  !sweep_peer_string(n->dev, sizeof(n->dev)))) {
			rc = rc_err_set(err, EBADMSG,
					"rank %d sent a node record whose names are not "
					"terminated strings: refused",
					i);
			goto out;
		}
	}
	res->seconds = rc_now() - t0;
out:
	if (rc)
		rc_group_abort_err(g, err, "the incast failed");
	sweep_free(&s);
	if (rc)
		rc_incast_result_free(res);
	return rc;
}

void rc_incast_result_free(struct rc_incast_result *res)
{
	for (int k = 0; k < RC_INCAST_STEPS_MAX; k++) {
		free(res->step[k].who);
		res->step[k].who = NULL;
	}
	free(res->nodes);
	res->nodes = NULL;
}
