// SPDX-License-Identifier: MIT
/*
 * rdmactl alltoall: MoE dispatch and combine over a group of ranks. The
 * options are read here (parse); the group (rc_group_join) and the exchange
 * (libcore/a2a) do the work (run); the figures follow nccl-tests'
 * conventions (report).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/a2a.h>
#include <rdmactl/group.h>

#include "cmds.h"
#include "client_cmds.h"
#include "group_cmds.h"
#include "alltoall.h"

#define ALLTOALL_OPTS(X) \
	GROUP_OPTS(X, A2A) \
	GROUP_RAILS_OPT(X, A2A, struct a2a_cli) \
	X(A2A_ALGO, "algo", 'a', "ALGO", \
	  "flat (every rank connects to every other), ring (to its two " \
	  "neighbours) or hierarchical (to the ranks of its node, and over the rail to the rank of the " \
	  "same local index on every other node)", \
	  COMP_WORDS, "flat|ring|hierarchical", OPT_WORD(struct a2a_cli, algo, "flat")) \
	X(A2A_RANKS_PER_NODE, "ranks-per-node", 0, "N", "ranks per node (default: by host name)", \
	  OPT_INT(struct a2a_cli, run.ranks_per_node, 1, RC_GROUP_MAX, NULL)) \
	X(A2A_HIDDEN, "hidden", 0, "N", "elements per token", \
	  OPT_U32(struct a2a_cli, run.hidden, 1, 1 << 24, "7168")) \
	X(A2A_DTYPE, "dtype", 0, "TYPE", "bf16 or fp8 (scaled per 128)", COMP_WORDS, "bf16|fp8", \
	  OPT_WORD(struct a2a_cli, dtype, "bf16")) \
	X(A2A_TOKENS, "tokens", 0, "N", "tokens per rank", \
	  OPT_U32(struct a2a_cli, route.tokens, 1, 1 << 24, "128")) \
	X(A2A_EXPERTS, "experts", 'E', "N", "experts over the ranks (default: 8 a rank)", \
	  OPT_U32(struct a2a_cli, route.experts, 1, 1 << 24, NULL)) \
	X(A2A_TOPK, "topk", 'k', "K", "experts per token", \
	  OPT_U32(struct a2a_cli, route.topk, 1, 1 << 24, "2")) \
	X(A2A_SKEW, "skew", 0, "MODEL", "uniform, zipf:S, matrix:FILE", \
	  OPT_STR(struct a2a_cli, skew, "uniform")) \
	X(A2A_SEED, "seed", 0, "N", "routing seed", OPT_U64(struct a2a_cli, route.seed, "1")) \
	X(A2A_ITERS, "iters", 'n', "N", "timed iterations", \
	  OPT_INT(struct a2a_cli, run.iters, 1, 1 << 24, "20")) \
	X(A2A_WARMUP, "warmup", 0, "N", "untimed iterations first", \
	  OPT_INT(struct a2a_cli, run.warmup, 0, 1 << 20, "2")) \
	X(A2A_MEM, "mem", 0, "KIND", "host, hugepage or cuda[:N]", COMP_WORDS, \
	  "host|hugepage|cuda", OPT_STR(struct a2a_cli, mem, "host")) \
	X(A2A_NO_CHECK, "no-check", 0, NULL, "do not check the received tokens", \
	  OPT_FLAG(struct a2a_cli, no_check)) \
	X(A2A_ALL_RANKS, "all-ranks", 0, NULL, "every rank prints its figures, not only rank 0", \
	  OPT_FLAG(struct a2a_cli, all_ranks)) \
	X(A2A_SVG, "svg", 0, "FILE", "rank 0 draws bytes per peer as SVG", COMP_FILE, \
	  OPT_STR(struct a2a_cli, svg, NULL)) \
	X(A2A_BACKGROUND, "background", 0, "MODE", "rerun under bulk WRITEs: pairs", COMP_WORDS, \
	  "none|pairs", OPT_WORD(struct a2a_cli, bg_mode, "none")) \
	X(A2A_BACKGROUND_SIZE, "background-size", 0, "SIZE", "--background: bytes a bulk WRITE", \
	  OPT_SIZE(struct a2a_cli, bg_size, "64K"), OPT_GIVEN(struct a2a_cli, bg_size_given)) \
	X(A2A_BACKGROUND_DEPTH, "background-depth", 0, "N", "--background: bulk WRITEs in flight", \
	  OPT_INT(struct a2a_cli, run.bg_depth, 1, 1024, "4"), \
	  OPT_GIVEN(struct a2a_cli, bg_depth_given)) \
	X(A2A_FABRIC, "fabric", 0, "FABRIC", FABRIC_HELP, COMP_WORDS, FABRIC_WORDS, \
	  OPT_STR(struct a2a_cli, fabric_arg, NULL)) \
	X(A2A_BUSY_POLL, "busy-poll", 0, NULL, "busy-poll the completion queues", \
	  OPT_FLAG(struct a2a_cli, busy_poll)) \
	X(A2A_PLAN, "plan", 0, NULL, "size the job and exit (needs --world)", \
	  OPT_FLAG(struct a2a_cli, plan))

enum { ALLTOALL_OPTS(OPT_INDEX) A2A_NOPTS };
static const struct cmd_opt alltoall_opts[] = { ALLTOALL_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(alltoall_opts, A2A_NOPTS);

/* --fabric: over libfabric, the flat and ring algorithms on one rail, host
 * memory, no background; each other choice named. */
