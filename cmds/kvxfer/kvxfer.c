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

static const struct cmd_opt kvxfer_opts[] = {
	/* Geometry: every subcommand. */
	{ "model", 'm', "FILE", "geometry from a JSON model file (flags override it)", COMP_FILE },
	{ "layout", 0, "LAYOUT", "paged (K and V pages per head) or mla (one latent, replicated)",
	  COMP_WORDS, "paged|mla" },
	{ "page-layout", 0, "ORDER", "inside a page: nhd [token][head][dim] or hnd [head][token][dim] (default nhd)",
	  COMP_WORDS, "nhd|hnd" },
	{ "layers", 'L', "N", "transformer layers" },
	{ "kv-heads", 'H', "N", "KV heads of the model (paged)" },
	{ "head-dim", 'D', "N", "dims per head (paged)" },
	{ "latent-dim", 0, "N", "dims of the latent vector, rope included (mla)" },
	{ "dtype", 0, "TYPE", "element type: bf16, fp16 or fp8 (default bf16)", COMP_WORDS,
	  "bf16|fp16|fp8" },
	{ "page-tokens", 0, "N", "tokens per page on both sides (default 16)" },
	{ "src-page-tokens", 0, "N", "tokens per page on the prefill side" },
	{ "dst-page-tokens", 0, "N", "tokens per page on the decode side" },
	{ "src-tp", 0, "N", "tensor-parallel degree of the prefill side (default 1)" },
	{ "dst-tp", 0, "N", "tensor-parallel degree of the decode side (default 1)" },
	/* plan */
	{ "tokens", 'n', "N", "tokens per request (plan, send)" },
	{ "prefill-tokens-per-s", 0, "RATE", "plan: prefill speed, to size the link that hides the transfer" },
	{ "layer-compute-us", 0, "US", "compute time of one layer (plan; send: simulated, 0 = all at once)" },
	{ "link-gbps", 0, "GBPS", "plan: link rate per rank, for the exposed transfer time" },
	{ "segments", 0, NULL, "plan: list every segment of one layer half" },
	{ "pool-pages", 0, "N", "pages in the decode rank's pool (serve; plan: check a request fits)" },
	/* serve and send */
	{ "rank", 'r', "R", "this process's TP rank (serve, send; default 0)" },
	{ "requests", 'N', "N", "requests to move (send) or to finish before exiting (serve)" },
	{ "listen", 'l', "ADDR:PORT", "serve: address to accept prefill ranks on" },
	{ "scatter", 0, "SEED", "serve: permute the free page list with SEED (non-contiguous pages)" },
	{ "verify", 0, NULL, "serve: check every byte against the deterministic content" },
	{ "connect", 'c', "ADDR:PORT", "send: a decode rank (repeat for each)", .repeat = true },
	{ "bind", 'B', "ADDR", "send: local address to connect from" },
	{ "qps", 0, "N", "send: data queue pairs per decode rank (default 1)" },
	{ "inflight", 0, "K", "send: requests in flight at once (default 1)" },
	{ "no-stream", 0, NULL, "send: post no layer before the last one is ready" },
	{ "heartbeat-ms", 0, "MS", "heartbeat interval (default 200)" },
	{ "heartbeat-timeout", 0, "MS", "declare a silent peer dead after MS (default 3000)" },
	{ "cancel-request", 0, "I", "test hook: cancel request I (with --cancel-after-layers)" },
	{ "cancel-after-layers", 0, "L", "test hook: cancel once L layers of it were posted (send) or landed (serve)" },
	OPT_END,
};
OPTS_FIT(kvxfer_opts);

/* Options of each subcommand beyond the geometry (the table up to "tokens"). */
static const char *const plan_opts[] = { "tokens", "prefill-tokens-per-s", "layer-compute-us",
					 "link-gbps", "segments", "pool-pages", NULL };
static const char *const serve_opts[] = { "rank", "requests", "listen", "scatter", "verify",
					  "pool-pages", "heartbeat-ms", "heartbeat-timeout",
					  "cancel-request", "cancel-after-layers", NULL };
static const char *const send_opts[] = { "tokens", "layer-compute-us", "rank", "requests",
					 "connect", "bind", "qps", "inflight", "no-stream",
					 "heartbeat-ms", "heartbeat-timeout", "cancel-request",
					 "cancel-after-layers", NULL };

static int only_opts(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		     const char *sub, const char *const *allowed)
{
	bool geometry = true;

	for (int i = 0; c->opts[i].name; i++) {
		bool ok = geometry;

		if (!strcmp(c->opts[i].name, "tokens"))
			geometry = ok = false;
		for (int j = 0; !ok && allowed[j]; j++)
			ok = !strcmp(allowed[j], c->opts[i].name);
		if (!ok && v->count[i])
			return usage_err(ctx, "kvxfer %s: --%s does not apply here", sub,
					 c->opts[i].name);
	}
	return 0;
}

/* The sub-command table: each sub-command, the options it takes beyond the
 * geometry, and its handler. */
static const struct kvxfer_sub {
	const char *name;
	const char *const *opts;
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
