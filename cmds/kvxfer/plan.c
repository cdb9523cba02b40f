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

/* The plural ending of a count's noun: "1 segment", "2 segments". */
static const char *pl(uint64_t n)
{
	return n == 1 ? "" : "s";
}

typedef unsigned long long ull;

static void put_segments(struct out *o, const struct kv_seg *s, size_t n)
{
	out_arr_begin(o, "segments");
	for (size_t i = 0; i < n; i++) {
		out_obj_begin(o, NULL);
		out_u64(o, "src_page", "    src page %llu", s[i].src_page);
		out_u64(o, "src_off", " +%llu", s[i].src_off);
		out_u64(o, "dst_page", " -> dst page %llu", s[i].dst_page);
		out_u64(o, "dst_off", " +%llu", s[i].dst_off);
		out_u64(o, "len", NULL, s[i].len);
		out_text(o, ": %llu byte%s\n", (ull)s[i].len, pl(s[i].len));
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
	bool mla = g->layout == KV_LAYOUT_MLA;
	struct rc_err e;

	out_text(o, "routes (source rank -> destination rank):\n");
	out_arr_begin(o, "routes");
	for (int i = 0; i < n; i++) {
		struct kv_seg *s;
		size_t ns;
		int rc = kv_segments(g, &r[i], tokens, &s, &ns, &e);

		if (rc)
			return fail(ctx, rc, "%s", ERR_TEXT(e));
		out_obj_begin(o, NULL);
		out_u64(o, "src", "  %llu", r[i].src);
		out_u64(o, "dst", " -> %llu:", r[i].dst);
		if (!mla)
			out_u64(o, "head", NULL, r[i].head);
		out_u64(o, "nheads", NULL, r[i].nheads);
		if (mla)
			out_text(o, " the latent");
		else if (r[i].nheads == 1)
			out_text(o, " head %u", r[i].head);
		else
			out_text(o, " heads %u-%u", r[i].head, r[i].head + r[i].nheads - 1);
		out_u64(o, "src_head_off", NULL, r[i].src_head_off);
		out_u64(o, "dst_head_off", NULL, r[i].dst_head_off);
		if (!mla)
			out_text(o, " (source slot %u, destination slot %u)", r[i].src_head_off,
				 r[i].dst_head_off);
		out_u64(o, "bytes_per_layer_half", ", %llu bytes", kv_route_bytes(g, &r[i], tokens));
		out_u64(o, "segments_per_layer_half", NULL, ns);
		out_text(o, " in %zu segment%s per layer%s", ns, pl(ns),
			 mla ? "" : " half (K or V)");
		out_bool(o, "land", ", lands: %s\n", kv_land_choose(land, g, &r[i]));
		if (list)
			put_segments(o, s, ns);
		out_obj_end(o);
		free(s);
	}
	out_arr_end(o);
	return 0;
}

static bool rank_same(const struct kv_plan_rank *a, const struct kv_plan_rank *b)
{
	return a->bytes == b->bytes && a->segments == b->segments && a->writes == b->writes;
}

/* Each rank in JSON; in text, a run of ranks with the same figures is one
 * line ("source ranks 0-7, each: ..."). */
static void put_ranks(struct out *o, const char *key, const struct kv_plan_rank *r, uint32_t n,
		      const char *what)
{
	out_arr_begin(o, key);
	for (uint32_t i = 0; i < n; i++) {
		out_obj_begin(o, NULL);
		out_u64(o, "rank", NULL, i);
		out_u64(o, "bytes", NULL, r[i].bytes);
		out_u64(o, "segments", NULL, r[i].segments);
		out_u64(o, "writes", NULL, r[i].writes);
		out_obj_end(o);
	}
	out_arr_end(o);
	for (uint32_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && rank_same(&r[i], &r[j]); j++)
			;
		if (j - i == 1)
			out_text(o, "  %s rank %u:", what, i);
		else
			out_text(o, "  %s ranks %u-%u, each:", what, i, j - 1);
		out_text(o, " %llu bytes in %llu segment%s, %llu write%s posted\n", (ull)r[i].bytes,
			 (ull)r[i].segments, pl(r[i].segments), (ull)r[i].writes, pl(r[i].writes));
	}
}

/* "N writes of B bytes" for a count of writes moving bytes in all. */
static void writes_text(struct out *o, const char *lead, uint64_t writes, uint64_t bytes)
{
	out_text(o, "%s%llu write%s of %llu bytes", lead, (ull)writes, pl(writes),
		 (ull)(bytes / writes));
}

