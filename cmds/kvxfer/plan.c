// SPDX-License-Identifier: MIT
/* rdmactl kvxfer plan: the arithmetic of a transfer, no device needed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/kv.h>

#include "cmds.h"
#include "kvxfer.h"

static int opt_double(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i,
		      double *out)
{
	const char *s = opt_arg(v, i);
	char *end;
	double d;

	if (!s)
		return 0;
	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(d) || d < 0)
		return usage_err(ctx, "invalid --%s '%s': expected a non-negative number",
				 c->opts[i].name, s);
	*out = d;
	return 0;
}

static void put_segments(struct out *o, const struct kv_seg *s, size_t n)
{
	out_arr_begin(o, "segments");
	for (size_t i = 0; i < n; i++) {
		out_obj_begin(o, NULL);
		out_u64(o, "src_page", "    src page %llu", s[i].src_page);
		out_u64(o, "src_off", " +%llu", s[i].src_off);
		out_u64(o, "dst_page", " -> dst page %llu", s[i].dst_page);
		out_u64(o, "dst_off", " +%llu", s[i].dst_off);
		out_u64(o, "len", ": %llu bytes\n", s[i].len);
		out_obj_end(o);
	}
	out_arr_end(o);
}

static int put_routes(struct ctx *ctx, const struct kv_geom *g, uint32_t tokens, enum kv_pack land,
		      bool list)
{
	struct kv_route r[KV_MAX_ROUTES];
	int n = kv_routes(g, r, KV_MAX_ROUTES);
	struct out *o = &ctx->out;
	struct rc_err e;

	out_text(o, "routes (source rank -> destination rank):\n");
	out_arr_begin(o, "routes");
	for (int i = 0; i < n; i++) {
		struct kv_seg *s;
		size_t ns;
		int rc = kv_segments(g, &r[i], tokens, &s, &ns, &e);

		if (rc)
			return fail(ctx, rc, "%s", e.msg);
		out_obj_begin(o, NULL);
		out_u64(o, "src", "  %llu", r[i].src);
		out_u64(o, "dst", " -> %llu:", r[i].dst);
		if (g->layout == KV_LAYOUT_MLA) {
			out_text(o, " the latent");
		} else {
			out_u64(o, "head", " heads %llu", r[i].head);
			out_text(o, "-%u", r[i].head + r[i].nheads - 1);
		}
		out_u64(o, "nheads", NULL, r[i].nheads);
		out_u64(o, "src_head_off", NULL, r[i].src_head_off);
		out_u64(o, "dst_head_off", NULL, r[i].dst_head_off);
		if (g->layout != KV_LAYOUT_MLA)
			out_text(o, " (source slot %u, destination slot %u)", r[i].src_head_off,
				 r[i].dst_head_off);
		out_u64(o, "bytes_per_layer_half", ", %llu bytes",
			kv_route_bytes(g, &r[i], tokens));
		out_u64(o, "segments_per_layer_half", " in %llu segments per layer", ns);
		out_text(o, "%s", g->layout == KV_LAYOUT_MLA ? "" : " half (K or V)");
		out_bool(o, "land", ", lands: %s\n", kv_land_choose(land, g, &r[i]));
		if (list)
			put_segments(o, s, ns);
		out_obj_end(o);
		free(s);
	}
	out_arr_end(o);
	return 0;
}

static void put_ranks(struct out *o, const char *key, const struct kv_plan_rank *r, uint32_t n,
		      const char *what)
{
	out_arr_begin(o, key);
	for (uint32_t i = 0; i < n; i++) {
		out_obj_begin(o, NULL);
		out_text(o, "  %s", what);
		out_u64(o, "rank", " rank %llu:", i);
		out_u64(o, "bytes", " %llu bytes", r[i].bytes);
		out_u64(o, "segments", " in %llu segments per request", r[i].segments);
		out_u64(o, "writes", ", %llu writes as posted\n", r[i].writes);
		out_obj_end(o);
	}
	out_arr_end(o);
}

/* What each --pack choice gives: writes per request and their average size,
 * the choice made (route by route for auto), and the notifications each
 * decode rank counts, which packing leaves as they are. */
