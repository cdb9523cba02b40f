// SPDX-License-Identifier: MIT
/*
 * rdmactl kvxfer: prefill-to-decode KV-cache transfer. `plan` does the
 * arithmetic without a device; `serve` is a decode rank receiving pages;
 * `send` is a prefill rank streaming them layer by layer. The three are
 * nested commands, as iproute2 and bpftool nest theirs: `kvxfer SUB` finds
 * SUB in a table of its own, and SUB parses the rest against its own option
 * table, which holds only the options it takes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rdmactl/parse.h>

#include "cmds.h"
#include "kvxfer.h"

/* kvxfer's own table: every option of every sub-command (help, the man
 * page, completion), at the KVX_* indexes the sub-commands read. */
static const struct cmd_opt kvxfer_opts[] = { KVXFER_OPTS(KVX_ENTRY) OPT_END };
OPTS_BOUND(kvxfer_opts, KVX_NOPTS);

/* One sub-command's options from the same list: its dense enum of indexes
 * (SUB_INDEX), its table (SUB_ENTRY) and, for each of its indexes, kvxfer's
 * (SUB_MAP), so the handlers read every sub-command's options by KVX_*. */
#define KVX_IF_1(...) __VA_ARGS__
#define KVX_IF_0(...)
#define PLAN_INDEX(id, plan, serve, send, ...) KVX_IF_##plan(PLAN_##id, )
#define PLAN_ENTRY(id, plan, serve, send, ...) KVX_IF_##plan([PLAN_##id] = { __VA_ARGS__ }, )
#define PLAN_MAP(id, plan, serve, send, ...) KVX_IF_##plan(id, )
#define SERVE_INDEX(id, plan, serve, send, ...) KVX_IF_##serve(SERVE_##id, )
#define SERVE_ENTRY(id, plan, serve, send, ...) KVX_IF_##serve([SERVE_##id] = { __VA_ARGS__ }, )
#define SERVE_MAP(id, plan, serve, send, ...) KVX_IF_##serve(id, )
#define SEND_INDEX(id, plan, serve, send, ...) KVX_IF_##send(SEND_##id, )
#define SEND_ENTRY(id, plan, serve, send, ...) KVX_IF_##send([SEND_##id] = { __VA_ARGS__ }, )
#define SEND_MAP(id, plan, serve, send, ...) KVX_IF_##send(id, )

enum { KVXFER_OPTS(PLAN_INDEX) PLAN_NOPTS };
enum { KVXFER_OPTS(SERVE_INDEX) SERVE_NOPTS };
enum { KVXFER_OPTS(SEND_INDEX) SEND_NOPTS };
static const struct cmd_opt plan_opts[] = { KVXFER_OPTS(PLAN_ENTRY) OPT_END };
static const struct cmd_opt serve_opts[] = { KVXFER_OPTS(SERVE_ENTRY) OPT_END };
static const struct cmd_opt send_opts[] = { KVXFER_OPTS(SEND_ENTRY) OPT_END };
OPTS_BOUND(plan_opts, PLAN_NOPTS);
OPTS_BOUND(serve_opts, SERVE_NOPTS);
OPTS_BOUND(send_opts, SEND_NOPTS);
static const int plan_map[] = { KVXFER_OPTS(PLAN_MAP) };
static const int serve_map[] = { KVXFER_OPTS(SERVE_MAP) };
static const int send_map[] = { KVXFER_OPTS(SEND_MAP) };
_Static_assert(sizeof(plan_map) / sizeof(plan_map[0]) == PLAN_NOPTS, "plan_map");
_Static_assert(sizeof(serve_map) / sizeof(serve_map[0]) == SERVE_NOPTS, "serve_map");
_Static_assert(sizeof(send_map) / sizeof(send_map[0]) == SEND_NOPTS, "send_map");

/* What a sub-command needs beyond its table entry: the map from its option
 * indexes to kvxfer's, and its handler, which reads kvxfer's indexes. */
