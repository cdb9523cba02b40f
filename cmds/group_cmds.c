// SPDX-License-Identifier: MIT
/* The group options alltoall and multicast share (group_cmds.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "group_cmds.h"
#include "rails_cmds.h"

/* --metrics FILE with %r replaced by this rank. */
static int metrics_rank_path(struct ctx *ctx, const char *tmpl, struct group_args *a)
{
	size_t o = 0;

	a->metrics[0] = '\0';
	a->metrics_per_rank = tmpl && strstr(tmpl, "%r");
	for (const char *p = tmpl; p && *p; p++) {
		int w = p[0] == '%' && p[1] == 'r'
				? snprintf(a->metrics + o, sizeof(a->metrics) - o, "%d", a->who.rank)
				: snprintf(a->metrics + o, sizeof(a->metrics) - o, "%c", *p);

		if (p[0] == '%' && p[1] == 'r')
			p++;
		if (w < 0 || (size_t)w >= sizeof(a->metrics) - o)
			return usage_err(ctx, "--metrics: the path is too long");
		o += (size_t)w;
	}
	if (tmpl && !*tmpl)
		return usage_err(ctx, "--metrics: the file name is empty");
	return 0;
}

/* Where a rank on the rail of address addr listens: --listen 0.0.0.0[:PORT]
 * (or [::]) is that address (at PORT); no --listen, that address unless a peers file
 * gives this rank's; --listen ADDR is ADDR. */
static int rail_listen(struct ctx *ctx, const struct cmd *c, struct group_args *a, const char *addr)
{
	const char *l = a->listen;
	char port[8] = "";
	bool any = l && rails_listen_any(l, port, sizeof(port));

	if (l && !any)
		return 0;
	if (!l && a->rendezvous && !strncmp(a->rendezvous, "file:", 5))
		return 0;
	if (!addr[0])
		return fail(ctx, -EADDRNOTAVAIL,
			    "%s: --rails %s: %s has no IPv4 address to listen on: give --listen "
			    "ADDR",
			    c->name, a->rails, a->rail_dev);
	snprintf(a->rail_listen, sizeof(a->rail_listen), "%s%s%s", addr, port[0] ? ":" : "", port);
	a->listen = a->rail_listen;
	out_log(&ctx->out, "%s: --rails %s: listening on %s (%s)", c->name, a->rails, a->listen,
		a->rail_dev);
	return 0;
}

/* --rails PLAN: one device a rank, the plan's only rail, or of several
 * rail (local rank mod rails), so that a node's ranks spread over its
 * NICs; said on stderr. */
static int group_rail(struct ctx *ctx, const struct cmd *c, struct group_args *a)
{
	struct rails_auto ra;
	int rc = rails_auto(ctx, c->name, a->rails, &ra), i;

	if (rc)
		return rc;
	i = ra.n > 1 && a->who.local_rank > 0 ? a->who.local_rank % ra.n : 0;
	snprintf(a->rail_dev, sizeof(a->rail_dev), "%s", ra.dev[i]);
	if (ra.n > 1 && a->who.local_rank >= 0)
		out_log(&ctx->out, "%s: --rails %s: rank %d, local rank %d: rail %d of %d, %s",
			c->name, a->rails, a->who.rank, a->who.local_rank, i + 1, ra.n, a->rail_dev);
	else if (ra.n > 1)
		out_log(&ctx->out,
			"%s: --rails %s: rank %d, no local rank (--local-rank, or the "
			"launcher's): rail 1 of %d, %s",
			c->name, a->rails, a->who.rank, ra.n, a->rail_dev);
	return rail_listen(ctx, c, a, ra.addr[i]);
}

int group_args_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		     struct group_args *a)
{
	struct rc_err e;
	int rc;

	a->rank = a->world = a->local_rank = -1;
	/* --rendezvous and --listen are taken as given: they cannot fail here */
	if ((rc = opts_fill(ctx, c, v, first + GO_RANK, first + GO_RAILS + 1, a)))
		return rc;
	if (rc_rank_resolve(a->rank, a->world, a->local_rank, NULL, &a->who, &e))
		return usage_err(ctx, "%s", e.msg);
	if ((rc = metrics_rank_path(ctx, opt_arg(v, first + GO_METRICS), a)) ||
	    (rc = opt_token(ctx, v, first + GO_TOKEN, first + GO_TOKEN_FILE, a->token_buf,
			    &a->token)))
		return rc;
	a->rail_dev[0] = '\0';
	return a->rails ? group_rail(ctx, c, a) : 0;
}

