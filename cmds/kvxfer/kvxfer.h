/* SPDX-License-Identifier: MIT */
/* What the kvxfer command's files share: the geometry from flags or a
 * model file, and the three subcommands. */
#ifndef RDMACTL_CMDS_KVXFER_H
#define RDMACTL_CMDS_KVXFER_H

#include <rdmactl/kv.h>

#include <math.h>

#include "cmd.h"
#include "client_cmds.h"
#include "metrics.h"
#include "rails_cmds.h"

/* kvxfer's options, bound to indexes (cmd.h), each once, in one table that
 * its sub-commands share (their rows, the same indexes): a row that not
 * every sub-command takes says which do, OPT_IN(KVX_SERVE | KVX_SEND). The
 * geometry comes first (every sub-command), then the options of plan,
 * serve and send. */
enum kvx_sub { KVX_SUB_PLAN, KVX_SUB_SERVE, KVX_SUB_SEND };
#define KVX_PLAN OPT_SUB(KVX_SUB_PLAN)
#define KVX_SERVE OPT_SUB(KVX_SUB_SERVE)
#define KVX_SEND OPT_SUB(KVX_SUB_SEND)
/* The geometry's integers, in the order of their options. */
enum kvx_geo {
	KVG_LAYERS,
	KVG_KV_HEADS,
	KVG_HEAD_DIM,
	KVG_LATENT_DIM,
	KVG_PAGE_TOKENS,
	KVG_SRC_PT,
	KVG_DST_PT,
	KVG_SRC_TP,
	KVG_DST_TP,
	KVG_N
};

/* What kvxfer was asked: its typed rows' values (opts_fill), each filled
 * where the sub-command reads it, so the first bad one is reported in the
 * order the checks run. A *_given field holds the argument as given, NULL
 * when the option is absent. */
struct kvxfer_args {
	/* The geometry as given (kvxfer_geom merges it with --model's). */
	const char *model, *layout, *page_layout, *dtype;
	const char *page_layout_given, *dtype_given;
	uint64_t geo[KVG_N];
	const char *geo_given[KVG_N];
	/* plan, serve, send */
	uint64_t tokens, pool_pages, land_pages, requests, scatter, cancel_request;
	const char *tokens_given, *pool_pages_given, *land_pages_given, *requests_given;
	const char *scatter_given, *cancel_request_given, *cancel_after_given;
	double prefill_tokens_per_s, layer_compute_us, link; /* link: bytes/s */
	const char *prefill_given, *layer_compute_given;
	bool segments, verify, no_stream;
	int rank, qps, max_sge, inflight, hb_ms, hb_timeout_ms, cancel_after;
	const char *listen, *rails, *connect, *bind, *pack, *land, *mem, *gpu_reg, *metrics;
	const char *gpu_reg_given;
	const char *token_arg, *token_file; /* --token, --token-file as given */
};

/* A run's rails from --rails PLAN: what it found (the plan's devices, and
 * serve's addresses), kept apart from the arguments, which are data only. */
struct kvxfer_rails {
	struct rails_auto ra;
	char listen[RC_RAILS_MAX * (RC_HOST_MAX + 8)]; /* serve: its --listen */
};

