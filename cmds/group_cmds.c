// SPDX-License-Identifier: MIT
/* The group options alltoall and multicast share (group_cmds.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cmds.h"
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

/* Where rail i of a rank, on the device whose address is addr, listens:
 * --listen 0.0.0.0[:PORT] (or [::]) is that address (at PORT); no --listen,
 * that address unless a peers file gives this rank's; --listen ADDR is
 * ADDR (one rail only: group_rails_check). what: the option that gave the
 * device, in the messages. */
static int rail_listen(struct ctx *ctx, const struct cmd *c, struct group_args *a, int i,
		       const char *addr, const char *what)
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
			    "%s: %s: %s has no IPv4 address to listen on: give --listen ADDR",
			    c->name, what, a->rail_dev[i]);
	snprintf(a->rail_listen[i], sizeof(a->rail_listen[i]), "%s%s%s", addr, port[0] ? ":" : "",
		 port);
	if (a->nrails > 1)
		out_log(&ctx->out, "%s: %s: rail %d listening on %s (%s)", c->name, what, i + 1,
			a->rail_listen[i], a->rail_dev[i]);
	else
		out_log(&ctx->out, "%s: %s: listening on %s (%s)", c->name, what, a->rail_listen[i],
			a->rail_dev[i]);
	return 0;
}

/* Several rails a rank: each rail's group meets through etcd under its own
 * job name and listens on its own device's address. */
static int group_rails_check(struct ctx *ctx, const struct cmd *c, const struct group_args *a,
			     const char *what)
{
	char port[8];

	if (a->nrails <= 1)
		return 0;
	if (a->nrails > (a->rails_max > 1 ? a->rails_max : 1))
		return usage_err(ctx,
				 "%s: %s gives this rank %d devices: %s runs one device a rank "
				 "(alltoall and multicast stripe over several)",
				 c->name, what, a->nrails, c->name);
	if (a->rendezvous && strncmp(a->rendezvous, "etcd://", 7))
		return usage_err(ctx,
				 "%s: %s gives this rank %d rails: several rails a rank meet through "
				 "etcd (--rendezvous etcd://HOST:PORT/JOB), where each rail publishes "
				 "its own address; a peers file holds one a rank",
				 c->name, what, a->nrails);
	if (a->listen && !strchr(a->listen, ',') && !rails_listen_any(a->listen, port, sizeof(port)))
		return usage_err(ctx,
				 "%s: %s gives this rank %d rails, each listening on its device's "
				 "address: give --listen 0.0.0.0[:PORT] or none, not --listen %s",
				 c->name, what, a->nrails, a->listen);
	return 0;
}

/* --rails PLAN: rails_per_rank of the plan's rails (-1: all of them), from
 * rail (local rank * that) mod rails on, so that a node's ranks spread over
 * its NICs; said on stderr. */
static int group_rail(struct ctx *ctx, const struct cmd *c, struct group_args *a)
{
	struct rails_auto ra;
	int rc = rails_auto(ctx, c->name, a->rails, &ra), k, first;
	char what[96], list[RC_RAILS_MAX * 4] = "";

	if (rc)
		return rc;
	k = a->rails_per_rank < 0 ? ra.n : a->rails_per_rank > 0 ? a->rails_per_rank : 1;
	if (k > ra.n)
		return usage_err(ctx, "%s: --rails-per-rank %d: the plan %s has %d rail%s", c->name,
				 k, a->rails, ra.n, ra.n == 1 ? "" : "s");
	first = a->who.local_rank > 0 ? (int)((long)a->who.local_rank * k % ra.n) : 0;
	a->nrails = k;
	for (int j = 0; j < k; j++) {
		int i = (first + j) % ra.n;
		size_t o = strlen(list);

		snprintf(a->rail_dev[j], sizeof(a->rail_dev[j]), "%s", ra.dev[i]);
		snprintf(list + o, sizeof(list) - o, "%s%d", j ? "," : "", i + 1);
	}
	if (ra.n > 1) {
		char devs[RC_RAILS_MAX * 65] = "";

		for (int j = 0; j < k; j++) {
			size_t o = strlen(devs);

			snprintf(devs + o, sizeof(devs) - o, "%s%s", j ? "," : "", a->rail_dev[j]);
		}
		if (a->who.local_rank >= 0)
			out_log(&ctx->out,
				"%s: --rails %s: rank %d, local rank %d: rail%s %s of %d, %s",
				c->name, a->rails, a->who.rank, a->who.local_rank, k > 1 ? "s" : "",
				list, ra.n, devs);
		else
			out_log(&ctx->out,
				"%s: --rails %s: rank %d, no local rank (--local-rank, or the "
				"launcher's): rail%s %s of %d, %s",
				c->name, a->rails, a->who.rank, k > 1 ? "s" : "", list, ra.n, devs);
	}
	snprintf(what, sizeof(what), "--rails %s", a->rails);
	if ((rc = group_rails_check(ctx, c, a, what)))
		return rc;
	for (int j = 0; j < k; j++) {
		int i = (first + j) % ra.n;

		if ((rc = rail_listen(ctx, c, a, j, ra.addr[i], what)))
			return rc;
	}
	return 0;
}