static int parse_fabric(struct ctx *ctx, const struct opt_vals *v, struct a2a_cli *a)
{
	const char *what = NULL;
	int rc;

	opts_fill(ctx, &cmd_alltoall, v, A2A_FABRIC, A2A_FABRIC + 1, a);
	if (a->plan)
		return 0;
	if ((rc = fabric_pick(ctx, "alltoall", a->fabric_arg, &a->fab)))
		return rc;
	if (a->fab.kind != RC_FABRIC_OFI)
		return 0;
	if (a->run.algo == RC_A2A_HIER)
		what = "--algo hierarchical (its node's shared segment)";
	else if (a->run.bg_mode)
		what = "--background";
	else if (a->grp.nrails > 1)
		what = "several rails";
	else if (a->run.mem.kind != RC_MEM_HOST && a->run.mem.kind != RC_MEM_HUGEPAGE)
		what = "GPU memory";
	if (what)
		return usage_err(ctx,
				 "alltoall: %s runs over verbs only (--fabric verbs), not yet "
				 "over libfabric",
				 what);
	return 0;
}

static int parse(struct ctx *ctx, const struct opt_vals *v, struct a2a_cli *a)
{
	const struct cmd *c = &cmd_alltoall;
	int rc;
	struct rc_err e;
	char why[sizeof(e.msg) + 64];

	opts_fill(ctx, c, v, A2A_PLAN, A2A_PLAN + 1, a);
	opts_fill(ctx, c, v, A2A_RAILS_PER_RANK, A2A_RAILS_PER_RANK + 1, a); /* a string */
	if ((rc = group_rails_per_rank(ctx, a->grp.rails_per_rank_arg, &a->grp)))
		return rc;
	if ((rc = a->plan ? group_plan_args(ctx, c, v, A2A_RANK, "alltoall", &a->grp)
			  : group_args_parse(ctx, c, v, A2A_RANK, &a->grp)) ||
	    (rc = opts_fill(ctx, c, v, A2A_ALGO, A2A_ALGO + 1, a)) ||
	    (rc = opts_fill(ctx, c, v, A2A_DTYPE, A2A_DTYPE + 1, a)) ||
	    (rc = opts_fill(ctx, c, v, A2A_RANKS_PER_NODE, A2A_RANKS_PER_NODE + 1, a)) ||
	    (a->plan && (rc = group_plan_rpn(ctx, a->run.ranks_per_node, a->grp.who.world))) ||
	    (rc = opts_fill(ctx, c, v, A2A_SEED, A2A_SEED + 1, a)))
		return rc;
	if (a->grp.rails_per_rank_given && !a->grp.rails && !a->plan)
		return usage_err(ctx, "--rails-per-rank takes the rails of --rails PLAN: give it "
				      "too (or -d DEV1,DEV2 with --listen ADDR1,ADDR2)");
	if (a->plan && a->algo == RC_A2A_HIER && !a->run.ranks_per_node)
		return usage_err(ctx,
				 "alltoall --plan --algo hierarchical needs --ranks-per-node N (a run "
				 "takes it from the host names)");
	if (a->grp.who.world < 2)
		return usage_err(ctx, "alltoall needs at least 2 ranks (the world size is %d)",
				 a->grp.who.world);
	a->run.algo = (enum rc_a2a_algo)a->algo;
	a->run.dtype = (enum rc_a2a_dtype)a->dtype;
	a->route.world = a->grp.who.world;
	a->route.experts = 8 * (uint32_t)a->grp.who.world;
	if ((rc = opts_fill(ctx, c, v, A2A_HIDDEN, A2A_HIDDEN + 1, a)) ||
	    (rc = opts_fill(ctx, c, v, A2A_TOKENS, A2A_SKEW + 1, a)) ||
	    (rc = opts_fill(ctx, c, v, A2A_ITERS, A2A_WARMUP + 1, a)))
		return rc;
	if (a->skew && rc_a2a_skew_parse(a->skew, &a->route, &e))
		return usage_err(ctx, "%s", cmds_err_text(&e, why, sizeof(why)));
	/* A matrix file that cannot be read fails (1) as every input file. */
	if (a->route.skew == RC_A2A_MATRIX &&
	    (rc = input_file(ctx, "--skew matrix", a->route.matrix)))
		return rc;
	opts_fill(ctx, c, v, A2A_NO_CHECK, A2A_SVG + 1, a);
	opts_fill(ctx, c, v, A2A_BUSY_POLL, A2A_BUSY_POLL + 1, a);
	if ((rc = a2a_bg_parse(ctx, c, v, A2A_BACKGROUND, a)))
		return rc;
	if (a->svg && a->grp.who.rank == 0 && !a->plan && (rc = output_file(ctx, "--svg", a->svg)))
		return rc;
	a->run.check = !a->no_check;
	opts_fill(ctx, c, v, A2A_MEM, A2A_MEM + 1, a); /* a string */
	if ((rc = opt_mem(ctx, a->mem, true, NULL, &a->run.mem.kind, &a->run.mem.gpu)))
		return rc;
	if ((rc = parse_fabric(ctx, v, a)))
		return rc;
	if (!a->grp.rendezvous && !a->plan)
		return usage_err(ctx,
				 "alltoall needs --rendezvous etcd://HOST:PORT/JOB or file:PATH");
	a->counts = calloc((size_t)a->grp.who.world * (size_t)a->grp.who.world, sizeof(uint64_t));
	if (!a->counts)
		return fail(ctx, -ENOMEM, "out of memory");
	if (rc_a2a_counts(&a->route, a->counts, &e))
		return usage_err(ctx, "%s", ERR_TEXT(e));
	if (rc_a2a_counts_fit(a->counts, a->grp.who.world,
			      rc_a2a_token_bytes(a->run.hidden, a->run.dtype), &e))
		return a->route.skew == RC_A2A_MATRIX
			       ? usage_err(ctx, "--skew %s: %s", a->skew, ERR_TEXT(e))
			       : usage_err(ctx, "%s", ERR_TEXT(e));
	a->run.counts = a->counts;
	if (a->plan)
		return 0;
	/* No driver or no such GPU, an unreadable peers file: said before the
	 * group is joined. */
	if ((rc = opt_mem_ready(ctx, a->mem, a->run.mem.kind, a->run.mem.gpu)))
		return rc;
	return group_rendezvous_ready(ctx, "alltoall", &a->grp);
}

