// SPDX-License-Identifier: MIT
/*
 * sweep --incast RANK: N senders write into one receiver at once, N = 1,
 * 2, 4 ... all (libcore's rc_incast_run); rank 0 prints a line a step (the
 * receiver's goodput, Jain's index over the senders' bytes, the spread of
 * their completion times, the slowest sender's latency tail), the step
 * where the goodput stopped growing or the shares stopped being fair, and
 * the congestion counters that moved on each rank's port; --svg draws the
 * goodput and fairness against N.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/group.h>
#include <rdmactl/sweep.h>

#include "cmds.h"
#include "output.h"
#include "sweep_judged.h"
#include "sweep_report.h"

#define KNEE_GROWTH 0.1 /* goodput that grows by less with more senders: flat */
#define KNEE_JAIN 0.9   /* a Jain index below: unfair */

void sweep_put_tail(struct out *o, const char *key, const struct rc_sweep_tail *t)
{
	out_obj_begin(o, key);
	out_i64(o, "samples", NULL, t->n);
	out_f64(o, "p50_us", NULL, t->p50_us);
	out_f64(o, "p99_us", NULL, t->p99_us);
	out_f64(o, "p999_us", NULL, t->p999_us);
	out_f64(o, "max_us", NULL, t->max_us);
	out_obj_end(o);
}

void sweep_put_leak(struct out *o, const char *key, const struct rc_sweep_tail *idle,
		    const struct rc_sweep_tail *loaded)
{
	out_obj_begin(o, key);
	if (idle->n)
		sweep_put_tail(o, "idle", idle);
	else { /* sweep's idle figures come without their count */
		out_obj_begin(o, "idle");
		out_f64(o, "p50_us", NULL, idle->p50_us);
		out_f64(o, "p99_us", NULL, idle->p99_us);
		out_f64(o, "p999_us", NULL, idle->p999_us);
		out_f64(o, "max_us", NULL, idle->max_us);
		out_obj_end(o);
	}
	sweep_put_tail(o, "loaded", loaded);
	out_f64(o, "leakage_p50", NULL, sweep_leak_of(idle->p50_us, loaded->p50_us));
	out_f64(o, "leakage_p99", NULL, sweep_leak_of(idle->p99_us, loaded->p99_us));
	out_f64(o, "leakage_p999", NULL, sweep_leak_of(idle->p999_us, loaded->p999_us));
	out_obj_end(o);
}

static void put_step(struct out *o, const struct rc_incast_result *res, int k)
{
	const struct rc_incast_step *st = &res->step[k];

	out_obj_begin(o, NULL);
	out_i64(o, "senders", "  %4lld", st->senders);
	out_f64(o, "goodput_gbit_per_s", "  %10.3f", st->goodput_gbit);
	if (isnan(st->jain))
		out_null(o, "jain");
	else
		out_f64(o, "jain", "  %5.3f", st->jain);
	out_f64(o, "completion_spread_s", "  %9.4f", st->spread_s);
	out_text(o, "  %9.1f %9.1f %9.1f\n", st->lat.p50_us, st->lat.p99_us, st->lat.max_us);
	sweep_put_tail(o, "latency", &st->lat);
	out_arr_begin(o, "shares");
	for (int r = 0; r < res->world; r++) {
		int idx = r < res->receiver ? r : r - 1;
		const struct rc_incast_sender *w = &st->who[r];

		if (r == res->receiver || idx >= st->senders)
			continue;
		out_obj_begin(o, NULL);
		out_i64(o, "rank", NULL, r);
		out_u64(o, "bytes", NULL, w->bytes);
		out_f64(o, "seconds", NULL, w->seconds);
		out_obj_end(o);
	}
	out_arr_end(o);
	out_obj_end(o);
}

int sweep_put_cong_moved(struct out *o, const char *key, const struct rc_cong *d)
{
	int n = 0;

	out_obj_begin(o, key);
	for (int k = 0; k < RC_CONG_N; k++)
		if ((d->present >> k & 1) && d->val[k]) {
			out_text(o, " %s", rc_cong_name(k));
			out_u64(o, rc_cong_name(k), " +%llu", d->val[k]);
			n++;
		}
	out_obj_end(o);
	return n;
}

void sweep_put_cong_one(struct out *o, const struct rc_cong *d)
{
	sweep_put_cong_moved(o, "moved", d);
	out_arr_begin(o, "still");
	for (int k = 0; k < RC_CONG_N; k++)
		if ((d->present >> k & 1) && !d->val[k])
			out_str(o, NULL, NULL, rc_cong_name(k));
	out_arr_end(o);
	out_text(o, ";");
	out_arr_begin(o, "absent");
	for (int k = 0; k < RC_CONG_N; k++)
		if (!(d->present >> k & 1))
			out_str(o, NULL, " %s", rc_cong_name(k));
	out_arr_end(o);
	out_text(o, " absent\n");
}