struct kvxfer_sub {
	const struct cmd *cmd;
	const int *map;
	int nopts;
	int (*run)(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a);
};

int kvxfer_fill(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a, int first,
		int last)
{
	return opts_fill(ctx, &cmd_kvxfer, v, first, last + 1, a);
}

/* The sub-command with kvxfer's values v: its arguments start zeroed, with
 * what was given marked; each value is parsed where the sub-command checks
 * it, its default from its row (--rank's, 0, is the zeroed field). */
static int run_with(struct ctx *ctx, const struct kvxfer_sub *sub, const struct opt_vals *v)
{
	struct kvxfer_args a;

	memset(&a, 0, sizeof(a));
	opts_given(&cmd_kvxfer, v, &a);
	ctx->out.cmd = sub->cmd->name;
	return sub->run(ctx, v, &a);
}

static int run_sub(struct ctx *ctx, const struct kvxfer_sub *sub, int argc, char **argv);

static int do_plan(struct ctx *ctx, int argc, char **argv);
static int do_serve(struct ctx *ctx, int argc, char **argv);
static int do_send(struct ctx *ctx, int argc, char **argv);

/* The sub-command table: each a command of its own (name, options, summary). */
static const struct cmd cmd_kvxfer_plan = {
	.name = "kvxfer plan",
	.run = do_plan,
	.opts = plan_opts,
	.summary =
		"the arithmetic of a transfer: sizes, segments, the link that hides it (no device)",
};
static const struct cmd cmd_kvxfer_serve = {
	.name = "kvxfer serve",
	.run = do_serve,
	.opts = serve_opts,
	.long_running = true,
	.summary = "a decode rank: accept prefill ranks and receive their pages",
};
static const struct cmd cmd_kvxfer_send = {
	.name = "kvxfer send",
	.run = do_send,
	.opts = send_opts,
	.long_running = true,
	.summary = "a prefill rank: stream requests' pages to the decode ranks, layer by layer",
};
static const struct cmd *const kvxfer_subs[] = { &cmd_kvxfer_plan, &cmd_kvxfer_serve,
						 &cmd_kvxfer_send, NULL };

static const struct kvxfer_sub sub_plan = { &cmd_kvxfer_plan, plan_map, PLAN_NOPTS, kvxfer_plan };
static const struct kvxfer_sub sub_serve = { &cmd_kvxfer_serve, serve_map, SERVE_NOPTS,
					     kvxfer_serve };
static const struct kvxfer_sub sub_send = { &cmd_kvxfer_send, send_map, SEND_NOPTS, kvxfer_send };

static int do_plan(struct ctx *ctx, int argc, char **argv)
{
	return run_sub(ctx, &sub_plan, argc, argv);
}

static int do_serve(struct ctx *ctx, int argc, char **argv)
{
	return run_sub(ctx, &sub_serve, argc, argv);
}

static int do_send(struct ctx *ctx, int argc, char **argv)
{
	return run_sub(ctx, &sub_send, argc, argv);
}

static const struct kvxfer_sub *find_sub(const char *word)
{
	const struct cmd *c = cmd_sub_find(&cmd_kvxfer, word);

	return c == &cmd_kvxfer_plan    ? &sub_plan
	       : c == &cmd_kvxfer_serve ? &sub_serve
	       : c == &cmd_kvxfer_send  ? &sub_send
					: NULL;
}

static bool takes(const struct kvxfer_sub *sub, int kvx)
{
	for (int i = 0; i < sub->nopts; i++)
		if (sub->map[i] == kvx)
			return true;
	return false;
}

static int not_here(struct ctx *ctx, const struct kvxfer_sub *sub, int kvx)
{
	return usage_err(ctx, "%s: --%s does not apply here", sub->cmd->name, kvxfer_opts[kvx].name);
}

/* A kvxfer option that the sub-command does not take is named as such, not
 * as an unknown option: scan its arguments as getopt would read them. */