#define KVXFER_OPTS(X) \
	/* Geometry: every subcommand. */ \
	X(KVX_MODEL, "model", 0, "FILE", "geometry from a JSON model file", COMP_FILE, \
	  OPT_STR(struct kvxfer_args, model, NULL)) \
	X(KVX_LAYOUT, "layout", 0, "LAYOUT", "paged or mla", COMP_WORDS, "paged|mla", \
	  OPT_STR(struct kvxfer_args, layout, NULL)) \
	X(KVX_PAGE_LAYOUT, "page-layout", 0, "ORDER", "inside a page: nhd or hnd", COMP_WORDS, \
	  "nhd|hnd", OPT_STR(struct kvxfer_args, page_layout, "nhd"), \
	  OPT_GIVEN(struct kvxfer_args, page_layout_given)) \
	X(KVX_LAYERS, "layers", 'L', "N", "transformer layers", \
	  OPT_U64(struct kvxfer_args, geo[KVG_LAYERS], NULL), \
	  OPT_GIVEN(struct kvxfer_args, geo_given[KVG_LAYERS])) \
	X(KVX_KV_HEADS, "kv-heads", 'H', "N", "KV heads of the model (paged)", \
	  OPT_U64(struct kvxfer_args, geo[KVG_KV_HEADS], NULL), \
	  OPT_GIVEN(struct kvxfer_args, geo_given[KVG_KV_HEADS])) \
	X(KVX_HEAD_DIM, "head-dim", 'D', "N", "dims per head (paged)", \
	  OPT_U64(struct kvxfer_args, geo[KVG_HEAD_DIM], NULL), \
	  OPT_GIVEN(struct kvxfer_args, geo_given[KVG_HEAD_DIM])) \
	X(KVX_LATENT_DIM, "latent-dim", 0, "N", "dims of the latent vector, rope included (mla)", \
	  OPT_U64(struct kvxfer_args, geo[KVG_LATENT_DIM], NULL), \
	  OPT_GIVEN(struct kvxfer_args, geo_given[KVG_LATENT_DIM])) \
	X(KVX_DTYPE, "dtype", 0, "TYPE", "element type: bf16, fp16 or fp8", COMP_WORDS, \
	  "bf16|fp16|fp8", OPT_STR(struct kvxfer_args, dtype, "bf16"), \
	  OPT_GIVEN(struct kvxfer_args, dtype_given)) \
	X(KVX_PAGE_TOKENS, "page-tokens", 0, "N", "tokens per page on both sides", \
	  OPT_U64(struct kvxfer_args, geo[KVG_PAGE_TOKENS], "16"), \
	  OPT_GIVEN(struct kvxfer_args, geo_given[KVG_PAGE_TOKENS])) \
	X(KVX_SRC_PAGE_TOKENS, "src-page-tokens", 0, "N", "tokens per page on the prefill side", \
	  OPT_U64(struct kvxfer_args, geo[KVG_SRC_PT], NULL), \
	  OPT_GIVEN(struct kvxfer_args, geo_given[KVG_SRC_PT])) \
	X(KVX_DST_PAGE_TOKENS, "dst-page-tokens", 0, "N", "tokens per page on the decode side", \
	  OPT_U64(struct kvxfer_args, geo[KVG_DST_PT], NULL), \
	  OPT_GIVEN(struct kvxfer_args, geo_given[KVG_DST_PT])) \
	X(KVX_SRC_TP, "src-tp", 0, "N", "prefill side's TP degree", \
	  OPT_U64(struct kvxfer_args, geo[KVG_SRC_TP], "1"), \
	  OPT_GIVEN(struct kvxfer_args, geo_given[KVG_SRC_TP])) \
	X(KVX_DST_TP, "dst-tp", 0, "N", "decode side's TP degree", \
	  OPT_U64(struct kvxfer_args, geo[KVG_DST_TP], "1"), \
	  OPT_GIVEN(struct kvxfer_args, geo_given[KVG_DST_TP])) \
	/* plan */ \
	X(KVX_TOKENS, "tokens", 0, "N", "tokens per request", \
	  OPT_U64(struct kvxfer_args, tokens, NULL), OPT_GIVEN(struct kvxfer_args, tokens_given), \
	  OPT_IN(KVX_PLAN | KVX_SEND)) \
	X(KVX_PREFILL_TOKENS_PER_S, "prefill-tokens-per-s", 0, "RATE", "prefill speed", \
	  OPT_DOUBLE(struct kvxfer_args, prefill_tokens_per_s, 0, INFINITY, NULL), \
	  OPT_GIVEN(struct kvxfer_args, prefill_given), OPT_IN(KVX_PLAN)) \
	X(KVX_LAYER_COMPUTE_US, "layer-compute-us", 0, "US", "compute time of one layer", \
	  OPT_DOUBLE(struct kvxfer_args, layer_compute_us, 0, INFINITY, NULL), \
	  OPT_GIVEN(struct kvxfer_args, layer_compute_given), OPT_IN(KVX_PLAN | KVX_SEND)) \
	X(KVX_LINK_GBPS, "link-gbps", 0, "RATE", "link rate a rank (100Gbit, 12.5GB)", \
	  OPT_RATE(struct kvxfer_args, link, 1e9 / 8, NULL), OPT_IN(KVX_PLAN)) \
	X(KVX_SEGMENTS, "segments", 0, NULL, "list every segment of one layer half", \
	  OPT_FLAG(struct kvxfer_args, segments), OPT_IN(KVX_PLAN)) \
	X(KVX_POOL_PAGES, "pool-pages", 0, "N", "pages in the decode rank's pool", \
	  OPT_U64(struct kvxfer_args, pool_pages, NULL), \
	  OPT_GIVEN(struct kvxfer_args, pool_pages_given), OPT_IN(KVX_PLAN | KVX_SERVE)) \
	X(KVX_LAND_PAGES, "land-pages", 0, "N", "landing pages (default: the pool's)", \
	  OPT_U64(struct kvxfer_args, land_pages, NULL), \
	  OPT_GIVEN(struct kvxfer_args, land_pages_given), OPT_IN(KVX_SERVE)) \
	/* serve and send */ \
	X(KVX_RANK, "rank", 'r', "R", "this process's TP rank", \
	  OPT_INT(struct kvxfer_args, rank, 0, KV_MAX_TP - 1, "0"), OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_REQUESTS, "requests", 0, "N", "requests to move", \
	  OPT_U64(struct kvxfer_args, requests, NULL), \
	  OPT_GIVEN(struct kvxfer_args, requests_given), OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_LISTEN, "listen", 'l', "ADDR:PORT", "address to accept prefill ranks on", \
	  OPT_STR(struct kvxfer_args, listen, NULL), OPT_IN(KVX_SERVE)) \
	X(KVX_RAILS, "rails", 0, "PLAN", "rails: auto, gpu:N or numa:N", COMP_WORDS, \
	  "auto|gpu:0|numa:0", OPT_STR(struct kvxfer_args, rails, NULL), \
	  OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_SCATTER, "scatter", 0, "SEED", "permute the free page list with SEED", \
	  OPT_U64(struct kvxfer_args, scatter, NULL), \
	  OPT_GIVEN(struct kvxfer_args, scatter_given), OPT_IN(KVX_SERVE)) \
	X(KVX_VERIFY, "verify", 0, NULL, "check every byte", OPT_FLAG(struct kvxfer_args, verify), \
	  OPT_IN(KVX_SERVE)) \
	X(KVX_CONNECT, "connect", 'c', "ADDR:PORT", "a decode rank (repeat for each)", \
	  .repeat = true, OPT_STR(struct kvxfer_args, connect, NULL), OPT_IN(KVX_SEND)) \
	X(KVX_BIND, "bind", 'B', "ADDR", "local address (ADDR1,ADDR2: one a rail)", \
	  OPT_STR(struct kvxfer_args, bind, NULL), OPT_IN(KVX_SEND)) \
	X(KVX_TOKEN, "token", 'T', "TOKEN", "visible in /proc: use --token-file", \
	  OPT_STR(struct kvxfer_args, token_arg, NULL), OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_TOKEN_FILE, "token-file", 0, "FILE", "the token, from FILE (mode 600)", COMP_FILE, \
	  OPT_STR(struct kvxfer_args, token_file, NULL), OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_QPS, "qps", 0, "N", "data QPs a decode rank", \
	  OPT_INT(struct kvxfer_args, qps, 1, KV_MAX_QPS, "1"), OPT_IN(KVX_PLAN | KVX_SEND)) \
	X(KVX_PACK, "pack", 0, "WHEN", "pack small segments", COMP_WORDS, "auto|always|never", \
	  OPT_STR(struct kvxfer_args, pack, "auto"), OPT_IN(KVX_PLAN | KVX_SEND)) \
	X(KVX_MAX_SGE, "max-sge", 0, "N", "pieces a write gathers", \
	  OPT_INT(struct kvxfer_args, max_sge, 1, KV_GATHER_MAX, "32"), \
	  OPT_IN(KVX_PLAN | KVX_SEND)) \
	X(KVX_LAND, "land", 0, "WHEN", "via the landing area", COMP_WORDS, "auto|always|never", \
	  OPT_STR(struct kvxfer_args, land, "auto"), OPT_IN(KVX_PLAN | KVX_SEND)) \
	X(KVX_INFLIGHT, "inflight", 0, "K", "requests in flight at once", \
	  OPT_INT(struct kvxfer_args, inflight, 1, 64, "1"), OPT_IN(KVX_SEND)) \
	X(KVX_NO_STREAM, "no-stream", 0, NULL, "post once the last layer is ready", \
	  OPT_FLAG(struct kvxfer_args, no_stream), OPT_IN(KVX_SEND)) \
	X(KVX_MEM, "mem", 0, "KIND", "host, hugepage or cuda[:N]", COMP_WORDS, \
	  "host|hugepage|cuda", OPT_STR(struct kvxfer_args, mem, "host"), \
	  OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_GPU_REG, "gpu-reg", 0, "PATH", "auto, dmabuf, peermem or bounce", COMP_WORDS, \
	  "auto|dmabuf|peermem|bounce", OPT_STR(struct kvxfer_args, gpu_reg, "auto"), \
	  OPT_GIVEN(struct kvxfer_args, gpu_reg_given), OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_HEARTBEAT_MS, "heartbeat-ms", 0, "MS", "heartbeat interval", \
	  OPT_INT(struct kvxfer_args, hb_ms, 10, 60000, "200"), OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_HEARTBEAT_TIMEOUT, "heartbeat-timeout", 0, "MS", "peer dead after MS", \
	  OPT_INT(struct kvxfer_args, hb_timeout_ms, 50, 3600000, "3000"), \
	  OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_METRICS, "metrics", 0, "FILE", "figures to FILE (Prometheus)", COMP_FILE, \
	  OPT_STR(struct kvxfer_args, metrics, NULL), OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_CANCEL_REQUEST, "cancel-request", 0, "I", "test hook: cancel request I", COMP_NONE, \
	  NULL, false, true, OPT_U64(struct kvxfer_args, cancel_request, NULL), \
	  OPT_GIVEN(struct kvxfer_args, cancel_request_given), OPT_IN(KVX_SERVE | KVX_SEND)) \
	X(KVX_CANCEL_AFTER_LAYERS, "cancel-after-layers", 0, "L", \
	  "test hook: cancel after L layers", COMP_NONE, NULL, false, true, \
	  OPT_INT(struct kvxfer_args, cancel_after, 0, KV_MAX_LAYERS, NULL), \
	  OPT_GIVEN(struct kvxfer_args, cancel_after_given), OPT_IN(KVX_SERVE | KVX_SEND))