/* Each rank's congestion counters over the run: moved, still, or absent. */
void sweep_put_cong(struct out *o, const struct rc_sweep_node *nodes, int world)
{
	out_text(o, "# congestion counters over the loaded phases (absent: this NIC has none):\n");
	out_arr_begin(o, "congestion_counters");
	for (int i = 0; i < world; i++) {
		const struct rc_sweep_node *n = &nodes[i];

		out_obj_begin(o, NULL);
		out_i64(o, "rank", "#   rank %lld", i);
		out_text(o, " (%s:%d):", n->dev, n->port);
		sweep_put_cong_one(o, &n->cong);
		out_obj_end(o);
	}
	out_arr_end(o);
}

/* The knee: the first step that stopped growing or stopped being fair. */
static int knee_of(const struct rc_incast_result *res, double *gp, double *jain, unsigned *why)
{
	for (int k = 0; k < res->steps; k++) {
		gp[k] = res->step[k].goodput_gbit;
		jain[k] = isnan(res->step[k].jain) ? 1 : res->step[k].jain;
	}
	return rc_incast_knee(res->steps, gp, jain, KNEE_GROWTH, KNEE_JAIN, why);
}

static void put_knee(struct out *o, const struct rc_incast_result *res)
{
	double gp[RC_INCAST_STEPS_MAX], jain[RC_INCAST_STEPS_MAX];
	unsigned why;
	int knee = knee_of(res, gp, jain, &why);

	out_obj_begin(o, "knee");
	out_f64(o, "growth", NULL, KNEE_GROWTH);
	out_f64(o, "jain_min", NULL, KNEE_JAIN);
	if (knee < 0) {
		out_null(o, "senders");
		out_text(o,
			 "knee: none: the goodput grew by %.0f %% or more at every step and "
			 "stayed fair\n",
			 KNEE_GROWTH * 100);
	} else {
		out_i64(o, "senders", "knee: at %lld senders", res->step[knee].senders);
		out_bool(o, "flat", NULL, why & RC_INCAST_FLAT);
		out_bool(o, "unfair", NULL, why & RC_INCAST_UNFAIR);
		if (why & RC_INCAST_FLAT)
			out_text(o, ": the goodput stopped growing (%.3f Gb/s after %.3f)",
				 gp[knee], gp[knee > 0 ? knee - 1 : 0]);
		if (why & RC_INCAST_UNFAIR)
			out_text(o, "%s Jain's index fell to %.3f",
				 why & RC_INCAST_FLAT ? ";" : ":", jain[knee]);
		out_text(o, "\n");
	}
	out_obj_end(o);
}

static void incast_report(struct out *o, const struct group_args *grp,
			  const struct rc_sweep_opts *run, const struct rc_incast_result *res)
{
	const struct rc_sweep_node *r = &res->nodes[res->receiver];

	out_bool(o, "incast", NULL, true);
	out_u64(o, "ranks", "# incast: %llu ranks", (uint64_t)res->world);
	out_str(o, "rank_source", " (%s)", grp->who.source);
	out_i64(o, "receiver", ", into rank %lld", res->receiver);
	out_text(o, " (%s %s:%d)", r->host, r->dev, r->port);
	out_u64(o, "msg_size_bytes", ", WRITEs of %llu bytes", run->msg_size);
	out_u64(o, "depth", " (%llu outstanding)", (uint64_t)run->depth);
	out_f64(o, "duration_s", " for %g s a step", run->duration_s);
	out_f64(o, "seconds", "; %.1f s in all\n", res->seconds);
	out_text(o, "# senders  goodput Gb/s   jain  spread s   p50 us    p99 us    max us\n");
	out_arr_begin(o, "steps");
	for (int k = 0; k < res->steps; k++)
		put_step(o, res, k);
	out_arr_end(o);
	sweep_put_cong(o, res->nodes, res->world);
	put_knee(o, res);
}

int sweep_incast(struct ctx *ctx, struct rc_group *g, int me, const struct group_args *grp,
		 const struct rc_sweep_opts *run, int receiver, const char *svg)
{
	struct rc_incast_result res;
	struct rc_err e;
	int rc = rc_incast_run(g, run, receiver, &res, &e);

	if (rc)
		return fail(ctx, rc, "rank %d: %s", me, ERR_TEXT(e));
	if (me == 0)
		incast_report(&ctx->out, grp, run, &res);
	else
		ctx->out.printed = true; /* only rank 0 prints the document */
	if (me == 0 && svg) {
		double gp[RC_INCAST_STEPS_MAX], jain[RC_INCAST_STEPS_MAX];
		unsigned why;
		int d = sweep_incast_svg(&res, knee_of(&res, gp, jain, &why), svg);

		if (d)
			rc = fail(ctx, d, "--svg %s: %s", svg, strerror(-d));
		else
			out_str(&ctx->out, "svg", "# goodput and fairness against N: %s\n", svg);
	}
	rc_incast_result_free(&res);
	return rc;
}
