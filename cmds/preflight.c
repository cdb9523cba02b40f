// SPDX-License-Identifier: MIT
/*
 * rdmactl preflight: before a job, every node's settings side by side.
 * Each rank reads its host's topology (the loader probe-topology uses; a
 * --sysfs tree instead of /sys), makes its record of the rail it runs on,
 * and the group (ranks met as sweep's and alltoall's are) gathers the
 * records to rank 0, which compares them (libcore's rc_pf_compare) and,
 * unless --no-probe, measures each rank against its neighbour with the
 * sweep's code. Every rank exits with the verdict: 0 clean, 1 findings.
 * With -j on any rank, rank 0's report goes back down the group's tree and
 * every rank prints it as its own document, naming its own rank.
 * With one rank (--world 1) there is no group: the node's own checks only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/group.h>
#include <rdmactl/preflight.h>
#include <rdmactl/topo.h>

#include "cmds.h"
#include "group_cmds.h"
#include "preflight.h"

#define PREFLIGHT_OPTS(X) \
	GROUP_OPTS(X, PF) \
	X(PF_SYSFS, "sysfs", 0, "DIR|FILE.tar.gz", "read a captured tree instead of /sys", \
	  COMP_FILE, .repeat = true, OPT_STR(struct pf_cli, sysfs, NULL)) \
	X(PF_BUFFER, "buffer", 0, "SIZE", "memory a rank will lock", \
	  OPT_SIZE(struct pf_cli, buffer, "64M")) \
	X(PF_DURATION, "duration", 0, "SECONDS", "burst a neighbour and direction", \
	  OPT_DOUBLE_ABOVE(struct pf_cli, probe.duration_s, 0, 60, "0.25")) \
	X(PF_MIN_PERCENT, "min-percent", 0, "P", "finding: below P% of expected", \
	  OPT_DOUBLE(struct pf_cli, min_percent, 0, 100, "0")) \
	X(PF_NO_PROBE, "no-probe", 0, NULL, "compare the settings only, measure nothing", \
	  OPT_FLAG(struct pf_cli, no_probe)) \
	X(PF_SVG, "svg", 0, "FILE", "rank 0 draws the settings grid as SVG", COMP_FILE, \
	  OPT_STR(struct pf_cli, svg, NULL))

struct pf_cli {
	struct group_args grp;
	const char *sysfs, *svg;
	const char *trees[REPEAT_MAX]; /* every --sysfs, in order */
	int ntrees;
	uint64_t buffer;
	double min_percent;
	bool no_probe;
	struct rc_pf_probe_opts probe;
};