/* --listen ADDR1[:PORT],ADDR2[:PORT], with -d DEV1,DEV2 or without (each
 * address picks its device): one rail each, as register takes them. */
static int group_devs(struct ctx *ctx, const struct cmd *c, struct group_args *a)
{
	struct listen_rails lr;
	int rc;

	if (!a->listen || !strchr(a->listen, ','))
		return usage_err(ctx,
				 "%s: -d %s names several devices, a rail each: give --listen "
				 "ADDR1[:PORT],ADDR2[:PORT], an address of each, or --rails PLAN",
				 c->name, ctx->dev_name);
	if ((rc = listen_rails(ctx, c->name, a->listen, ctx->dev_name, &lr)))
		return rc;
	a->nrails = lr.n;
	for (int i = 0; i < lr.n; i++) {
		snprintf(a->rail_dev[i], sizeof(a->rail_dev[i]), "%s", lr.dev[i]);
		bool v6 = strchr(lr.host[i], ':') != NULL;

		snprintf(a->rail_listen[i], sizeof(a->rail_listen[i]), "%s%s%s%s%s", v6 ? "[" : "",
			 lr.host[i], v6 ? "]" : "", lr.port[i][0] ? ":" : "", lr.port[i]);
	}
	return group_rails_check(ctx, c, a, "-d");
}

const char *group_rail_rendezvous(const struct group_args *a, int i, char *buf, size_t cap)
{
	if (!i || !a->rendezvous)
		return a->rendezvous;
	snprintf(buf, cap, "%s.rail%d", a->rendezvous, i + 1);
	return buf;
}

/* Over rail 0's group g: every rank runs on as many rails as this one. */
static int rails_agree(struct ctx *ctx, struct rc_group *g, const struct group_args *a)
{
	int W = a->who.world, mine = a->nrails > 1 ? a->nrails : 1;
	uint64_t *all = calloc((size_t)W, sizeof(uint64_t));
	struct rc_err e;
	int rc;

	if (!all)
		return fail(ctx, -ENOMEM, "out of memory");
	if ((rc = rc_group_allgather_u64(g, (uint64_t)mine, all, &e))) {
		free(all);
		return fail(ctx, rc, "rank %d: %s", a->who.rank, ERR_TEXT(e));
	}
	for (int r = 0; r < W; r++)
		if (all[r] != (uint64_t)mine) {
			rc = fail(ctx, -EINVAL,
				  "rank %d runs on %llu rail%s and rank %d on %d: every rank needs as "
				  "many (--rails-per-rank, -d)",
				  r, (unsigned long long)all[r], all[r] == 1 ? "" : "s",
				  a->who.rank, mine);
			break;
		}
	free(all);
	return rc;
}

int group_rails_per_rank(struct ctx *ctx, const char *s, struct group_args *a)
{
	char *end;
	long n;

	a->rails_max = RC_RAILS_MAX;
	a->rails_per_rank = 0;
	if (!s)
		return 0;
	if (!strcmp(s, "all")) {
		a->rails_per_rank = -1;
		return 0;
	}
	errno = 0;
	n = strtol(s, &end, 10);
	if (errno || end == s || *end || n < 1 || n > RC_RAILS_MAX)
		return usage_err(ctx, "--rails-per-rank %s: expected 1 to %d, or all", s,
				 RC_RAILS_MAX);
	a->rails_per_rank = (int)n;
	return 0;
}