static void put_writes(struct out *o, const struct kv_geom *g, const struct kv_plan *p)
{
	out_obj_begin(o, "pack");
	out_str(o, "asked", "pack (--pack %s", kv_pack_name(p->pack));
	out_u64(o, "max_sge", ", --max-sge %llu): ", p->max_sge);
	out_obj_begin(o, "never");
	out_u64(o, "writes", "never %llu writes", p->writes_never);
	out_u64(o, "avg_bytes", " of %llu bytes", p->wire_bytes / p->writes_never);
	out_obj_end(o);
	out_obj_begin(o, "always");
	out_u64(o, "writes", ", always %llu writes", p->writes_packed);
	out_u64(o, "avg_bytes", " of %llu bytes", p->wire_bytes / p->writes_packed);
	out_obj_end(o);
	out_obj_begin(o, "chosen");
	out_u64(o, "writes", "; chosen %llu writes", p->writes);
	out_u64(o, "avg_bytes", " of %llu bytes", p->wire_bytes / p->writes);
	out_u64(o, "routes_packed", ", %llu", p->routes_packed);
	out_u64(o, "routes", " of %llu routes packed\n", p->routes);
	out_obj_end(o);
	out_obj_end(o);
	/* Landing: which path the routes take, and what the senders post with
	 * both choices (the per-rank writes above). */
	out_obj_begin(o, "land");
	out_str(o, "asked", "land (--land %s): ", kv_pack_name(p->land));
	out_str(o, "path", "path %s", p->routes_landed ? "landing" : "direct");
	out_u64(o, "routes_landed", ", %llu", p->routes_landed);
	out_u64(o, "routes", " of %llu routes land", p->routes);
	out_u64(o, "writes", "; %llu writes posted", p->writes_posted);
	out_u64(o, "avg_bytes", " of %llu bytes\n", p->wire_bytes / p->writes_posted);
	out_obj_end(o);
	out_obj_begin(o, "notifications");
	out_u64(o, "qps", "notifications: one WRITE_WITH_IMM per layer from each of %llu data QPs "
		"of each source rank, packed or not;", p->qps);
	out_arr_begin(o, "per_request");
	for (uint32_t d = 0; d < g->dst_tp; d++)
		out_u64(o, NULL, " %llu", p->dst[d].notifications);
	out_arr_end(o);
	out_text(o, " per request on each decode rank\n");
	out_obj_end(o);
}