/* Hierarchical without --ranks-per-node: nodes by host name, which must
 * form equal blocks of consecutive ranks. */
static int nodes_by_host(struct a2a_cli *a, const struct rc_endpoint *all, struct rc_err *err)
{
	int W = a->grp.who.world, L = 0;

	if (!all[0].hostname[0])
		return rc_err_set(
			err, EINVAL,
			"--algo hierarchical: the rendezvous names no hosts; give --ranks-per-node");
	while (L < W && !strcmp(all[L].hostname, all[0].hostname))
		L++;
	for (int i = 0; i < W; i++)
		for (int j = 0; j < W; j++)
			if ((i / L == j / L) != !strcmp(all[i].hostname, all[j].hostname) || W % L)
				return rc_err_set(
					err, EINVAL,
					"--algo hierarchical: the ranks of each host are not an equal block of consecutive ranks; give --ranks-per-node");
	a->run.ranks_per_node = L;
	return 0;
}

/* Which ranks connect: the algorithm's plan, once the nodes are known. */
static int plan(void *arg, const struct rc_endpoint *all, int W, uint8_t *need, struct rc_err *err)
{
	struct a2a_cli *a = arg;
	int rc;

	if (a->run.algo == RC_A2A_HIER && !a->run.ranks_per_node &&
	    (rc = nodes_by_host(a, all, err)))
		return rc;
	if (a->run.algo == RC_A2A_HIER && W % a->run.ranks_per_node)
		return rc_err_set(err, EINVAL,
				  "--ranks-per-node %d does not divide the world size %d",
				  a->run.ranks_per_node, W);
	rc_a2a_need(a->run.algo, W, a->run.ranks_per_node, need);
	return 0;
}