/* What each --pack choice gives: writes per request and their average size,
 * the choice made (route by route for auto), and the notifications each
 * decode rank counts, which packing leaves as they are. Where routes land,
 * the pack figures are those of the direct path, and the land line gives
 * what the senders post. */
static void put_writes(struct out *o, const struct kv_geom *g, const struct kv_plan *p)
{
	uint64_t n0 = p->dst[0].notifications;
	bool uniform = true;

	out_obj_begin(o, "pack");
	out_str(o, "asked", NULL, kv_pack_name(p->pack));
	out_u64(o, "max_sge", NULL, p->max_sge);
	out_text(o, "pack%s (--pack %s, --max-sge %u): ",
		 p->routes_landed ? " on the direct path" : "", kv_pack_name(p->pack), p->max_sge);
	out_obj_begin(o, "never");
	out_u64(o, "writes", NULL, p->writes_never);
	out_u64(o, "avg_bytes", NULL, p->wire_bytes / p->writes_never);
	writes_text(o, "never ", p->writes_never, p->wire_bytes);
	out_obj_end(o);
	out_obj_begin(o, "always");
	out_u64(o, "writes", NULL, p->writes_packed);
	out_u64(o, "avg_bytes", NULL, p->wire_bytes / p->writes_packed);
	writes_text(o, ", always ", p->writes_packed, p->wire_bytes);
	out_obj_end(o);
	out_obj_begin(o, "chosen");
	out_u64(o, "writes", NULL, p->writes);
	out_u64(o, "avg_bytes", NULL, p->wire_bytes / p->writes);
	writes_text(o, "; chosen ", p->writes, p->wire_bytes);
	out_u64(o, "routes_packed", NULL, p->routes_packed);
	out_u64(o, "routes", NULL, p->routes);
	out_text(o, ", %u of %u route%s packed\n", p->routes_packed, p->routes, pl(p->routes));
	out_obj_end(o);
	out_obj_end(o);
	/* Landing: which path the routes take, and what the senders post with
	 * both choices (the per-rank writes above). */
	out_obj_begin(o, "land");
	out_str(o, "asked", NULL, kv_pack_name(p->land));
	out_str(o, "path", NULL, p->routes_landed ? "landing" : "direct");
	out_u64(o, "routes_landed", NULL, p->routes_landed);
	out_u64(o, "routes", NULL, p->routes);
	out_u64(o, "writes", NULL, p->writes_posted);
	out_u64(o, "avg_bytes", NULL, p->wire_bytes / p->writes_posted);
	out_text(o, "land (--land %s): %u of %u route%s land%s (path %s); ", kv_pack_name(p->land),
		 p->routes_landed, p->routes, pl(p->routes), p->routes_landed == 1 ? "s" : "",
		 p->routes_landed ? "landing" : "direct");
	writes_text(o, "the senders post ", p->writes_posted, p->wire_bytes);
	out_text(o, "\n");
	out_obj_end(o);
	out_obj_begin(o, "notifications");
	out_u64(o, "qps", NULL, p->qps);
	out_text(o,
		 "notifications: one WRITE_WITH_IMM per layer from each of %u data QP%s of each "
		 "source rank, packed or not: ",
		 p->qps, pl(p->qps));
	out_arr_begin(o, "per_request");
	for (uint32_t d = 0; d < g->dst_tp; d++) {
		out_u64(o, NULL, NULL, p->dst[d].notifications);
		uniform &= p->dst[d].notifications == n0;
	}
	out_arr_end(o);
	if (g->dst_tp == 1)
		out_text(o, "%llu per request on the decode rank\n", (ull)n0);
	else if (uniform)
		out_text(o, "%llu per request on each of the %u decode ranks\n", (ull)n0, g->dst_tp);
	else
		for (uint32_t d = 0; d < g->dst_tp; d++) {
			if (!d)
				out_text(o, "per request on decode ranks 0-%u: ", g->dst_tp - 1);
			out_text(o, "%s%llu", d ? ", " : "", (ull)p->dst[d].notifications);
			out_text(o, "%s", d + 1 == g->dst_tp ? "\n" : "");
		}
	out_obj_end(o);
}