enum kvxfer_opt { KVXFER_OPTS(OPT_INDEX) KVX_NOPTS };

/* The geometry from --model FILE and the flags (flags win). Reports a usage
 * error and returns -EINVAL when it is incomplete or wrong. name (NULL: not
 * wanted) gets the model's name: its "name", else the file's; empty
 * without --model. */
int kvxfer_geom(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a, struct kv_geom *g,
		char *name, size_t namelen);
/* The geometry as an object under key (text: one line), led by the model's
 * name when there is one (model: null otherwise). */
void kvxfer_put_geom(struct out *o, const struct kv_geom *g, const char *model);

extern const struct cmd cmd_kvxfer;

/* Fill a's rows first to last (KVX_*, both included) from v, at kvxfer's
 * indexes: opts_fill over kvxfer's table (here, so that the sub-commands
 * call nothing of kvxfer.c, which calls them). */
static inline int kvxfer_fill(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a,
			      int first, int last)
{
	return opts_fill(ctx, &cmd_kvxfer, v, first, last + 1, a);
}

/* The sub-commands: v holds the options at kvxfer's indexes, a (zeroed) is
 * filled as they read it. */
int kvxfer_plan(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a);
int kvxfer_serve(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a);
int kvxfer_send(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a);

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
/* --metrics: the rows of the summary event, serve's and send's. */
extern const struct metric_table kv_serve_metric_table, kv_send_metric_table;

#endif