struct rc_group_setting *group_setting(struct group_settings *gs, const char *name, const char *fmt,
				       ...)
{
	struct rc_group_setting *s;
	va_list ap;

	if (gs->n == RC_GROUP_SETTINGS_MAX)
		abort(); /* a command's list is fixed: more is a bug, found by any run */
	s = &gs->s[gs->n];
	va_start(ap, fmt);
	vsnprintf(gs->text[gs->n], sizeof(gs->text[gs->n]), fmt, ap);
	va_end(ap);
	*s = (struct rc_group_setting){ .name = name, .text = gs->text[gs->n] };
	gs->n++;
	return s;
}

int group_agree(struct ctx *ctx, struct rc_group *g, int rank, const struct group_settings *gs)
{
	struct rc_err e;
	int rc = rc_group_agree(g, gs->s, gs->n, &e);

	if (rc == -EINVAL)
		return usage_err(ctx, "%s", ERR_TEXT(e));
	return rc ? fail(ctx, rc, "rank %d: %s", rank, ERR_TEXT(e)) : 0;
}

int group_join_rails(struct ctx *ctx, const struct group_args *a, const struct rc_group_join *j,
		     const struct group_settings *gs, struct rc_group **g)
{
	int n = a->nrails > 1 ? a->nrails : 1;

	for (int i = 0; i < n; i++) {
		char rdv[512];
		struct rc_group_join join = *j;
		struct rc_group_join_out how;
		struct rc_err e;
		int rc;

		join.rendezvous = group_rail_rendezvous(a, i, rdv, sizeof(rdv));
		join.listen = group_listen(a, i);
		join.dev_name = group_dev(ctx, a, i);
		if ((rc = rc_group_join(&join, &g[i], &how, &e))) {
			if (n > 1)
				return how.usage ? usage_err(ctx, "rail %d (%s): %s", i + 1,
							     join.dev_name, ERR_TEXT(e))
						 : fail(ctx, rc, "rail %d (%s): %s", i + 1,
							join.dev_name, ERR_TEXT(e));
			return how.usage ? usage_err(ctx, "%s", ERR_TEXT(e))
					 : fail(ctx, rc, "%s", ERR_TEXT(e));
		}
		if (i == 0 && a->rails_max > 1 && (rc = rails_agree(ctx, g[0], a)))
			return rc;
		if (i == 0 && gs && (rc = group_agree(ctx, g[0], a->who.rank, gs)))
			return rc;
	}
	return 0;
}

void group_rail_devs(struct rc_group *const *g, int n, char *buf, size_t cap)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && o < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? "," : "",
				      rc_group_dev(g[i]) ? rc_group_dev(g[i]) : "?");
}

static const char *rail_dev(struct rc_group *const *g, int i)
{
	return rc_group_dev(g[i]) ? rc_group_dev(g[i]) : "?";
}

static double rail_rate(const struct group_rail_fig *f)
{
	return f->seconds > 0 ? (double)f->bytes / f->seconds : 0;
}

void group_rail_begin(struct out *o, struct rc_group *const *g, const struct group_rail_fig *f,
		      int n, int i)
{
	uint64_t total = 0;

	for (int k = 0; k < n; k++)
		total += f[k].bytes;
	out_obj_begin(o, NULL);
	out_u64(o, "rail", "# rail %llu: ", (uint64_t)i + 1);
	out_str(o, "device", "%-10s", rail_dev(g, i));
	out_u64(o, "bytes", " bytes %llu", f[i].bytes);
	out_f64(o, "share", " share %.2f", total ? (double)f[i].bytes / (double)total : 0);
	out_f64(o, "seconds", " in %.4f s", f[i].seconds);
	out_f64(o, "gbyte_per_s", " (%.3f GB/s)", rail_rate(&f[i]) / 1e9);
}

/* The slowest rail's time below which no rail is judged slow: so short a
 * run cannot tell a slow rail from noise. */
#define RAIL_JUDGED_S 0.1