/* The options of `kvxfer plan` beyond the geometry, checked, into *in. */
static int plan_args(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a,
		     const struct kv_geom *g, struct kv_plan_in *in)
{
	int rc;

	if ((rc = kvxfer_fill(ctx, v, a, KVX_TOKENS, KVX_TOKENS)))
		return rc;
	if (!a->tokens_given)
		return usage_err(ctx, "kvxfer plan: give --tokens N, the tokens of one request");
	if ((rc = kvxfer_fill(ctx, v, a, KVX_POOL_PAGES, KVX_POOL_PAGES)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_PREFILL_TOKENS_PER_S, KVX_LINK_GBPS)))
		return rc;
	in->prefill_tokens_per_s = a->prefill_tokens_per_s;
	in->layer_compute_us = a->layer_compute_us;
	in->link_gbps = a->link * 8 / 1e9;
	if (a->tokens < 1 || a->tokens > UINT32_MAX)
		return usage_err(ctx, "invalid --tokens %llu: expected 1 to %u",
				 (unsigned long long)a->tokens, UINT32_MAX);
	if (a->prefill_given && a->layer_compute_given)
		return usage_err(
			ctx,
			"kvxfer plan: give --prefill-tokens-per-s or --layer-compute-us, not both");
	in->tokens = (uint32_t)a->tokens;
	if ((rc = kvxfer_fill(ctx, v, a, KVX_QPS, KVX_LAND)))
		return rc;
	in->qps = (uint32_t)a->qps;
	in->max_sge = (uint32_t)a->max_sge;
	if (kv_pack_parse(a->pack, &in->pack))
		return usage_err(ctx, "invalid --pack '%s': expected auto, always or never",
				 a->pack);
	if (kv_pack_parse(a->land, &in->land))
		return usage_err(ctx, "invalid --land '%s': expected auto, always or never",
				 a->land);
	if (a->pool_pages_given && a->pool_pages < kv_pages_for(g, true, in->tokens))
		return usage_err(ctx,
				 "kvxfer plan: pool too small: a request of %u tokens needs %u pages "
				 "of %u tokens per decode rank, --pool-pages is %llu",
				 in->tokens, kv_pages_for(g, true, in->tokens), g->dst_page_tokens,
				 (unsigned long long)a->pool_pages);
	return 0;
}

/* A request's bytes, and the pages it takes on each side. */
static void put_sizes(struct out *o, const struct kv_geom *g, const struct kv_plan_in *in,
		      const struct kv_plan *p)
{
	char sz[32];

	out_u64(o, "tokens", NULL, in->tokens);
	out_text(o, "request of %u token%s: ", in->tokens, pl(in->tokens));
	out_u64(o, "bytes_per_request", "%llu bytes", p->bytes_per_request);
	rc_format_size(p->bytes_per_request, sz, sizeof(sz));
	out_text(o, " (%s)", sz);
	out_u64(o, "wire_bytes", ", %llu on the wire (replicas counted)\n", p->wire_bytes);
	out_u64(o, "bytes_per_token", "per token: %llu bytes", p->bytes_per_token);
	out_u64(o, "bytes_per_token_layer", " (%llu per layer)\n", p->bytes_per_token_layer);
	out_obj_begin(o, "pages");
	out_obj_begin(o, "src");
	out_u64(o, "per_request", NULL, p->src_pages);
	out_u64(o, "page_bytes", NULL, p->src_page_bytes);
	out_u64(o, "page_tokens", NULL, g->src_page_tokens);
	out_obj_end(o);
	out_obj_begin(o, "dst");
	out_u64(o, "per_request", NULL, p->dst_pages);
	out_u64(o, "page_bytes", NULL, p->dst_page_bytes);
	out_u64(o, "page_tokens", NULL, g->dst_page_tokens);
	out_obj_end(o);
	out_obj_end(o);
	out_text(o,
		 "pages per rank and request: %u source page%s of %llu bytes, %u destination page%s of %llu bytes (per layer half)\n",
		 p->src_pages, pl(p->src_pages), (ull)p->src_page_bytes, p->dst_pages,
		 pl(p->dst_pages), (ull)p->dst_page_bytes);
}

static void put_seg_sizes(struct out *o, const struct kv_plan *p)
{
	out_obj_begin(o, "segments");
	out_u64(o, "total", "segments: %llu per request", p->segments);
	out_u64(o, "min_bytes", NULL, p->seg_min);
	out_u64(o, "max_bytes", NULL, p->seg_max);
	out_u64(o, "avg_bytes", NULL, p->wire_bytes / p->segments);
	if (p->seg_min == p->seg_max)
		out_text(o, ", each of %llu bytes\n", (ull)p->seg_min);
	else
		out_text(o, ", of %llu to %llu bytes (%llu on average)\n", (ull)p->seg_min,
			 (ull)p->seg_max, (ull)(p->wire_bytes / p->segments));
	out_obj_end(o);
}