static int only_its_opts(struct ctx *ctx, const struct kvxfer_sub *sub, int argc, char **argv)
{
	for (int k = 0; k < argc && strcmp(argv[k], "--"); k++) {
		const char *a = argv[k];

		if (a[0] != '-' || !a[1])
			continue;
		if (a[1] == '-') {
			size_t len = strcspn(a + 2, "=");

			for (int i = 0; i < KVX_NOPTS; i++) {
				if (strlen(kvxfer_opts[i].name) != len ||
				    strncmp(kvxfer_opts[i].name, a + 2, len))
					continue;
				if (!takes(sub, i))
					return not_here(ctx, sub, i);
				if (kvxfer_opts[i].arg && !a[2 + len])
					k++;
			}
			continue;
		}
		for (const char *s = a + 1; *s; s++) {
			int i = 0;

			while (i < KVX_NOPTS && kvxfer_opts[i].short_name != *s)
				i++;
			if (i == KVX_NOPTS)
				break;
			if (!takes(sub, i))
				return not_here(ctx, sub, i);
			if (kvxfer_opts[i].arg) {
				if (!s[1])
					k++;
				break;
			}
		}
	}
	return 0;
}

/* The sub-command's values at kvxfer's indexes. */
static void to_kvxfer(const struct kvxfer_sub *sub, const struct opt_vals *sv, struct opt_vals *v)
{
	memset(v, 0, sizeof(*v));
	for (int i = 0; i < sub->nopts; i++) {
		v->vals[sub->map[i]] = sv->vals[i];
		v->count[sub->map[i]] = sv->count[i];
	}
	for (int j = 0; j < sv->nmulti; j++) {
		v->multi[j] = sv->multi[j];
		v->multi_idx[j] = sub->map[sv->multi_idx[j]];
	}
	v->nmulti = sv->nmulti;
}

/* A sub-command, nested: argv[0] is its word, the rest are parsed with its
 * own table. */
static int run_sub(struct ctx *ctx, const struct kvxfer_sub *sub, int argc, char **argv)
{
	struct opt_vals v, sv;
	int rc;

	if ((rc = only_its_opts(ctx, sub, argc - 1, argv + 1)))
		return rc;
	rc = opts_parse(ctx, sub->cmd, argc, argv, &sv);
	if (rc)
		return rc < 0 ? rc : 0;
	if (sv.npos)
		return usage_err(ctx, "%s: unexpected argument '%s'", sub->cmd->name, sv.pos[0]);
	to_kvxfer(sub, &sv, &v);
	return run_with(ctx, sub, &v);
}

static int do_kvxfer(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_kvxfer, *nested = argc > 1 ? cmd_sub_find(c, argv[1]) : NULL;
	const struct kvxfer_sub *sub;
	struct opt_vals v;
	int rc;

	if (nested)
		return nested->run(ctx, argc - 1, argv + 1);
	/* Options before the sub-command: kvxfer's whole table finds it. */
	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	if (v.npos < 1)
		return usage_err(
			ctx,
			"kvxfer: give a subcommand: plan, serve or send (see 'rdmactl kvxfer --help')");
	if (v.npos > 1)
		return usage_err(ctx, "kvxfer %s: unexpected argument '%s'", v.pos[0], v.pos[1]);
	sub = find_sub(v.pos[0]);
	if (!sub)
		return usage_err(ctx,
				 "kvxfer: unknown subcommand '%s': expected plan, serve or send",
				 v.pos[0]);
	for (int i = 0; i < KVX_NOPTS; i++)
		if (opt_on(&v, i) && !takes(sub, i))
			return not_here(ctx, sub, i);
	return run_with(ctx, sub, &v);
}

const struct cmd cmd_kvxfer = {
	.name = "kvxfer",
	.run = do_kvxfer,
	.opts = kvxfer_opts,
	.args = "plan|serve|send",
	.args_comp = COMP_WORDS,
	.summary = "move a KV cache from prefill to decode ranks, layer by layer (RDMA WRITE)",
	.long_running = true,
	.subs = kvxfer_subs,
};
