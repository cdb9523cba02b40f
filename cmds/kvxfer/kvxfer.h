/* SPDX-License-Identifier: MIT */
/* What the kvxfer command's files share: the geometry from flags or a
 * model file, and the three subcommands. */
#ifndef RDMACTL_CMDS_KVXFER_H
#define RDMACTL_CMDS_KVXFER_H

#include <rdmactl/kv.h>

#include "cmd.h"

/* kvxfer's options, bound to indexes (cmd.h): the geometry first (every
 * sub-command), then those of plan, serve and send. */
#define KVXFER_OPTS(X) \
	/* Geometry: every subcommand. */ \
	X(KVX_MODEL, "model", 'm', "FILE", "geometry from a JSON model file (flags override it)", COMP_FILE) \
	X(KVX_LAYOUT, "layout", 0, "LAYOUT", "paged (K and V pages per head) or mla (one latent, replicated)", COMP_WORDS, "paged|mla") \
	X(KVX_PAGE_LAYOUT, "page-layout", 0, "ORDER", "inside a page: nhd [token][head][dim] or hnd [head][token][dim] (default nhd)", COMP_WORDS, "nhd|hnd") \
	X(KVX_LAYERS, "layers", 'L', "N", "transformer layers") \
	X(KVX_KV_HEADS, "kv-heads", 'H', "N", "KV heads of the model (paged)") \
	X(KVX_HEAD_DIM, "head-dim", 'D', "N", "dims per head (paged)") \
	X(KVX_LATENT_DIM, "latent-dim", 0, "N", "dims of the latent vector, rope included (mla)") \
	X(KVX_DTYPE, "dtype", 0, "TYPE", "element type: bf16, fp16 or fp8 (default bf16)", COMP_WORDS, "bf16|fp16|fp8") \
	X(KVX_PAGE_TOKENS, "page-tokens", 0, "N", "tokens per page on both sides (default 16)") \
	X(KVX_SRC_PAGE_TOKENS, "src-page-tokens", 0, "N", "tokens per page on the prefill side") \
	X(KVX_DST_PAGE_TOKENS, "dst-page-tokens", 0, "N", "tokens per page on the decode side") \
	X(KVX_SRC_TP, "src-tp", 0, "N", "tensor-parallel degree of the prefill side (default 1)") \
	X(KVX_DST_TP, "dst-tp", 0, "N", "tensor-parallel degree of the decode side (default 1)") \
	/* plan */ \
	X(KVX_TOKENS, "tokens", 'n', "N", "tokens per request (plan, send)") \
	X(KVX_PREFILL_TOKENS_PER_S, "prefill-tokens-per-s", 0, "RATE", "plan: prefill speed, to size the link that hides the transfer") \
	X(KVX_LAYER_COMPUTE_US, "layer-compute-us", 0, "US", "compute time of one layer (plan; send: simulated, 0 = all at once)") \
	X(KVX_LINK_GBPS, "link-gbps", 0, "GBPS", "plan: link rate per rank, for the exposed transfer time") \
	X(KVX_SEGMENTS, "segments", 0, NULL, "plan: list every segment of one layer half") \
	X(KVX_POOL_PAGES, "pool-pages", 0, "N", "pages in the decode rank's pool (serve; plan: check a request fits)") \
	/* serve and send */ \
	X(KVX_RANK, "rank", 'r', "R", "this process's TP rank (serve, send; default 0)") \
	X(KVX_REQUESTS, "requests", 'N', "N", "requests to move (send) or to finish before exiting (serve)") \
	X(KVX_LISTEN, "listen", 'l', "ADDR:PORT", "serve: address to accept prefill ranks on") \
	X(KVX_SCATTER, "scatter", 0, "SEED", "serve: permute the free page list with SEED (non-contiguous pages)") \
	X(KVX_VERIFY, "verify", 0, NULL, "serve: check every byte against the deterministic content") \
	X(KVX_CONNECT, "connect", 'c', "ADDR:PORT", "send: a decode rank (repeat for each)", .repeat = true) \
	X(KVX_BIND, "bind", 'B', "ADDR", "send: local address to connect from") \
	X(KVX_TOKEN, "token", 'T', "TOKEN", "serve: require TOKEN in every HELLO; send: show it (default: $RDMACTL_TOKEN)") \
	X(KVX_QPS, "qps", 0, "N", "send: data queue pairs per decode rank (default 1)") \
	X(KVX_INFLIGHT, "inflight", 0, "K", "send: requests in flight at once (default 1)") \
	X(KVX_NO_STREAM, "no-stream", 0, NULL, "send: post no layer before the last one is ready") \
	X(KVX_HEARTBEAT_MS, "heartbeat-ms", 0, "MS", "heartbeat interval (default 200)") \
	X(KVX_HEARTBEAT_TIMEOUT, "heartbeat-timeout", 0, "MS", "declare a silent peer dead after MS (default 3000)") \
	X(KVX_CANCEL_REQUEST, "cancel-request", 0, "I", "test hook: cancel request I (with --cancel-after-layers)") \
	X(KVX_CANCEL_AFTER_LAYERS, "cancel-after-layers", 0, "L", "test hook: cancel once L layers of it were posted (send) or landed (serve)")

enum kvxfer_opt { KVXFER_OPTS(OPT_INDEX) KVX_NOPTS };

/* The geometry from --model FILE and the flags (flags win). Reports a usage
 * error and returns -EINVAL when it is incomplete or wrong. */
int kvxfer_geom(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		struct kv_geom *g);
/* The geometry as an object under key (text: one line). */
void kvxfer_put_geom(struct out *o, const struct kv_geom *g);

int kvxfer_plan(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);
int kvxfer_serve(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);
int kvxfer_send(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);

#endif
