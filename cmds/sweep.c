// SPDX-License-Identifier: MIT
/*
 * rdmactl sweep: every rank of a group against every other, pair by pair
 * (libcore/sweep: the schedule, the measurement, the judgement); rank 0
 * reports the verdict, the matrices and the outliers (sweep_report.c), and
 * draws the bandwidth heatmap (--svg).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/group.h>
#include <rdmactl/ops.h>
#include <rdmactl/sweep.h>

#include "cmds.h"
#include "client_cmds.h"
#include "group_cmds.h"
#include "sweep_report.h"

#define SWEEP_OPTS(X) \
	GROUP_OPTS(X, SW) \
	X(SW_MSG_SIZE, "msg-size", 's', "SIZE", "bytes a WRITE, bandwidth test", \
	  OPT_SIZE(struct sweep_cli, run.msg_size, "64K")) \
	X(SW_DURATION, "duration", 0, "SECONDS", "seconds per pair and direction", \
	  OPT_DOUBLE_ABOVE(struct sweep_cli, run.duration_s, 0, 3600, "1"), \
	  OPT_GIVEN(struct sweep_cli, duration_given)) \
	X(SW_ITERS, "iters", 'n', "N", "writes per pair and direction", \
	  OPT_U64(struct sweep_cli, iters, NULL), OPT_GIVEN(struct sweep_cli, iters_given)) \
	X(SW_LAT_ITERS, "lat-iters", 0, "N", "latency samples a pair, direction", \
	  OPT_INT(struct sweep_cli, run.lat_iters, 1, 1 << 20, "200")) \
	X(SW_PAIRS, "pairs", 0, "FILE", "only the pairs of FILE (\"A B\" a line)", COMP_FILE, \
	  OPT_STR(struct sweep_cli, pairs, NULL)) \
	X(SW_DEPTH, "depth", 0, "N", "writes in flight, bandwidth test", \
	  OPT_INT(struct sweep_cli, run.depth, 1, 100, "16")) \
	X(SW_MIN_FRACTION, "min-fraction", 0, "F", "outlier: below F of the link rate", \
	  OPT_DOUBLE_ABOVE(struct sweep_cli, lim.min_fraction, 0, 1, NULL)) \
	X(SW_MAX_LAT_US, "max-lat-us", 0, "U", "outlier: median latency above U us", \
	  OPT_DOUBLE_ABOVE(struct sweep_cli, lim.max_lat_us, 0, 1e9, NULL)) \
	X(SW_SLOW_RATIO, "slow-ratio", 0, "F", "slow: below F of the median", \
	  OPT_DOUBLE(struct sweep_cli, lim.slow_ratio, 0, 1, "0.5"), \
	  OPT_GIVEN(struct sweep_cli, slow_ratio_given)) \
	X(SW_LAT_RATIO, "lat-ratio", 0, "X", "high: above X times the median", \
	  OPT_DOUBLE_ABOVE(struct sweep_cli, lim.lat_ratio, 1, 1e6, "3")) \
	X(SW_SVG, "svg", 0, "FILE", "rank 0 draws the matrix (and CDFs) as SVG", COMP_FILE, \
	  OPT_STR(struct sweep_cli, svg, NULL)) \
	X(SW_BUSY_POLL, "busy-poll", 0, NULL, "busy-poll the completion queues", \
	  OPT_FLAG(struct sweep_cli, busy_poll)) \
	X(SW_LOAD, "load", 0, "MODE", "same-pair, same-port or fabric", COMP_WORDS, \
	  "none|same-pair|same-port|fabric", OPT_WORD(struct sweep_cli, run.load, "none")) \
	X(SW_LEAK_RATIO, "leak-ratio", 0, "X", "leaking: above X times the median", \
	  OPT_DOUBLE_ABOVE(struct sweep_cli, lim.leak_ratio, 1, 1e6, "3")) \
	X(SW_INCAST, "incast", 0, "RANK", "1, 2, 4 ... all ranks write into RANK", \
	  OPT_INT(struct sweep_cli, incast, 0, RC_GROUP_MAX - 1, NULL), \
	  OPT_GIVEN(struct sweep_cli, incast_given))

struct sweep_cli {
	struct group_args grp;
	struct rc_sweep_opts run;
	struct rc_sweep_limits lim;
	const char *svg;
	bool busy_poll;
	uint64_t iters;                                              /* --iters as given */
	const char *iters_given, *duration_given, *slow_ratio_given; /* as given, or NULL */
	const char *pairs;                                           /* --pairs FILE, or NULL */
	int incast;                                                  /* --incast RANK */
	const char *incast_given;
	uint8_t *want;
};

