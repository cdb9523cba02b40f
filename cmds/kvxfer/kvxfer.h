/* SPDX-License-Identifier: MIT */
/* What the kvxfer command's files share: the geometry from flags or a
 * model file, and the three subcommands. */
#ifndef RDMACTL_CMDS_KVXFER_H
#define RDMACTL_CMDS_KVXFER_H

#include <rdmactl/kv.h>

#include "cmd.h"
#include "client_cmds.h"
#include "metrics.h"

/* kvxfer's options, bound to indexes (cmd.h), each once:
 * X(ID, PLAN, SERVE, SEND, "name", short, "ARG", "help"...), where PLAN, SERVE
 * and SEND (1 or 0) say which sub-commands take it. The geometry comes
 * first (every sub-command), then the options of plan, serve and send.
 * kvxfer's own table holds them all (help, man page, completion); each
 * sub-command's table (kvxfer.c) holds only its own, made from the same
 * list. */
#define KVXFER_OPTS(X) \
	/* Geometry: every subcommand. */ \
	X(KVX_MODEL, 1, 1, 1, "model", 0, "FILE", \
	  "geometry from a JSON model file (flags override it)", COMP_FILE) \
	X(KVX_LAYOUT, 1, 1, 1, "layout", 0, "LAYOUT", \
	  "paged (K and V pages per head) or mla (one latent, replicated)", COMP_WORDS, \
	  "paged|mla") \
	X(KVX_PAGE_LAYOUT, 1, 1, 1, "page-layout", 0, "ORDER", \
	  "inside a page: nhd [token][head][dim] or hnd [head][token][dim] (default nhd)", \
	  COMP_WORDS, "nhd|hnd") \
	X(KVX_LAYERS, 1, 1, 1, "layers", 'L', "N", "transformer layers") \
	X(KVX_KV_HEADS, 1, 1, 1, "kv-heads", 'H', "N", "KV heads of the model (paged)") \
	X(KVX_HEAD_DIM, 1, 1, 1, "head-dim", 'D', "N", "dims per head (paged)") \
	X(KVX_LATENT_DIM, 1, 1, 1, "latent-dim", 0, "N", \
	  "dims of the latent vector, rope included (mla)") \
	X(KVX_DTYPE, 1, 1, 1, "dtype", 0, "TYPE", \
	  "element type: bf16, fp16 or fp8 (default bf16)", COMP_WORDS, "bf16|fp16|fp8") \
	X(KVX_PAGE_TOKENS, 1, 1, 1, "page-tokens", 0, "N", \
	  "tokens per page on both sides (default 16)") \
	X(KVX_SRC_PAGE_TOKENS, 1, 1, 1, "src-page-tokens", 0, "N", \
	  "tokens per page on the prefill side") \
	X(KVX_DST_PAGE_TOKENS, 1, 1, 1, "dst-page-tokens", 0, "N", \
	  "tokens per page on the decode side") \
	X(KVX_SRC_TP, 1, 1, 1, "src-tp", 0, "N", \
	  "tensor-parallel degree of the prefill side (default 1)") \
	X(KVX_DST_TP, 1, 1, 1, "dst-tp", 0, "N", \
	  "tensor-parallel degree of the decode side (default 1)") \
	/* plan */ \
	X(KVX_TOKENS, 1, 0, 1, "tokens", 0, "N", "tokens per request (plan, send)") \
	X(KVX_PREFILL_TOKENS_PER_S, 1, 0, 0, "prefill-tokens-per-s", 0, "RATE", \
	  "plan: prefill speed, to size the link that hides the transfer") \
	X(KVX_LAYER_COMPUTE_US, 1, 0, 1, "layer-compute-us", 0, "US", \
	  "compute time of one layer (plan; send: simulated, 0 = all at once)") \
	X(KVX_LINK_GBPS, 1, 0, 0, "link-gbps", 0, "RATE", \
	  "plan: link rate per rank (Gbit/s, or 100Gbit, 12.5GB), for the exposed time") \
	X(KVX_SEGMENTS, 1, 0, 0, "segments", 0, NULL, "plan: list every segment of one layer half") \
	X(KVX_POOL_PAGES, 1, 1, 0, "pool-pages", 0, "N", \
	  "pages in the decode rank's pool (serve; plan: check a request fits)") \
	X(KVX_LAND_PAGES, 0, 1, 0, "land-pages", 0, "N", \
	  "serve: units of the landing area, a page of landed tokens each, per layer half (default: the pool's pages)") \
	/* serve and send */ \
	X(KVX_RANK, 0, 1, 1, "rank", 'r', "R", "this process's TP rank (serve, send; default 0)") \
	X(KVX_REQUESTS, 0, 1, 1, "requests", 0, "N", \
	  "requests to move (send) or to finish before exiting (serve)") \
	X(KVX_LISTEN, 0, 1, 0, "listen", 'l', "ADDR:PORT", \
	  "serve: address to accept prefill ranks on; ADDR1:PORT,ADDR2:PORT with -d DEV1,DEV2: a rail each") \
	X(KVX_SCATTER, 0, 1, 0, "scatter", 0, "SEED", \
	  "serve: permute the free page list with SEED (non-contiguous pages)") \
	X(KVX_VERIFY, 0, 1, 0, "verify", 0, NULL, \
	  "serve: check every byte against the deterministic content") \
	X(KVX_CONNECT, 0, 0, 1, "connect", 'c', "ADDR:PORT", \
	  "send: a decode rank (repeat for each)", .repeat = true) \
	X(KVX_BIND, 0, 0, 1, "bind", 'B', "ADDR", "send: local address to connect from") \
	X(KVX_TOKEN, 0, 1, 1, "token", 'T', "TOKEN", \
	  "serve: require TOKEN in every connect request; send: prove it (visible in /proc: prefer --token-file or $RDMACTL_TOKEN)") \
	X(KVX_TOKEN_FILE, 0, 1, 1, "token-file", 0, "FILE", \
	  "the token, from the first line of FILE (mode 600)", COMP_FILE) \
	X(KVX_QPS, 1, 0, 1, "qps", 0, "N", \
	  "data queue pairs per decode rank (send; plan: the notifications; default 1)") \
	X(KVX_PACK, 1, 0, 1, "pack", 0, "WHEN", \
	  "copy small segments into one write per destination run: auto, always or never (default auto)", \
	  COMP_WORDS, "auto|always|never") \
	X(KVX_MAX_SGE, 1, 0, 1, "max-sge", 0, "N", \
	  "pieces of the source pages a packed write gathers, 1 to 32; 1 packs by copying into staging (default 32, or fewer where the device takes fewer)") \
	X(KVX_LAND, 1, 0, 1, "land", 0, "WHEN", \
	  "write scattered destination pieces contiguous into the decode rank's landing area, unpacked there: auto, always or never (default auto)", \
	  COMP_WORDS, "auto|always|never") \
	X(KVX_INFLIGHT, 0, 0, 1, "inflight", 0, "K", \
	  "send: requests in flight at once (default 1)") \
	X(KVX_NO_STREAM, 0, 0, 1, "no-stream", 0, NULL, \
	  "send: post no layer before the last one is ready") \
	X(KVX_MEM, 0, 1, 1, "mem", 0, "KIND", \
	  "serve's pool and send's source pages: host, hugepage or cuda[:N] (GPU N in PCI bus order; default host)", \
	  COMP_WORDS, "host|hugepage|cuda") \
	X(KVX_GPU_REG, 0, 1, 1, "gpu-reg", 0, "PATH", \
	  "serve, send with --mem cuda: registration path auto, dmabuf, peermem or bounce (default auto)", \
	  COMP_WORDS, "auto|dmabuf|peermem|bounce") \
	X(KVX_HEARTBEAT_MS, 0, 1, 1, "heartbeat-ms", 0, "MS", "heartbeat interval (default 200)") \
	X(KVX_HEARTBEAT_TIMEOUT, 0, 1, 1, "heartbeat-timeout", 0, "MS", \
	  "declare a silent peer dead after MS (default 3000)") \
	X(KVX_METRICS, 0, 1, 1, "metrics", 0, "FILE", \
	  "serve, send: write the summary's figures to FILE in Prometheus' text format, replaced whole, at the end", \
	  COMP_FILE) \
	X(KVX_CANCEL_REQUEST, 0, 1, 1, "cancel-request", 0, "I", \
	  "test hook: cancel request I (with --cancel-after-layers)", COMP_NONE, NULL, false, true) \
	X(KVX_CANCEL_AFTER_LAYERS, 0, 1, 1, "cancel-after-layers", 0, "L", \
	  "test hook: cancel once L layers of it were posted (send) or landed (serve)", COMP_NONE, \
	  NULL, false, true)

