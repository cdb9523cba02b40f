// SPDX-License-Identifier: MIT
/*
 * rdmactl kvxfer: prefill-to-decode KV-cache transfer. `plan` does the
 * arithmetic without a device; `serve` is a decode rank receiving pages;
 * `send` is a prefill rank streaming them layer by layer. One option table
 * serves the three: each subcommand refuses the options it does not use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rdmactl/parse.h>

#include "cmds.h"
#include "kvxfer.h"

static const struct cmd_opt kvxfer_opts[] = { KVXFER_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(kvxfer_opts, KVX_NOPTS);

/* Options of each sub-command beyond the geometry (every option before
 * KVX_TOKENS), as indexes, -1 at the end. */
static const int plan_opts[] = { KVX_TOKENS, KVX_PREFILL_TOKENS_PER_S, KVX_LAYER_COMPUTE_US,
				 KVX_LINK_GBPS, KVX_SEGMENTS, KVX_POOL_PAGES, -1 };
static const int serve_opts[] = { KVX_RANK, KVX_REQUESTS, KVX_LISTEN, KVX_SCATTER, KVX_VERIFY,
				  KVX_POOL_PAGES, KVX_HEARTBEAT_MS, KVX_HEARTBEAT_TIMEOUT,
				  KVX_CANCEL_REQUEST, KVX_CANCEL_AFTER_LAYERS, KVX_TOKEN, -1 };
static const int send_opts[] = { KVX_TOKENS, KVX_LAYER_COMPUTE_US, KVX_RANK, KVX_REQUESTS,
				 KVX_CONNECT, KVX_BIND, KVX_QPS, KVX_INFLIGHT, KVX_NO_STREAM,
				 KVX_HEARTBEAT_MS, KVX_HEARTBEAT_TIMEOUT, KVX_CANCEL_REQUEST,
				 KVX_CANCEL_AFTER_LAYERS, KVX_TOKEN, -1 };

static int only_opts(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		     const char *sub, const int *allowed)
{
	for (int i = KVX_TOKENS; i < KVX_NOPTS; i++) {
		bool ok = false;

		for (int j = 0; !ok && allowed[j] >= 0; j++)
			ok = allowed[j] == i;
		if (!ok && opt_on(v, i))
			return usage_err(ctx, "kvxfer %s: --%s does not apply here", sub,
					 c->opts[i].name);
	}
	return 0;
}

/* The sub-command table: each sub-command, the options it takes beyond the
 * geometry, and its handler. */
static const struct kvxfer_sub {
	const char *name;
	const int *opts;
	int (*run)(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);
} kvxfer_subs[] = {
	{ "plan", plan_opts, kvxfer_plan },
	{ "serve", serve_opts, kvxfer_serve },
	{ "send", send_opts, kvxfer_send },
};

static int do_kvxfer(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_kvxfer;
	struct opt_vals v;
	int rc = opts_parse(ctx, c, argc, argv, &v);

	if (rc)
		return rc < 0 ? rc : 0;
	if (v.npos < 1)
		return usage_err(ctx, "kvxfer: give a subcommand: plan, serve or send (see 'rdmactl kvxfer --help')");
	if (v.npos > 1)
		return usage_err(ctx, "kvxfer %s: unexpected argument '%s'", v.pos[0], v.pos[1]);
	for (size_t i = 0; i < sizeof(kvxfer_subs) / sizeof(kvxfer_subs[0]); i++) {
		const struct kvxfer_sub *sub = &kvxfer_subs[i];

		if (!strcmp(v.pos[0], sub->name))
			return only_opts(ctx, c, &v, sub->name, sub->opts) ?: sub->run(ctx, c, &v);
	}
	return usage_err(ctx, "kvxfer: unknown subcommand '%s': expected plan, serve or send", v.pos[0]);
}

const struct cmd cmd_kvxfer = {
	.name = "kvxfer",
	.run = do_kvxfer,
	.opts = kvxfer_opts,
	.args = "plan|serve|send",
	.args_comp = COMP_WORDS,
	.summary = "move a KV cache from prefill to decode ranks, layer by layer (RDMA WRITE)",
	.long_running = true,
};