enum { PREFLIGHT_OPTS(OPT_INDEX) PF_NOPTS };
static const struct cmd_opt preflight_opts[] = { PREFLIGHT_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(preflight_opts, PF_NOPTS);

static int parse(struct ctx *ctx, const struct opt_vals *v, struct pf_cli *a)
{
	const struct cmd *c = &cmd_preflight;
	int rc;

	if (v->npos)
		return usage_err(ctx, "preflight: unexpected argument '%s'", v->pos[0]);
	if ((rc = group_args_parse(ctx, c, v, PF_RANK, &a->grp)) ||
	    (rc = opts_fill(ctx, c, v, PF_SYSFS, PF_NOPTS, a)))
		return rc;
	for (int i = 0; i < v->nmulti; i++)
		if (v->multi_idx[i] == PF_SYSFS)
			a->trees[a->ntrees++] = v->multi[i];
	for (int i = 0; i < a->ntrees; i++)
		if (!*a->trees[i])
			return usage_err(ctx, "preflight: --sysfs needs a directory or a .tar.gz");
	if (a->ntrees > 1 && a->grp.who.world != 1)
		return usage_err(
			ctx,
			"preflight: %d --sysfs trees are compared by one process (--world 1); a rank of a group reads one",
			a->ntrees);
	if (!a->buffer)
		return usage_err(ctx, "invalid --buffer 0: expected 1 byte or more");
	if (a->grp.who.world < 1)
		return usage_err(ctx, "preflight needs a world of 1 rank or more");
	/* the waiting ranks wait in a barrier, within the timeout */
	if (!a->no_probe && a->probe.duration_s * 1000 * 2 > ctx->timeout_ms)
		return usage_err(ctx, "--duration %g s needs a timeout (-t) of at least %.0f ms",
				 a->probe.duration_s, a->probe.duration_s * 2000);
	if (a->grp.who.world == 1)
		return a->grp.metrics[0] ? metrics_path_check(ctx, a->grp.metrics) : 0;
	return group_rendezvous_ready(ctx, "preflight", &a->grp);
}

/* This rank's record: its topology, its rail (the group's device, else
 * -d's, else the first with an ACTIVE port). A topology that cannot be
 * read is said in the record, for rank 0 to report. */
static void my_record(struct ctx *ctx, const char *sysfs, const char *dev, struct rc_pf_node *n,
		      int *nrails)
{
	char root[4096], tmpdir[4096] = "";
	struct rc_topo_opts to = { .name = sysfs };
	struct rc_topo *t = NULL;
	struct rc_err e;
	int rc = 0;

	memset(n, 0, sizeof(*n) * RC_PF_RAILS_MAX);
	*nrails = 1;
	if (sysfs &&
	    !(rc = rc_topo_open_tree(sysfs, root, sizeof(root), tmpdir, sizeof(tmpdir), &e)))
		to.root = root;
	if (!rc)
		rc = rc_topo_load(&to, &t, &e);
	if (!rc)
		rc = rc_pf_node_fill_rails(t, dev ? dev : ctx->dev_name, 0, ctx->gid_index,
					   RDMACTL_VERSION, n, RC_PF_RAILS_MAX, nrails, &e);
	if (rc)
		snprintf(n->error, sizeof(n->error), "%.159s", ERR_TEXT(e));
	if (rc && !n->loaded)
		rc_pf_node_unknown(n);
	rc_topo_free(t);
	if (tmpdir[0])
		rc_topo_rmtree(tmpdir);
}

/* A ring: each rank with the next (the probe's pairs, and the tree the
 * records go up). */
static int plan(void *arg, const struct rc_endpoint *all, int W, uint8_t *need, struct rc_err *err)
{
	(void)arg;
	(void)all;
	(void)err;
	for (int i = 0; i < W; i++) {
		int j = (i + 1) % W;

		if (i != j)
			need[(size_t)i * (size_t)W + (size_t)j] =
				need[(size_t)j * (size_t)W + (size_t)i] = 1;
	}
	return 0;
}

/* Several ranks: the group, the records to rank 0, the probe. */
static int run_group(struct ctx *ctx, struct pf_cli *a, struct rc_group **g, struct rc_pf_node *all,
		     int *nrows, struct rc_sweep_result *res)
{
	struct rc_group_join join = { .rank = a->grp.who.rank,
				      .world = a->grp.who.world,
				      .rendezvous = a->grp.rendezvous,
				      .listen = group_listen(&a->grp, 0),
				      .token = a->grp.token,
				      .dev_name = group_dev(ctx, &a->grp, 0),
				      .timeout_ms = ctx->timeout_ms,
				      .partial = true,
				      .plan = plan };
	struct rc_group_join_out how;
	struct rc_pf_node mine[RC_PF_RAILS_MAX];
	struct rc_err e;
	int rc, nmine;

	if ((rc = rc_group_join(&join, g, &how, &e)))
		return how.usage ? usage_err(ctx, "%s", ERR_TEXT(e))
				 : fail(ctx, rc, "%s", ERR_TEXT(e));
	my_record(ctx, a->sysfs, rc_group_dev(*g), mine, &nmine);
	if ((rc = rc_pf_gather_rails(*g, mine, nmine, all, nrows, &e)))
		return fail(ctx, rc, "rank %d: %s", a->grp.who.rank, ERR_TEXT(e));
	if (a->no_probe)
		return 0;
	a->probe.sysfs = NULL; /* the counters are the live device's */
	if ((rc = rc_pf_probe(*g, &a->probe, res, &e)))
		return fail(ctx, rc, "rank %d: %s", a->grp.who.rank, ERR_TEXT(e));
	return 0;
}

/* The comparison as rank 0 made it (every key of its document but
 * schema_version and svg, its own file), one compact text. */
static char *report_text(struct ctx *ctx, size_t *len)
{
	json_t *doc = json_copy(out_tree(&ctx->out));
	char *s;

	if (!doc)
		return NULL;
	json_object_del(doc, "schema_version");
	json_object_del(doc, "svg");
	s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	*len = s ? strlen(s) : 0;
	return s;
}

/* Rank 0's report into this rank's document, its keys in their order. */
static int report_merge(struct ctx *ctx, const char *s, size_t len)
{
	json_error_t jerr;
	json_t *doc = json_loadb(s, len, JSON_REJECT_DUPLICATES, &jerr), *v;
	const char *key;

	if (!json_is_object(doc)) {
		json_decref(doc);
		return fail(ctx, -EPROTO, "rank 0's report could not be read: %s",
			    doc ? "not an object" : jerr.text);
	}
	json_object_foreach(doc, key, v)
	{
		if (strcmp(key, "schema_version"))
			out_json(&ctx->out, key, json_incref(v));
	}
	json_decref(doc);
	return 0;
}

/* -j on any rank: rank 0's report down the tree to every rank, which makes
 * it its own document's (text stays rank 0's alone). */
static int report_share(struct ctx *ctx, struct rc_group *g, int me)
{
	size_t len = 0;
	char *s = me == 0 ? report_text(ctx, &len) : NULL;
	struct rc_err e;
	int rc = rc_pf_share(g, &s, &len, PF_REPORT_MAX, &e);

	if (rc)
		rc = fail(ctx, rc, "rank %d: %s", me, ERR_TEXT(e));
	else if (me)
		rc = report_merge(ctx, s, len);
	free(s);
	return rc;
}

/* Every rank: the verdict from rank 0 (so that a launcher sees it on any
 * rank) and, where any rank prints -j, the report. */
static int verdict(struct ctx *ctx, struct rc_group *g, int W, int me, bool *clean)
{
	int rc;
	uint64_t *all = calloc((size_t)W, sizeof(*all));
	bool json = false;
	struct rc_err e;

	if (!all)
		return fail(ctx, -ENOMEM, "out of memory");
	/* bit 0: rank 0's verdict; bit 1: this rank prints -j */
	rc = rc_group_allgather_u64(g, (me == 0 && *clean) | (uint64_t)out_is_json(&ctx->out) << 1,
				    all, &e);
	if (rc)
		rc = fail(ctx, rc, "rank %d: %s", me, ERR_TEXT(e));
	for (int i = 0; !rc && i < W; i++)
		json |= all[i] >> 1 & 1;
	if (!rc)
		*clean = all[0] & 1;
	if (!rc && json)
		rc = report_share(ctx, g, me);
	free(all);
	return rc;
}

static int run(struct ctx *ctx, struct pf_cli *a)
{
	/* one process over several trees: a node each */
	int W = a->ntrees > 1 ? a->ntrees : a->grp.who.world, me = a->grp.who.rank, rc = 0;
	int nrows = 0; /* the records: every node's rails */
	struct rc_pf_node *all = calloc((size_t)W * RC_PF_RAILS_MAX, sizeof(*all));
	struct rc_sweep_result res = { 0 };
	struct rc_group *g = NULL;
	bool metrics = group_metrics_on(&a->grp, 0), clean = true;
	struct metrics m;

	metrics_init(&m);
	metrics_label(&m, "command", "preflight");
	metrics_label_u64(&m, "rank", (uint64_t)me);
	/* rank 0 of a group keeps its document, which -j on any rank shares */
	if (metrics || (a->grp.who.world > 1 && me == 0))
		out_keep_tree(&ctx->out);
	if (!all) {
		rc = fail(ctx, -ENOMEM, "out of memory");
		goto out;
	}
	if (a->grp.who.world == 1)
		for (int i = 0, nr; i < W; i++) {
			my_record(ctx, a->sysfs ? a->trees[i] : NULL, NULL, &all[nrows], &nr);
			for (int k = 0; k < nr; k++)
				all[nrows + k].rank = i;
			nrows += nr;
		}
	else if ((rc = run_group(ctx, a, &g, all, &nrows, &res)))
		goto out;
	if (me == 0) {
		struct pf_report r = { .world = W,
				       .rank_source = a->grp.who.source,
				       .rendezvous = g ? rc_group_rdv_kind(g) : NULL,
				       .nodes = all,
				       .nrows = nrows,
				       .probe = res.m ? &res : NULL,
				       .probe_duration_s = a->probe.duration_s,
				       .min_percent = a->min_percent,
				       .buffer = a->buffer,
				       .svg = a->svg };

		rc = pf_report(ctx, &r, &clean);
	}
	if (g && !rc)
		rc = verdict(ctx, g, W, me, &clean);
	if (!rc)
		out_i64(&ctx->out, "rank", NULL, me);
	if (!rc && me != 0 && !out_is_json(&ctx->out))
		ctx->out.printed = true; /* the text is rank 0's alone */
	if (g)
		group_report_data(&ctx->out, g);
	if (!rc && !clean)
		ctx->exit_code = EXIT_FAIL;
out:
	rc_sweep_result_free(&res);
	rc_group_close(g);
	free(all);
	if (metrics) {
		metrics_render(&m, out_tree(&ctx->out), &pf_metric_table);
		metrics_render(&m, out_tree(&ctx->out), &group_metric_table);
		rc = metrics_commit(ctx, &m, a->grp.metrics, rc);
	}
	metrics_free(&m);
	return rc;
}

static int do_preflight(struct ctx *ctx, int argc, char **argv)
{
	struct pf_cli a = { 0 };
	struct opt_vals v;
	int rc = opts_parse(ctx, &cmd_preflight, argc, argv, &v);

	if (rc)
		return rc < 0 ? rc : 0;
	if (!(rc = parse(ctx, &v, &a)))
		rc = run(ctx, &a);
	return rc;
}

const struct cmd cmd_preflight = {
	.name = "preflight",
	.run = do_preflight,
	.opts = preflight_opts,
	.summary = "before a job: every node's RDMA settings compared, with fixes",
};