enum { SWEEP_OPTS(OPT_INDEX) SW_NOPTS };
static const struct cmd_opt sweep_opts[] = { SWEEP_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(sweep_opts, SW_NOPTS);

/* --load and --incast: a duration to load for, and not both. */
static int load_args(struct ctx *ctx, const struct sweep_cli *a)
{
	if ((a->run.load || a->incast_given) && a->iters_given)
		return usage_err(ctx, "%s runs for --duration, not --iters",
				 a->incast_given ? "--incast" : "--load");
	if (a->run.load && a->incast_given)
		return usage_err(ctx, "--load and --incast exclude each other");
	if (a->incast_given && a->pairs)
		return usage_err(ctx, "--incast measures no pairs: --pairs does not apply");
	if (a->incast_given && a->incast >= a->grp.who.world)
		return usage_err(ctx, "--incast %d: the ranks are 0 to %d", a->incast,
				 a->grp.who.world - 1);
	return 0;
}

static int parse(struct ctx *ctx, const struct opt_vals *v, struct sweep_cli *a)
{
	const struct cmd *c = &cmd_sweep;
	int rc;

	if ((rc = group_args_parse(ctx, c, v, SW_RANK, &a->grp)) ||
	    (rc = opts_fill(ctx, c, v, SW_MSG_SIZE, SW_LAT_RATIO + 1, a)))
		return rc;
	if (a->run.msg_size < 1 || a->run.msg_size > (1ULL << 30))
		return usage_err(ctx, "invalid --msg-size %llu: expected 1 byte to 1G",
				 (unsigned long long)a->run.msg_size);
	if (a->iters_given && a->duration_given)
		return usage_err(ctx, "--iters and --duration exclude each other");
	if (a->iters_given) {
		if (!a->iters || a->iters > (1ULL << 40))
			return usage_err(ctx, "invalid --iters %llu: expected 1 or more",
					 (unsigned long long)a->iters);
		a->run.iters = a->iters;
		a->run.duration_s = 0;
	}
	/* the ranks that wait meanwhile wait in a barrier, within the timeout */
	if (a->run.duration_s * 1000 * 2 > ctx->timeout_ms)
		return usage_err(ctx, "--duration %g s needs a timeout (-t) of at least %.0f ms",
				 a->run.duration_s, a->run.duration_s * 2000);
	if (a->grp.who.world < 2)
		return usage_err(ctx, "sweep needs at least 2 ranks (the world size is %d)",
				 a->grp.who.world);
	if (a->pairs) {
		struct rc_err e;
		size_t W = (size_t)a->grp.who.world;

		if (!(a->want = malloc(W * W)))
			return fail(ctx, -ENOMEM, "out of memory");
		rc = rc_sweep_pairs_load(a->pairs, a->grp.who.world, a->want, &e);
		if (rc)
			return rc == -EINVAL ? usage_err(ctx, "--pairs %s", ERR_TEXT(e))
					     : fail(ctx, rc, "--pairs %s", ERR_TEXT(e));
		a->run.want = a->want;
	}
	if (a->slow_ratio_given && a->lim.slow_ratio == 0)
		a->lim.slow_ratio = -1; /* bandwidth not judged against the fleet */
	if (a->slow_ratio_given)
		a->lim.asym_ratio = a->lim.slow_ratio;
	if ((rc = opts_fill(ctx, c, v, SW_SVG, SW_BUSY_POLL + 1, a)) ||
	    (rc = opts_fill(ctx, c, v, SW_LOAD, SW_INCAST + 1, a)))
		return rc;
	if ((rc = load_args(ctx, a)))
		return rc;
	rc_sweep_limits_default(&a->lim);
	return group_rendezvous_ready(ctx, "sweep", &a->grp);
}

struct sweep_prog {
	struct progress p;
	int me;
};

/* On a terminal: the round, this rank's pair, the step. */
static void progress(void *arg, int round, int rounds, int peer, const char *what)
{
	struct sweep_prog *sp = arg;

	if (peer >= 0)
		progress_say(&sp->p, true, "round %d of %d: rank %d with rank %d: %s", round + 1,
			     rounds, sp->me, peer, what);
	else
		progress_say(&sp->p, true, "round %d of %d: rank %d %s", round + 1, rounds, sp->me,
			     what);
}

/* Every rank connects to every other. */
static int plan(void *arg, const struct rc_endpoint *all, int W, uint8_t *need, struct rc_err *err)
{
	(void)arg;
	(void)all;
	(void)err;
	for (int i = 0; i < W; i++)
		for (int j = 0; j < W; j++)
			need[(size_t)i * (size_t)W + (size_t)j] = i != j;
	return 0;
}

/* What every rank must be given alike: what each measures and for how
 * long (a rank waits in a barrier for its peer's test), the size of the
 * buffer a peer writes into, and the pairs. */
static void settings(const struct sweep_cli *a, struct group_settings *gs)
{
	size_t W = (size_t)a->grp.who.world;
	struct rc_group_setting *s;

	group_setting(gs, "--msg-size", "%llu", (unsigned long long)a->run.msg_size);
	group_setting(gs, "--duration", "%g", a->run.duration_s);
	group_setting(gs, "--iters", "%llu", (unsigned long long)a->run.iters);
	group_setting(gs, "--lat-iters", "%d", a->run.lat_iters);
	group_setting(gs, "--depth", "%d", a->run.depth);
	group_setting(gs, "--load", "%s", rc_sweep_load_name(a->run.load));
	group_setting(gs, "--incast", "%d", a->incast_given ? a->incast : -1);
	s = group_setting(gs, "--pairs", "%s", a->pairs ? a->pairs : "");
	s->data = a->want ? a->want : NULL;
	s->len = a->want ? W * W : 0;
}

/* The settings agreed, the progress line set up; under --load every rank
 * gathers the latency distributions to rank 0 when rank 0 draws them
 * (--svg there), whatever the others were given. */
static int start(struct ctx *ctx, struct sweep_cli *a, struct rc_group *g, struct sweep_prog *prog)
{
	struct group_settings gs = { .n = 0 };
	uint64_t *svg0 = NULL;
	struct rc_err e;
	int rc;

	settings(a, &gs);
	if ((rc = group_agree(ctx, g, prog->me, &gs)))
		return rc;
	if (a->run.load && !a->incast_given) {
		if (!(svg0 = calloc((size_t)a->grp.who.world, sizeof(*svg0))))
			return fail(ctx, -ENOMEM, "out of memory");
		if ((rc = rc_group_allgather_u64(g, a->svg != NULL, svg0, &e)))
			rc = fail(ctx, rc, "rank %d: %s", prog->me, ERR_TEXT(e));
		a->run.cdf = !rc && svg0[0];
		free(svg0);
		if (rc)
			return rc;
	}
	progress_init(&prog->p, ctx);
	prog->p.on = prog->p.on && prog->me == 0;
	a->run.progress = progress;
	a->run.progress_arg = prog;
	return 0;
}

static int run(struct ctx *ctx, struct sweep_cli *a)
{
	int W = a->grp.who.world, me = a->grp.who.rank, rc;
	struct rc_group_join join = { .rank = me,
				      .world = W,
				      .rendezvous = a->grp.rendezvous,
				      .listen = group_listen(&a->grp, 0),
				      .token = a->grp.token,
				      .dev_name = group_dev(ctx, &a->grp, 0),
				      .timeout_ms = ctx->timeout_ms,
				      .busy_poll = a->busy_poll,
				      .partial = true,
				      .plan = plan };
	struct rc_group_join_out how;
	struct rc_sweep_result res = { 0 };
	struct sweep_prog prog = { .me = me };
	struct rc_group *g = NULL;
	uint8_t healthy = 1;
	uint64_t *verdict = calloc((size_t)W, sizeof(*verdict));
	struct rc_err e;
	bool metrics = group_metrics_on(&a->grp, 0);
	struct metrics m;

	metrics_init(&m);
	metrics_label(&m, "command", "sweep");
	metrics_label_u64(&m, "rank", (uint64_t)me);
	if (metrics)
		out_keep_tree(&ctx->out);
	if (!verdict) {
		rc = fail(ctx, -ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = rc_group_join(&join, &g, &how, &e))) {
		rc = how.usage ? usage_err(ctx, "%s", ERR_TEXT(e))
			       : fail(ctx, rc, "%s", ERR_TEXT(e));
		goto out;
	}
	if ((rc = start(ctx, a, g, &prog)))
		goto out;
	rc = a->incast_given ? sweep_incast(ctx, g, me, &a->grp, &a->run, a->incast, a->svg)
			     : rc_sweep_run(g, &a->run, &res, &e);
	progress_end(&prog.p);
	if (rc && !a->incast_given)
		rc = fail(ctx, rc, "rank %d: %s", me, ERR_TEXT(e));
	if (rc || a->incast_given)
		goto out;
	if (me == 0) {
		struct sweep_report r = { .a_grp = &a->grp,
					  .run = &a->run,
					  .lim = &a->lim,
					  .res = &res,
					  .g = g,
					  .svg = a->svg };

		rc = sweep_report(ctx, &r, &healthy);
	}
	/* every rank exits with the verdict, so that a launcher sees it (over
	 * the tree: rank 0 may have a pair that could not connect) */
	if (!rc && (rc = rc_group_allgather_u64(g, me == 0 ? healthy : 0, verdict, &e)))
		rc = fail(ctx, rc, "rank %d: %s", me, ERR_TEXT(e));
	healthy = rc ? healthy : verdict[0] != 0;
	if (!rc && me != 0)
		ctx->out.printed = true; /* only rank 0 prints the document */
	group_report_data(&ctx->out, g);
	if (!rc && !healthy)
		ctx->exit_code = EXIT_FAIL;
out:
	rc_sweep_result_free(&res);
	free(verdict);
	rc_group_close(g);
	if (metrics) {
		metrics_render(&m, out_tree(&ctx->out), &sweep_metric_table);
		metrics_render(&m, out_tree(&ctx->out), &group_metric_table);
		rc = metrics_commit(ctx, &m, a->grp.metrics, rc);
	}
	metrics_free(&m);
	return rc;
}

static int do_sweep(struct ctx *ctx, int argc, char **argv)
{
	struct sweep_cli a = { 0 };
	struct opt_vals v;
	int rc = opts_parse(ctx, &cmd_sweep, argc, argv, &v);

	if (rc)
		return rc < 0 ? rc : 0;
	rc = parse(ctx, &v, &a);
	if (!rc)
		rc = run(ctx, &a);
	free(a.want);
	return rc;
}

const struct cmd cmd_sweep = {
	.name = "sweep",
	.run = do_sweep,
	.opts = sweep_opts,
	.summary = "every rank against every other: find the slow link or node",
};