enum kvxfer_opt { KVXFER_OPTS(OPT_INDEX) KVX_NOPTS };
/* kvxfer's table entry for option ID (the sub-command columns dropped). */
#define KVX_ENTRY(id, plan, serve, send, ...) [id] = { __VA_ARGS__ },

/* The geometry from --model FILE and the flags (flags win). Reports a usage
 * error and returns -EINVAL when it is incomplete or wrong. name (NULL: not
 * wanted) gets the model's name: its "name", else the file's; empty
 * without --model. */
int kvxfer_geom(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, struct kv_geom *g,
		char *name, size_t namelen);
/* The geometry as an object under key (text: one line), led by the model's
 * name when there is one (model: null otherwise). */
void kvxfer_put_geom(struct out *o, const struct kv_geom *g, const char *model);

int kvxfer_plan(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);
int kvxfer_serve(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);
int kvxfer_send(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);

/* report.c: what serve and send print. A run's printing state, the
 * engines' on_event argument. */
struct run_ctx {
	struct ctx *ctx;
	bool send;
	/* send: the progress line on a terminal, and what it counts */
	struct progress prog;
	uint32_t asked, ended;
	uint64_t bytes;
};
void kvxfer_on_event(void *arg, const struct kv_event *ev);
void kvxfer_put_summary(struct ctx *ctx, const struct kv_summary *s, uint32_t asked, bool send);
/* --metrics: the summary's figures. */
void kvxfer_metrics(struct metrics *m, const struct kv_summary *s, bool send);

#endif