static void progress(void *arg, int done, int total)
{
	progress_say(arg, done == total, "iteration %d/%d", done, total);
}

/* What every rank must be given alike: the tokens each sends each (the
 * routing: --skew's counts compared, so that two paths to one matrix
 * agree), their size, the iterations and the algorithm. */
static void settings(const struct a2a_cli *a, struct group_settings *gs)
{
	size_t W = (size_t)a->grp.who.world;
	struct rc_group_setting *s;

	group_setting(gs, "--algo", "%s", rc_a2a_algo_name(a->run.algo));
	s = group_setting(gs, "--ranks-per-node", "%.0d", a->run.ranks_per_node);
	s->any_if_empty = true; /* not given: by host name */
	group_setting(gs, "--hidden", "%u", a->run.hidden);
	group_setting(gs, "--dtype", "%s", a->run.dtype == RC_A2A_FP8 ? "fp8" : "bf16");
	group_setting(gs, "--tokens", "%u", a->route.tokens);
	group_setting(gs, "--experts", "%u", a->route.experts);
	group_setting(gs, "--topk", "%u", a->route.topk);
	if (a->route.skew != RC_A2A_MATRIX)
		group_setting(gs, "--seed", "%llu", (unsigned long long)a->route.seed);
	s = group_setting(gs, "--skew", "%s", a->skew);
	s->data = a->counts;
	s->len = W * W * sizeof(*a->counts);
	group_setting(gs, "--iters", "%d", a->run.iters);
	group_setting(gs, "--warmup", "%d", a->run.warmup);
	group_setting(gs, "--background", "%s", rc_a2a_bg_name(a->run.bg_mode));
	group_setting(gs, "--background-size", "%u", a->run.bg_size);
	group_setting(gs, "--background-depth", "%d", a->run.bg_depth);
}

/* --metrics: the report's figures and the group's, then the outcome. */
static int metrics_end(struct ctx *ctx, struct metrics *m, const char *path, int rc)
{
	json_t *doc = out_tree(&ctx->out);

	metrics_labels_from(m, doc, "algo,device");
	metrics_render(m, doc, &a2a_metric_table);
	metrics_render(m, doc, &group_metric_table);
	return metrics_commit(ctx, m, path, rc);
}