int group_plan_args(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		    const char *what, struct group_args *a)
{
	int world = -1, rank = -1, rc;

	if ((rc = opt_int_at(ctx, c, v, first + GO_WORLD, 0, 1 << 20, &world)) ||
	    (rc = opt_int_at(ctx, c, v, first + GO_RANK, 0, 1 << 20, &rank)))
		return rc;
	if (world < 0)
		return usage_err(ctx, "%s --plan needs --world N, the ranks of the job", what);
	if (world < 2)
		return usage_err(ctx, "%s needs at least 2 ranks (the world size is %d)", what,
				 world);
	if (world > RC_GROUP_MAX)
		return usage_err(ctx, "--world %d: a group holds at most %d ranks", world,
				 RC_GROUP_MAX);
	if (rank >= world)
		return usage_err(ctx, "rank %d is not below the world size %d", rank, world);
	a->who = (struct rc_rank_info){ .rank = rank, .world = world, .local_rank = -1 };
	snprintf(a->who.source, sizeof(a->who.source), "flags");
	return 0;
}

int group_plan_rpn(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i, int world,
		   int *rpn)
{
	int rc = opt_int_at(ctx, c, v, i, 1, RC_GROUP_MAX, rpn);

	if (!rc && *rpn && world % *rpn)
		return usage_err(ctx, "--ranks-per-node %d does not divide the world size %d", *rpn,
				 world);
	return rc;
}

int group_rendezvous_ready(struct ctx *ctx, const char *what, const struct group_args *a)
{
	int rc;

	if (!a->rendezvous)
		return usage_err(ctx, "%s needs --rendezvous etcd://HOST:PORT/JOB or file:PATH",
				 what);
	if (a->metrics[0] && (rc = metrics_path_check(ctx, a->metrics)))
		return rc;
	if (!strncmp(a->rendezvous, "file:", 5))
		return input_file(ctx, "--rendezvous", a->rendezvous + 5);
	return 0;
}

void group_report(struct out *o, const struct rc_group *g)
{
	struct rc_group_stats s;
	struct rusage ru;
	uint64_t rss = 0;

	rc_group_stats(g, &s);
	if (!getrusage(RUSAGE_SELF, &ru))
		rss = (uint64_t)ru.ru_maxrss * 1024; /* Linux counts KiB */
	out_text(o, "# group: rendezvous %.1f ms, connect %.1f ms", s.rendezvous_s * 1e3,
		 s.connect_s * 1e3);
	if (s.first_barrier_s >= 0)
		out_text(o, ", first barrier %.1f ms", s.first_barrier_s * 1e3);
	out_obj_begin(o, "group");
	out_f64(o, "rendezvous_s", NULL, s.rendezvous_s);
	out_f64(o, "connect_s", NULL, s.connect_s);
	if (s.first_barrier_s >= 0)
		out_f64(o, "first_barrier_s", NULL, s.first_barrier_s);
	else
		out_null(o, "first_barrier_s");
	out_i64(o, "tree_depth", " (tree depth %lld)", s.tree_depth);
	out_i64(o, "qps", "; this rank: %lld QPs", s.qps);
	out_i64(o, "cqs", s.cqs == 1 ? ", %lld CQ" : ", %lld CQs", s.cqs);
	out_u64(o, "ring_bytes", ", %llu bytes of message rings", s.ring_bytes);
	out_u64(o, "max_rss_bytes", ", peak RSS %llu bytes\n", rss);
	out_obj_end(o);
}

void group_metrics(struct metrics *m, const struct rc_group *g)
{
	struct rc_group_stats s;

	rc_group_stats(g, &s);
	metrics_gauge(m, "rdmactl_group_rendezvous_seconds", "how long the rendezvous took",
		      s.rendezvous_s);
	metrics_gauge(m, "rdmactl_group_connect_seconds", "how long connecting to the peers took",
		      s.connect_s);
	metrics_gauge(m, "rdmactl_group_queue_pairs", "queue pairs this rank holds", s.qps);
}
