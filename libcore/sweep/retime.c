// SPDX-License-Identifier: MIT
/*
 * A second look before a direction is named for its latency. Once the rows
 * are on rank 0, the directions whose WRITE or READ median stands above
 * RC_SWEEP_RETIME_RATIO times the fleet's (rc_sweep_retime_pick, judge.c)
 * are timed again, after every round, and each keeps the lower of its two medians: a host
 * that stalls for a while (a busy CPU, an emulated NIC's scheduling) slows
 * one window, a slow link slows both. Rank 0 sends the list down the
 * group's tree; only the rounds that hold such a direction run again, with
 * the same turns on a shared port, so a fleet with none pays one broadcast.
 * The tails and the distributions stay those of the first window.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <rdmactl/group_core.h>
#include <rdmactl/sweep_core.h>

#include "sweep_int.h"

/* Samples a direction timed again: a median, not a tail (a slow link's
 * second look costs 15 of its round trips, not --lat-iters). */
#define RETIME_ITERS 15

static bool positive(double x)
{
	return isfinite(x) && x > 0;
}

int rc_sweep_retime_merge(int world, struct rc_sweep_cell *m, const uint8_t *mask,
			  const struct rc_sweep_retime *got)
{
	size_t N = (size_t)world * (size_t)world;
	int n = 0;

	for (size_t k = 0; k < N; k++)
		if (mask[k] && (!positive(got[k].wlat_p50_us) || !positive(got[k].rlat_p50_us)))
			return -(int)(k / (size_t)world) - 1;
	for (size_t k = 0; k < N; k++) {
		if (!mask[k])
			continue;
		m[k].wlat_p50_us = fmin(m[k].wlat_p50_us, got[k].wlat_p50_us);
		m[k].rlat_p50_us = fmin(m[k].rlat_p50_us, got[k].rlat_p50_us);
		n++;
	}
	return n;
}

/* Whether any pair of this round is to be timed again, either way. */
static bool round_wanted(const struct sweep *s, const uint8_t *mask)
{
	for (int i = 0; i < s->world; i++) {
		int p = rc_sweep_partner(s->world, s->round, i);

		if (p >= 0 && mask[(size_t)i * (size_t)s->world + (size_t)p])
			return true;
	}
	return false;
}

static int retime_one(struct sweep *s, int peer, struct rc_sweep_retime *out, struct rc_err *err)
{
	int n = s->o->lat_iters < RETIME_ITERS ? s->o->lat_iters : RETIME_ITERS, rc;
	struct rc_sweep_tail w, r;

	sweep_say(s, peer, "latency timed again");
	if ((rc = sweep_time_lat(s, peer, false, n, &w, NULL, err)) ||
	    (rc = sweep_time_lat(s, peer, true, n, &r, NULL, err)))
		return rc;
	out->wlat_p50_us = w.p50_us;
	out->rlat_p50_us = r.p50_us;
	return 0;
}

/* The rounds that hold a masked direction, in the idle rounds' phases and
 * turns, the group's barrier before each; mine[peer] what this rank timed. */
static int retime_rounds(struct sweep *s, const uint8_t *mask, struct rc_sweep_retime *mine,
			 struct rc_err *err)
{
	size_t W = (size_t)s->world;
	int rc;

	for (s->round = 0; s->round < s->rounds; s->round++) {
		int peer = rc_sweep_partner(s->world, s->round, s->me), turns;

		if (!round_wanted(s, mask))
			continue;
		turns = rc_sweep_turns(s->world, s->round, s->port, s->nports, s->turn);
		if (turns < 0)
			return rc_err_set(err, -turns, "out of memory");
		for (int ph = 0; ph < 2; ph++)
			for (int t = 0; t < turns; t++) {
				bool active = peer >= 0 && s->turn[s->me] == t &&
					      (ph == 0) == (s->me < peer) &&
					      mask[(size_t)s->me * W + (size_t)peer];

				if ((rc = rc_group_barrier(s->g, err)))
					return rc;
				if (active && (rc = retime_one(s, peer, &mine[peer], err)))
					return rc;
			}
	}
	return rc_group_barrier(s->g, err);
}

static bool any(const uint8_t *mask, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (mask[k])
			return true;
	return false;
}

int sweep_retime(struct sweep *s, struct rc_sweep_result *res, struct rc_err *err)
{
	size_t W = (size_t)s->world;
	uint8_t *mask = calloc(W * W, 1);
	struct rc_sweep_retime *mine = calloc(W, sizeof(*mine)), *all = NULL;
	int rc = 0, n;

	if (!mask || !mine || (s->me == 0 && !(all = calloc(W * W, sizeof(*all))))) {
		rc = rc_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (s->me == 0 && (n = rc_sweep_retime_pick(s->world, res->m, mask)) < 0) {
		rc = rc_err_set(err, -n, "out of memory");
		goto out;
	}
	/* every rank holds the same list from here, so all skip alike */
	if ((rc = rc_group_bcast_tree(s->g, mask, W * W, err)) || !any(mask, W * W))
		goto out;
	if ((rc = retime_rounds(s, mask, mine, err)) ||
	    (rc = rc_group_gather_tree(s->g, mine, W * sizeof(*mine), all, err)) || s->me)
		goto out;
	if ((n = rc_sweep_retime_merge(s->world, res->m, mask, all)) < 0)
		rc = rc_err_set(err, EBADMSG,
				"rank %d sent a second latency median that is not a positive "
				"number for a direction timed again: refused",
				-n - 1);
	else
		res->lat_retimed = n;
out:
	free(mask);
	free(mine);
	free(all);
	return rc;
}