int kvxfer_plan(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v)
{
	struct kv_plan_in in = { 0 };
	struct out *o = &ctx->out;
	struct kv_geom g;
	uint64_t tokens = 0, pool = 0;
	struct kv_plan *p;
	struct rc_err e;
	char sz[32];
	double link = 0;
	int rc, qps = 1, sge = KV_GATHER_MAX;

	if ((rc = kvxfer_geom(ctx, c, v, &g)))
		return rc;
	if (!opt_on(v, KVX_TOKENS))
		return usage_err(ctx, "kvxfer plan: give --tokens N, the tokens of one request");
	if ((rc = opt_u64_at(ctx, c, v, KVX_TOKENS, &tokens)) ||
	    (rc = opt_u64_at(ctx, c, v, KVX_POOL_PAGES, &pool)) ||
	    (rc = opt_double(ctx, c, v, KVX_PREFILL_TOKENS_PER_S, &in.prefill_tokens_per_s)) ||
	    (rc = opt_double(ctx, c, v, KVX_LAYER_COMPUTE_US, &in.layer_compute_us)) ||
	    (rc = opt_rate_at(ctx, c, v, KVX_LINK_GBPS, 1e9 / 8, &link)))
		return rc;
	in.link_gbps = link * 8 / 1e9;
	if (tokens < 1 || tokens > UINT32_MAX)
		return usage_err(ctx, "invalid --tokens %llu: expected 1 to %u",
				 (unsigned long long)tokens, UINT32_MAX);
	if (opt_on(v, KVX_PREFILL_TOKENS_PER_S) && opt_on(v, KVX_LAYER_COMPUTE_US))
		return usage_err(ctx, "kvxfer plan: give --prefill-tokens-per-s or --layer-compute-us, not both");
	in.tokens = (uint32_t)tokens;
	if ((rc = opt_int_at(ctx, c, v, KVX_QPS, 1, KV_MAX_QPS, &qps)))
		return rc;
	in.qps = (uint32_t)qps;
	if ((rc = opt_int_at(ctx, c, v, KVX_MAX_SGE, 1, KV_GATHER_MAX, &sge)))
		return rc;
	in.max_sge = (uint32_t)sge;
	if (opt_on(v, KVX_PACK) && kv_pack_parse(opt_arg(v, KVX_PACK), &in.pack))
		return usage_err(ctx, "invalid --pack '%s': expected auto, always or never",
				 opt_arg(v, KVX_PACK));
	if (opt_on(v, KVX_LAND) && kv_pack_parse(opt_arg(v, KVX_LAND), &in.land))
		return usage_err(ctx, "invalid --land '%s': expected auto, always or never",
				 opt_arg(v, KVX_LAND));
	if (opt_on(v, KVX_POOL_PAGES) && pool < kv_pages_for(&g, true, in.tokens))
		return usage_err(ctx, "kvxfer plan: pool too small: a request of %u tokens needs %u pages "
				 "of %u tokens per decode rank, --pool-pages is %llu",
				 in.tokens, kv_pages_for(&g, true, in.tokens), g.dst_page_tokens,
				 (unsigned long long)pool);
	p = malloc(sizeof(*p));
	if (!p)
		return fail(ctx, -ENOMEM, "out of memory");
	rc = kv_plan(&g, &in, p, &e);
	if (rc) {
		rc = rc == -EINVAL ? usage_err(ctx, "kvxfer plan: %s", e.msg) : fail(ctx, rc, "%s", e.msg);
		goto out;
	}
	kvxfer_put_geom(o, &g);
	out_u64(o, "tokens", "request of %llu tokens: ", in.tokens);
	out_u64(o, "bytes_per_request", "%llu bytes", p->bytes_per_request);
	rc_format_size(p->bytes_per_request, sz, sizeof(sz));
	out_text(o, " (%s)", sz);
	out_u64(o, "wire_bytes", ", %llu on the wire (replicas counted)\n", p->wire_bytes);
	out_u64(o, "bytes_per_token", "per token: %llu bytes", p->bytes_per_token);
	out_u64(o, "bytes_per_token_layer", " (%llu per layer)\n", p->bytes_per_token_layer);
	out_obj_begin(o, "pages");
	out_obj_begin(o, "src");
	out_u64(o, "per_request", "pages per rank and request: source %llu", p->src_pages);
	out_u64(o, "page_bytes", " of %llu bytes", p->src_page_bytes);
	out_u64(o, "page_tokens", NULL, g.src_page_tokens);
	out_obj_end(o);
	out_obj_begin(o, "dst");
	out_u64(o, "per_request", ", destination %llu", p->dst_pages);
	out_u64(o, "page_bytes", " of %llu bytes (per layer half)\n", p->dst_page_bytes);
	out_u64(o, "page_tokens", NULL, g.dst_page_tokens);
	out_obj_end(o);
	out_obj_end(o);
	if ((rc = put_routes(ctx, &g, in.tokens, in.land, opt_on(v, KVX_SEGMENTS))))
		goto out;
	out_text(o, "per rank and request:\n");
	put_ranks(o, "src_ranks", p->src, g.src_tp, "source");
	put_ranks(o, "dst_ranks", p->dst, g.dst_tp, "destination");
	out_obj_begin(o, "segments");
	out_u64(o, "total", "segments: %llu per request", p->segments);
	out_u64(o, "min_bytes", ", %llu", p->seg_min);
	out_u64(o, "max_bytes", " to %llu bytes", p->seg_max);
	out_u64(o, "avg_bytes", " (%llu on average)\n", p->wire_bytes / p->segments);
	out_obj_end(o);
	put_writes(o, &g, p);
	if (p->prefill_s > 0) {
		out_obj_begin(o, "prefill");
		out_f64(o, "prefill_s", "prefill: %.6g s", p->prefill_s);
		out_f64(o, "layer_us", ", %.6g us per layer", p->layer_s * 1e6);
		out_f64(o, "need_per_link_gbit_per_s",
			"; to hide the transfer the busiest source link needs %.4g Gb/s",
			p->need_gbps_per_link);
		out_f64(o, "need_per_link_gbyte_per_s", " (%.4g GB/s)", p->need_gbps_per_link / 8);
		out_f64(o, "need_total_gbit_per_s", ", %.4g Gb/s", p->need_gbps_total);
		out_f64(o, "need_total_gbyte_per_s", " (%.4g GB/s) in all\n", p->need_gbps_total / 8);
		out_obj_end(o);
	} else {
		out_null(o, "prefill");
	}
	if (in.link_gbps > 0) {
		out_obj_begin(o, "link");
		out_f64(o, "gbit_per_s", "at %.4g Gb/s", in.link_gbps);
		out_f64(o, "gbyte_per_s", " (%.4g GB/s) per link: exposed transfer", in.link_gbps / 8);
		out_f64(o, "exposed_stream_us", " %.6g us streamed layer by layer", p->exposed_stream_s * 1e6);
		out_f64(o, "exposed_bulk_us", ", %.6g us sent after the last layer\n", p->exposed_bulk_s * 1e6);
		out_obj_end(o);
	} else {
		out_null(o, "link");
	}
	if (opt_on(v, KVX_POOL_PAGES)) {
		out_obj_begin(o, "pool");
		out_u64(o, "pages", "pool: %llu pages", pool);
		out_u64(o, "requests_fit", " hold %llu such requests\n", pool / p->dst_pages);
		out_obj_end(o);
	} else {
		out_null(o, "pool");
	}
out:
	free(p);
	return rc;
}