void group_rail_end(struct out *o, struct rc_group *const *g, const struct group_rail_fig *f, int n,
		    int i)
{
	double best = 0, slowest = 0, rate = rail_rate(&f[i]);

	for (int k = 0; k < n; k++) {
		best = rail_rate(&f[k]) > best ? rail_rate(&f[k]) : best;
		slowest = f[k].seconds > slowest ? f[k].seconds : slowest;
	}
	if (slowest >= RAIL_JUDGED_S && best > 0 && rate < 0.5 * best) {
		char msg[160];

		snprintf(msg, sizeof(msg), "rail %d (%s) ran at %.2fx the fastest rail's rate",
			 i + 1, rail_dev(g, i), rate / best);
		out_str(o, "finding", "; finding: %s", msg);
	} else {
		out_null(o, "finding");
	}
	out_text(o, "\n");
	out_obj_end(o);
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
		return usage_err(ctx, "%s", ERR_TEXT(e));
	opts_fill(ctx, c, v, first + GO_TOKEN, first + GO_METRICS + 1, a); /* strings */
	if ((rc = metrics_rank_path(ctx, a->metrics_arg, a)) ||
	    (rc = token_take(ctx, a->token_arg, a->token_file, a->token_buf, &a->token)))
		return rc;
	a->nrails = 0;
	memset(a->rail_dev, 0, sizeof(a->rail_dev));
	memset(a->rail_listen, 0, sizeof(a->rail_listen));
	if (a->rails)
		return group_rail(ctx, c, a);
	if ((ctx->dev_name && strchr(ctx->dev_name, ',')) || (a->listen && strchr(a->listen, ',')))
		return group_devs(ctx, c, a);
	return 0;
}

int group_plan_args(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		    const char *what, struct group_args *a)
{
	int world, rank, rc;

	a->rank = a->world = -1;
	if ((rc = opts_fill(ctx, c, v, first + GO_WORLD, first + GO_WORLD + 1, a)) ||
	    (rc = opts_fill(ctx, c, v, first + GO_RANK, first + GO_RANK + 1, a)))
		return rc;
	world = a->world;
	rank = a->rank;
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

int group_plan_rpn(struct ctx *ctx, int rpn, int world)
{
	if (rpn && world % rpn)
		return usage_err(ctx, "--ranks-per-node %d does not divide the world size %d", rpn,
				 world);
	return 0;
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

/* The group object, said in text too when text. */
static void group_put(struct out *o, const struct rc_group *g, bool text)
{
	struct rc_group_stats s;
	struct rusage ru;
	uint64_t rss = 0;

	rc_group_stats(g, &s);
	if (!getrusage(RUSAGE_SELF, &ru))
		rss = (uint64_t)ru.ru_maxrss * 1024; /* Linux counts KiB */
	if (text)
		out_text(o, "# group: rendezvous %.1f ms, connect %.1f ms", s.rendezvous_s * 1e3,
			 s.connect_s * 1e3);
	if (text && s.first_barrier_s >= 0)
		out_text(o, ", first barrier %.1f ms", s.first_barrier_s * 1e3);
	out_obj_begin(o, "group");
	out_f64(o, "rendezvous_s", NULL, s.rendezvous_s);
	out_f64(o, "connect_s", NULL, s.connect_s);
	if (s.first_barrier_s >= 0)
		out_f64(o, "first_barrier_s", NULL, s.first_barrier_s);
	else
		out_null(o, "first_barrier_s");
	out_i64(o, "tree_depth", text ? " (tree depth %lld)" : NULL, s.tree_depth);
	out_i64(o, "qps", text ? "; this rank: %lld QPs" : NULL, s.qps);
	out_i64(o, "cqs", !text ? NULL : s.cqs == 1 ? ", %lld CQ" : ", %lld CQs", s.cqs);
	out_u64(o, "ring_bytes", text ? ", %llu bytes of message rings" : NULL, s.ring_bytes);
	out_u64(o, "max_rss_bytes", text ? ", peak RSS %llu bytes\n" : NULL, rss);
	out_obj_end(o);
}

void group_report(struct out *o, const struct rc_group *g)
{
	group_put(o, g, true);
}

void group_report_data(struct out *o, const struct rc_group *g)
{
	group_put(o, g, false);
}

static const struct metric_row group_metric_rows[] = {
	{ "group.rendezvous_s", "rdmactl_group_rendezvous_seconds", METRIC_GAUGE,
	  "how long the rendezvous took" },
	{ "group.connect_s", "rdmactl_group_connect_seconds", METRIC_GAUGE,
	  "how long connecting to the peers took" },
	{ "group.qps", "rdmactl_group_queue_pairs", METRIC_GAUGE, "queue pairs this rank holds" },
};
const struct metric_table group_metric_table = METRIC_TABLE(group_metric_rows);