/* What the transfer must keep up with (the prefill's pace), what a link
 * leaves exposed, and how many requests the pool holds: each null when
 * not asked. */
static void put_timing(struct out *o, const struct kv_plan_in *in, const struct kv_plan *p,
		       bool has_pool, uint64_t pool)
{
	if (p->prefill_s > 0) {
		out_obj_begin(o, "prefill");
		/* One time unit in the text, ms; the JSON keys keep theirs. */
		out_f64(o, "prefill_s", NULL, p->prefill_s);
		out_f64(o, "layer_us", NULL, p->layer_s * 1e6);
		out_text(o, "prefill: %.4g ms, %.4g ms per layer", p->prefill_s * 1e3,
			 p->layer_s * 1e3);
		out_f64(o, "need_per_link_gbit_per_s",
			"; to hide the transfer the busiest source link needs %.4g Gb/s",
			p->need_gbps_per_link);
		out_f64(o, "need_per_link_gbyte_per_s", " (%.4g GB/s)", p->need_gbps_per_link / 8);
		out_f64(o, "need_total_gbit_per_s", ", %.4g Gb/s", p->need_gbps_total);
		out_f64(o, "need_total_gbyte_per_s", " (%.4g GB/s) in all\n",
			p->need_gbps_total / 8);
		out_obj_end(o);
	} else {
		out_null(o, "prefill");
	}
	if (in->link_gbps > 0) {
		out_obj_begin(o, "link");
		out_f64(o, "gbit_per_s", "at %.4g Gb/s", in->link_gbps);
		out_f64(o, "gbyte_per_s", " (%.4g GB/s) per link: exposed transfer",
			in->link_gbps / 8);
		out_f64(o, "exposed_stream_us", NULL, p->exposed_stream_s * 1e6);
		out_f64(o, "exposed_bulk_us", NULL, p->exposed_bulk_s * 1e6);
		out_text(o, " %.4g ms streamed layer by layer, %.4g ms sent after the last layer\n",
			 p->exposed_stream_s * 1e3, p->exposed_bulk_s * 1e3);
		out_obj_end(o);
	} else {
		out_null(o, "link");
	}
	if (has_pool) {
		out_obj_begin(o, "pool");
		out_u64(o, "pages", NULL, pool);
		out_u64(o, "requests_fit", NULL, pool / p->dst_pages);
		out_text(o, "pool: %llu page%s hold%s %llu such request%s\n", (ull)pool, pl(pool),
			 pool == 1 ? "s" : "", (ull)(pool / p->dst_pages), pl(pool / p->dst_pages));
		out_obj_end(o);
	} else {
		out_null(o, "pool");
	}
}

int kvxfer_plan(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a)
{
	struct kv_plan_in in = { 0 };
	struct out *o = &ctx->out;
	struct kv_geom g;
	struct kv_plan *p;
	struct rc_err e;
	char model[128];
	int rc;

	if ((rc = kvxfer_geom(ctx, v, a, &g, model, sizeof(model))) ||
	    (rc = plan_args(ctx, v, a, &g, &in)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_SEGMENTS, KVX_SEGMENTS)))
		return rc;
	p = malloc(sizeof(*p));
	if (!p)
		return fail(ctx, -ENOMEM, "out of memory");
	rc = kv_plan(&g, &in, p, &e);
	if (rc) {
		rc = rc == -EINVAL ? usage_err(ctx, "kvxfer plan: %s", ERR_TEXT(e))
				   : fail(ctx, rc, "%s", ERR_TEXT(e));
		goto out;
	}
	kvxfer_put_geom(o, &g, model);
	put_sizes(o, &g, &in, p);
	if ((rc = put_routes(ctx, &g, in.tokens, in.land, a->segments)))
		goto out;
	out_text(o, "per rank and request:\n");
	put_ranks(o, "src_ranks", p->src, g.src_tp, "source");
	put_ranks(o, "dst_ranks", p->dst, g.dst_tp, "destination");
	put_seg_sizes(o, p);
	put_writes(o, &g, p);
	put_timing(o, &in, p, a->pool_pages_given, a->pool_pages);
out:
	free(p);
	return rc;
}