static int run(struct ctx *ctx, struct a2a_cli *a)
{
	int W = a->grp.who.world, n = a->grp.nrails > 1 ? a->grp.nrails : 1, rc;
	struct rc_group_join join = { .rank = a->grp.who.rank,
				      .world = W,
				      .token = a->grp.token,
				      .timeout_ms = ctx->timeout_ms,
				      .busy_poll = a->busy_poll,
				      .fabric = a->fab.kind == RC_FABRIC_OFI ? a->fab.prov : NULL,
				      .plan = plan,
				      .plan_arg = a };
	struct rc_a2a_result res[RC_RAILS_MAX] = { { 0 } };
	double *lat = calloc((size_t)a->run.iters * (size_t)(n + 4), sizeof(double));
	uint64_t *wrong = calloc((size_t)W, sizeof(uint64_t)), total_wrong = 0;
	struct rc_group *g[RC_RAILS_MAX] = { 0 }, *bg = NULL;
	struct group_settings gs = { .n = 0 };
	struct progress prog;
	struct rc_err e;
	bool speak = a->all_ranks || a->grp.who.rank == 0;
	bool metrics = group_metrics_on(&a->grp, 0);
	struct metrics m;

	metrics_init(&m);
	metrics_label(&m, "command", "alltoall");
	metrics_label_u64(&m, "rank", (uint64_t)a->grp.who.rank);
	if (metrics)
		out_keep_tree(&ctx->out);
	if (!lat || !wrong) {
		free(lat);
		free(wrong);
		return fail(ctx, -ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++)
		res[i].lat_us = lat + (size_t)i * (size_t)a->run.iters;
	settings(a, &gs);
	if ((rc = group_join_rails(ctx, &a->grp, &join, &gs, g)) ||
	    (a->run.bg_mode &&
	     (rc = a2a_bg_join(ctx, a, &res[0], lat + (size_t)n * (size_t)a->run.iters, &bg))))
		goto out;
	a->run.bg = bg;
	a->run.job = a->grp.rendezvous;
	a->run.timeout_ms = ctx->timeout_ms;
	progress_init(&prog, ctx);
	prog.on = prog.on && speak;
	a->run.progress = progress;
	a->run.progress_arg = &prog;
	rc = rc_a2a_run_rails(g, n, &a->run, res, &e);
	progress_end(&prog);
	if (!rc)
		a2a_merge_rails(a, n, res, g);
	if (!rc)
		rc = rc_group_allgather_u64(g[0], res[0].wrong, wrong, &e);
	if (rc) {
		rc = fail(ctx, rc, "rank %d: %s", a->grp.who.rank, ERR_TEXT(e));
		goto out;
	}
	for (int i = 0; i < W; i++)
		total_wrong += wrong[i];
	/* a rank that writes --metrics builds its report, printed or not */
	out_mute(&ctx->out, !speak);
	if (speak || metrics)
		a2a_report(ctx, a, &res[0], total_wrong, g, n);
	out_mute(&ctx->out, false);
	if (!speak && !total_wrong)
		ctx->out.printed =
			true; /* only rank 0 prints the document; every rank its failure */
	if (a->svg && a->grp.who.rank == 0 && (rc = a2a_draw(a)))
		rc = fail(ctx, rc, "--svg %s: %s", a->svg, strerror(-rc));
	else if (a->svg && a->grp.who.rank == 0)
		out_str(&ctx->out, "svg", speak ? "# heatmap: %s\n" : NULL, a->svg);
	if (total_wrong)
		rc = fail(ctx, -EIO, "%llu tokens arrived wrong", (unsigned long long)total_wrong);
out:
	rc_group_close(bg);
	for (int i = n - 1; i >= 0; i--)
		rc_group_close(g[i]);
	if (metrics)
		rc = metrics_end(ctx, &m, a->grp.metrics, rc);
	metrics_free(&m);
	free(lat);
	free(wrong);
	return rc;
}

/* --plan: the job's figures from the connection plan rc_a2a_need gives and
 * the token buffers rc_a2a_run would register, for every rank. */
static int plan_print(struct ctx *ctx, struct a2a_cli *a)
{
	int W = a->grp.who.world, rc;
	uint8_t *need = malloc((size_t)W * (size_t)W);
	uint64_t *bytes = calloc((size_t)W, sizeof(uint64_t));
	struct out *o = &ctx->out;
	struct group_plan_in in = { .need = need,
				    .world = W,
				    .buf_bytes = bytes,
				    .buf_what = "token buffer",
				    .ranks_per_node = a->run.ranks_per_node,
				    .rank = a->grp.who.rank };
	struct rc_err e;

	if (!need || !bytes) {
		rc = fail(ctx, -ENOMEM, "out of memory");
		goto out;
	}
	rc_a2a_need(a->run.algo, W, a->run.ranks_per_node, need);
	if ((rc = rc_a2a_reg_bytes(&a->run, W, bytes, &e))) {
		rc = rc == -EINVAL ? usage_err(ctx, "%s", ERR_TEXT(e))
				   : fail(ctx, rc, "%s", ERR_TEXT(e));
		goto out;
	}
	out_bool(o, "plan", NULL, true);
	out_str(o, "algo", "# alltoall plan: algo %s", rc_a2a_algo_name(a->run.algo));
	out_u64(o, "ranks", ", %llu ranks", (uint64_t)W);
	if (a->run.ranks_per_node)
		out_u64(o, "ranks_per_node", ", %llu per node", (uint64_t)a->run.ranks_per_node);
	else
		out_null(o, "ranks_per_node");
	out_u64(o, "tokens", "; %llu tokens a rank", a->route.tokens);
	out_u64(o, "token_bytes", " of %llu bytes",
		(uint64_t)rc_a2a_token_bytes(a->run.hidden, a->run.dtype));
	out_u64(o, "topk", ", top-%llu", a->route.topk);
	out_u64(o, "experts", " of %llu experts\n", a->route.experts);
	rc = group_plan_print(ctx, &in);
out:
	free(need);
	free(bytes);
	return rc;
}

/* Test hook, kept out of help: RDMACTL_TEST_A2A_CORRUPT=PHASE:RANK:TOKEN
 * (PHASE dispatch or combine) makes that token of RANK's send buffer arrive
 * wrong once (struct rc_a2a_opts.corrupt), so the tests see the check fail. */
static int test_hook(struct ctx *ctx, struct a2a_cli *a)
{
	const char *s = getenv("RDMACTL_TEST_A2A_CORRUPT");
	char phase[16], rest;
	int rank;
	unsigned long long tok;

	if (!s || !*s)
		return 0;
	if (sscanf(s, "%15[a-z]:%d:%llu%c", phase, &rank, &tok, &rest) != 3 ||
	    (strcmp(phase, "dispatch") && strcmp(phase, "combine")) || rank < 0 ||
	    rank >= a->grp.who.world)
		return usage_err(
			ctx,
			"RDMACTL_TEST_A2A_CORRUPT=%s: not dispatch|combine:RANK:TOKEN with RANK below %d",
			s, a->grp.who.world);
	a->run.corrupt.on = true;
	a->run.corrupt.phase = strcmp(phase, "dispatch") ? 1 : 0;
	a->run.corrupt.rank = rank;
	a->run.corrupt.token = tok;
	return 0;
}

static int do_alltoall(struct ctx *ctx, int argc, char **argv)
{
	struct a2a_cli a = { 0 };
	struct opt_vals v;
	int rc = opts_parse(ctx, &cmd_alltoall, argc, argv, &v);

	if (rc)
		return rc < 0 ? rc : 0;
	rc = parse(ctx, &v, &a);
	if (!rc && a.plan)
		rc = plan_print(ctx, &a);
	else if (!rc)
		rc = test_hook(ctx, &a);
	if (!rc && !a.plan)
		rc = run(ctx, &a);
	free(a.counts);
	return rc;
}

const struct cmd cmd_alltoall = {
	.name = "alltoall",
	.run = do_alltoall,
	.opts = alltoall_opts,
	.summary = "MoE dispatch and combine over a group of ranks",
};
