// SPDX-License-Identifier: MIT
/*
 * rdmactl kvxfer: prefill-to-decode KV-cache transfer. `plan` does the
 * arithmetic without a device; `serve` is a decode rank receiving pages;
 * `send` is a prefill rank streaming them layer by layer. The three are
 * nested commands, as iproute2 and bpftool nest theirs: rows of kvxfer's
 * table of sub-commands, sharing its option table, each row of which says
 * which of them take it (OPT_IN). The dispatcher parses the words once
 * against that table and refuses an option of another sub-command by name.
 */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "kvxfer.h"

/* kvxfer's table: every option of every sub-command (help, the man page,
 * completion), at the KVX_* indexes the sub-commands read. */
static const struct cmd_opt kvxfer_opts[] = { KVXFER_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(kvxfer_opts, KVX_NOPTS);

/* A sub-command with its values v: its arguments start zeroed, with what
 * was given marked; each value is parsed where the sub-command checks it,
 * its default from its row. */
static int run_with(struct ctx *ctx, const struct opt_vals *v,
		    int (*run)(struct ctx *, const struct opt_vals *, struct kvxfer_args *))
{
	struct kvxfer_args a;

	memset(&a, 0, sizeof(a));
	opts_given(&cmd_kvxfer, v, &a);
	return run(ctx, v, &a);
}

static int do_plan(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v)
{
	(void)c;
	return run_with(ctx, v, kvxfer_plan);
}

static int do_serve(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v)
{
	(void)c;
	return run_with(ctx, v, kvxfer_serve);
}

static int do_send(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v)
{
	(void)c;
	return run_with(ctx, v, kvxfer_send);
}

/* The sub-command table: each a command of its own (name, summary), on
 * kvxfer's options. */
static const struct cmd cmd_kvxfer_plan = {
	.name = "kvxfer plan",
	.run_opts = do_plan,
	.parent = &cmd_kvxfer,
	.opts = kvxfer_opts,
	.summary = "a transfer's arithmetic: sizes, segments, the link that hides it (no device)",
};
static const struct cmd cmd_kvxfer_serve = {
	.name = "kvxfer serve",
	.run_opts = do_serve,
	.parent = &cmd_kvxfer,
	.opts = kvxfer_opts,
	.long_running = true,
	.summary = "a decode rank: accept prefill ranks and receive their pages",
};
static const struct cmd cmd_kvxfer_send = {
	.name = "kvxfer send",
	.run_opts = do_send,
	.parent = &cmd_kvxfer,
	.opts = kvxfer_opts,
	.long_running = true,
	.summary = "a prefill rank: stream requests' pages to the decode ranks, layer by layer",
};
/* At the indexes the rows' OPT_IN bits name. */
static const struct cmd *const kvxfer_subs[] = {
	[KVX_SUB_PLAN] = &cmd_kvxfer_plan,
	[KVX_SUB_SERVE] = &cmd_kvxfer_serve,
	[KVX_SUB_SEND] = &cmd_kvxfer_send,
	NULL,
};

const struct cmd cmd_kvxfer = {
	.name = "kvxfer",
	.opts = kvxfer_opts,
	.args = "plan|serve|send",
	.args_comp = COMP_WORDS,
	.summary = "move a KV cache from prefill to decode ranks, layer by layer",
	.long_running = true,
	.subs = kvxfer_subs,
};
