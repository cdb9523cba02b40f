// SPDX-License-Identifier: MIT
/* KV geometry: plan figures of two real models worked out by hand, the TP
 * maps, segment coalescing, bad geometry, and a transfer simulated with
 * memcpy over the segments, checked with the content generator. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/kv.h>
#include <rdmactl/kv_core.h>
#include <rdmactl/err_core.h>

#include "check.h"
#include "cmds.h"

static struct kv_geom llama(uint32_t src_tp, uint32_t dst_tp)
{
	/* Llama-3-8B: 32 layers, 8 KV heads of 128 dims, bf16. */
	return (struct kv_geom){ .layout = KV_LAYOUT_PAGED,
				 .dtype = KV_DT_BF16,
				 .layers = 32,
				 .kv_heads = 8,
				 .head_dim = 128,
				 .src_tp = src_tp,
				 .dst_tp = dst_tp,
				 .src_page_tokens = 16,
				 .dst_page_tokens = 16 };
}

static void real_models(void)
{
	struct kv_geom g = llama(1, 1);
	struct kv_plan_in in = { .tokens = 1000 };
	struct kv_plan p;
	struct rc_err e;

	/* K and V: 2 x 8 heads x 128 dims x 2 bytes = 4096 per layer, x 32. */
	CHECK_EQ_U64(kv_bytes_per_token(&g), 2 * 8 * 128 * 2 * 32);
	CHECK_EQ_U64(kv_bytes_per_token(&g), 131072);
	CHECK(kv_plan(&g, &in, &p, &e) == 0);
	CHECK_EQ_U64(p.bytes_per_token_layer, 4096);
	CHECK_EQ_U64(p.bytes_per_request, 131072ULL * 1000);
	CHECK_EQ_U64(p.wire_bytes, 131072ULL * 1000);
	CHECK_EQ_U64(p.src_page_bytes, 16 * 8 * 128 * 2);
	CHECK_EQ_U64(p.src_pages, 63); /* 1000 / 16 = 62.5 */

	/* DeepSeek-V3 MLA: 61 layers, one latent of 512 + 64 rope dims, bf16. */
	struct kv_geom m = { .layout = KV_LAYOUT_MLA,
			     .dtype = KV_DT_BF16,
			     .layers = 61,
			     .kv_heads = 1,
			     .head_dim = 512 + 64,
			     .src_tp = 8,
			     .dst_tp = 4,
			     .src_page_tokens = 64,
			     .dst_page_tokens = 64 };

	CHECK(kv_geom_check(&m, &e) == 0);
	CHECK_EQ_U64(kv_bytes_per_token(&m), 61 * 576 * 2);
	CHECK_EQ_U64(kv_bytes_per_token(&m), 70272);
	CHECK(kv_plan(&m, &in, &p, &e) == 0);
	/* Replicated: every destination rank receives the whole latent. */
	CHECK_EQ_U64(p.wire_bytes, 4 * 70272ULL * 1000);
	CHECK_EQ_U64(p.dst[3].bytes, 70272ULL * 1000);

	/* 2048 tokens at 10000 tokens/s: prefill 0.2048 s; one link per source
	 * rank of Llama at TP 1: 2048 * 131072 B * 8 / 0.2048 s = 10.49 Gb/s. */
	in = (struct kv_plan_in){ .tokens = 2048, .prefill_tokens_per_s = 10000, .link_gbps = 100 };
	CHECK(kv_plan(&g, &in, &p, &e) == 0);
	CHECK(p.need_gbps_per_link > 10.48 && p.need_gbps_per_link < 10.50);
	CHECK(p.layer_s > 0.0063 && p.layer_s < 0.0065);
	/* At 100 Gb/s a layer (8 MiB) takes 0.67 ms < 6.4 ms of compute:
	 * streamed, only the last layer shows; sent in bulk, all 32. */
	CHECK(p.exposed_stream_s > 0.00066 && p.exposed_stream_s < 0.00068);
	CHECK(p.exposed_bulk_s > 0.0214 && p.exposed_bulk_s < 0.0215);
}

#define ROUTE(r, s, d, h, n, so, dof) \
	CHECK((r).src == (s) && (r).dst == (d) && (r).head == (h) && (r).nheads == (n) && \
	      (r).src_head_off == (so) && (r).dst_head_off == (dof))

static void tp_maps(void)
{
	struct kv_route r[KV_MAX_ROUTES];
	struct kv_geom g = llama(4, 2);
	struct kv_heads h;
	int n;

	n = kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(n == 4);
	ROUTE(r[0], 0, 0, 0, 2, 0, 0);
	ROUTE(r[1], 1, 0, 2, 2, 0, 2);
	ROUTE(r[2], 2, 1, 4, 2, 0, 0);
	ROUTE(r[3], 3, 1, 6, 2, 0, 2);
	CHECK_EQ_U64(kv_route_sources(r, n, 0), 0x3);
	CHECK_EQ_U64(kv_route_sources(r, n, 1), 0xc);

	g = llama(2, 4);
	n = kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(n == 4);
	ROUTE(r[0], 0, 0, 0, 2, 0, 0);
	ROUTE(r[1], 0, 1, 2, 2, 2, 0);
	ROUTE(r[2], 1, 2, 4, 2, 0, 0);
	ROUTE(r[3], 1, 3, 6, 2, 2, 0);

	g = llama(8, 1);
	n = kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(n == 8);
	for (int i = 0; i < n; i++)
		ROUTE(r[i], (uint32_t)i, 0, (uint32_t)i, 1, 0, (uint32_t)i);
	CHECK_EQ_U64(kv_route_sources(r, n, 0), 0xff);

	/* 8 KV heads at TP 16: rank r holds a replica of head r/2. */
	g = llama(4, 16);
	kv_rank_heads(&g, 16, 5, &h);
	CHECK(h.first == 2 && h.count == 1);
	n = kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(n == 16);
	ROUTE(r[0], 0, 0, 0, 1, 0, 0);
	ROUTE(r[1], 0, 1, 0, 1, 0, 0);
	ROUTE(r[2], 0, 2, 1, 1, 1, 0);
	ROUTE(r[5], 1, 5, 2, 1, 0, 0);
	ROUTE(r[15], 3, 15, 7, 1, 1, 0);
	/* Replicas on both sides: each destination takes its head from one of
	 * the two source replicas, alternating. */
	g = llama(16, 16);
	n = kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(n == 16);
	for (int i = 0; i < n; i++)
		ROUTE(r[i], (uint32_t)i, (uint32_t)i, (uint32_t)i / 2, 1, 0, 0);
	g = llama(16, 2);
	n = kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(n == 8);
	ROUTE(r[0], 0, 0, 0, 1, 0, 0);
	ROUTE(r[1], 2, 0, 1, 1, 0, 1);
	ROUTE(r[4], 9, 1, 4, 1, 0, 0);
	ROUTE(r[7], 15, 1, 7, 1, 0, 3);

	/* MLA: every destination rank takes the latent from one source rank. */
	struct kv_geom m = { .layout = KV_LAYOUT_MLA,
			     .dtype = KV_DT_BF16,
			     .layers = 2,
			     .kv_heads = 1,
			     .head_dim = 576,
			     .src_tp = 2,
			     .dst_tp = 4,
			     .src_page_tokens = 64,
			     .dst_page_tokens = 64 };
	n = kv_routes(&m, r, KV_MAX_ROUTES);
	CHECK(n == 4);
	ROUTE(r[0], 0, 0, 0, 1, 0, 0);
	ROUTE(r[1], 1, 1, 0, 1, 0, 0);
	ROUTE(r[3], 1, 3, 0, 1, 0, 0);
}

static size_t nsegs(const struct kv_geom *g, int route, uint32_t tokens, struct kv_seg *first)
{
	struct kv_route r[KV_MAX_ROUTES];
	struct kv_seg *s;
	size_t n = 0;

	kv_routes(g, r, KV_MAX_ROUTES);
	CHECK(kv_segments(g, &r[route], tokens, &s, &n, NULL) == 0);
	if (first && n)
		*first = s[0];
	free(s);
	return n;
}

static void coalescing(void)
{
	struct kv_geom g = llama(1, 1);
	struct kv_seg s;

	/* Same TP, same pages: one run per page (16 tokens x 8 heads x 256 B). */
	CHECK_EQ_U64(nsegs(&g, 0, 40, &s), 3);
	CHECK_EQ_U64(s.len, 16 * 8 * 256);
	/* 16-token source pages into 32-token destination pages: a run cannot
	 * span two source pages, so still 3 (16 + 16 + 8 tokens). */
	g.dst_page_tokens = 32;
	CHECK_EQ_U64(nsegs(&g, 0, 40, NULL), 3);
	/* 32 into 16: the first source page splits over two destination pages. */
	g.src_page_tokens = 32;
	g.dst_page_tokens = 16;
	CHECK_EQ_U64(nsegs(&g, 0, 40, &s), 3);
	CHECK_EQ_U64(s.len, 16 * 8 * 256);
	/* TP 2 -> 1, NHD: a source row (4 heads) lands in half a destination
	 * row: one run per token. HND: heads are planes, one run per page. */
	g = llama(2, 1);
	CHECK_EQ_U64(nsegs(&g, 1, 16, &s), 16);
	CHECK_EQ_U64(s.len, 4 * 256);
	CHECK_EQ_U64(s.dst_off, 4 * 256); /* the second source's half of the row */
	g.page_layout = KV_PAGE_HND;
	CHECK_EQ_U64(nsegs(&g, 1, 16, &s), 1);
	CHECK_EQ_U64(s.len, 4 * 16 * 256);
	CHECK_EQ_U64(s.dst_off, 4 * 16 * 256);
	/* TP 1 -> 2, NHD: the source row splits in two. */
	g = llama(1, 2);
	CHECK_EQ_U64(nsegs(&g, 1, 16, &s), 16);
	CHECK_EQ_U64(s.src_off, 4 * 256);
}

static void bad_geometry(void)
{
	struct kv_geom g = llama(3, 1);
	struct rc_err e;
	char t[600]; /* the message as rdmactl shows it, the option named */

	CHECK(kv_geom_check(&g, &e) == -EINVAL);
	CHECK(!strstr(e.msg, "--") && strstr(cmds_err_text(&e, t, sizeof(t)),
					     "--src-tp 3 does not fit 8 KV heads") != NULL);
	g = llama(1, 6);
	CHECK(kv_geom_check(&g, &e) == -EINVAL);
	CHECK(!strstr(e.msg, "--") && strstr(cmds_err_text(&e, t, sizeof(t)), "--dst-tp 6") != NULL);
	g = llama(16, 2); /* a multiple of the heads: replicas, fine */
	CHECK(kv_geom_check(&g, &e) == 0);
	g = llama(1, 1);
	g.layers = 0;
	CHECK(kv_geom_check(&g, &e) == -EINVAL);
	CHECK(!strstr(e.msg, "--") && strstr(cmds_err_text(&e, t, sizeof(t)), "--layers 0") != NULL);
	g = llama(1, 1);
	g.dst_page_tokens = 0;
	CHECK(kv_geom_check(&g, &e) == -EINVAL);
	CHECK(!strstr(e.msg, "--") &&
	      strstr(cmds_err_text(&e, t, sizeof(t)), "--dst-page-tokens 0") != NULL);
	g = llama(1, 1);
	g.head_dim = 0;
	CHECK(kv_geom_check(&g, &e) == -EINVAL);
	g = llama(1, 1);
	g.src_tp = 65;
	CHECK(kv_geom_check(&g, &e) == -EINVAL);
	struct kv_plan p;
	struct kv_plan_in in = { .tokens = 0 };
	g = llama(1, 1);
	CHECK(kv_plan(&g, &in, &p, &e) == -EINVAL);
	CHECK(!strstr(e.msg, "--") &&
	      !strcmp(cmds_err_text(&e, t, sizeof(t)), "--tokens must be at least 1"));
	/* two names, the first word also elsewhere: each where the message names it */
	rc_err_opt(&e, EINVAL, "no rank: give {rank} and {world}, or not");
	CHECK(!strcmp(cmds_err_text(&e, t, sizeof(t)), "no rank: give --rank and --world, or not"));
	rc_err_opt(&e, EINVAL, "x {lat_clock} y");
	rc_err_wrap(&e, 0, "{max_conns} %d", 4);
	CHECK(!strcmp(cmds_err_text(&e, t, sizeof(t)), "--max-conns 4: x --lat-clock y"));
}

/* Move one layer half from every source rank to every destination rank by
 * memcpy over the segments, into scattered destination pages, and check. */
static int simulate(const struct kv_geom *g, uint32_t tokens)
{
	struct kv_route r[KV_MAX_ROUTES];
	uint32_t sp = kv_pages_for(g, false, tokens), dp = kv_pages_for(g, true, tokens);
	uint64_t sb = kv_page_bytes(g, false), db = kv_page_bytes(g, true);
	int n = kv_routes(g, r, KV_MAX_ROUTES), bad = 0;
	char **src = calloc(g->src_tp * sp, sizeof(char *));
	char **dst = calloc(g->dst_tp * dp, sizeof(char *));
	char *dpool = calloc((size_t)g->dst_tp * dp, db);
	char *spool = calloc((size_t)g->src_tp * sp, sb);
	struct rc_err e;

	for (uint32_t s = 0; s < g->src_tp; s++) {
		for (uint32_t i = 0; i < sp; i++)
			src[s * sp + i] = spool + (s * sp + i) * sb;
		kv_fill(g, false, s, 7, 3, 1, tokens, &src[s * sp]);
	}
	/* Destination pages in reverse order: logical page i is physical dp-1-i. */
	for (uint32_t d = 0; d < g->dst_tp; d++)
		for (uint32_t i = 0; i < dp; i++)
			dst[d * dp + i] = dpool + (d * dp + dp - 1 - i) * db;
	for (int k = 0; k < n; k++) {
		struct kv_seg *s;
		size_t ns;

		CHECK(kv_segments(g, &r[k], tokens, &s, &ns, NULL) == 0);
		for (size_t j = 0; j < ns; j++)
			memcpy(dst[r[k].dst * dp + s[j].dst_page] + s[j].dst_off,
			       src[r[k].src * sp + s[j].src_page] + s[j].src_off, s[j].len);
		free(s);
	}
	for (uint32_t d = 0; d < g->dst_tp; d++)
		if (kv_check(g, d, 7, 3, 1, tokens, &dst[d * dp], &e))
			bad++;
	/* One flipped byte is found and named. */
	dst[0][5] ^= 0x40;
	CHECK(kv_check(g, 0, 7, 3, 1, tokens, dst, &e) == -EBADMSG);
	CHECK(strstr(e.msg, "request 7 layer 3 ") != NULL);
	free(src);
	free(dst);
	free(dpool);
	free(spool);
	return bad;
}

/* Rows as kv_content gives them, for each element size: bf16 little-endian,
 * fp8 one byte; 1 KV head, one page of 2 tokens; rows of whole 32-byte
 * passes (128 dims), a pass and a word (20 bf16 dims) and rows with a tail
 * (13 fp8 dims, 5 bf16 ones). The last byte of one element changed is named
 * by its dim, with what was found and what was expected: in a pass, in the
 * word after one, in a word and in the tail. */
static void row_content(void)
{
	static const struct {
		uint32_t ds, dims, dim;
	} c[] = { { 2, 128, 77 }, { 1, 128, 77 }, { 2, 20, 17 },
		  { 1, 13, 12 },  { 2, 5, 4 },    { 2, 5, 0 } };

	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		struct kv_geom g = llama(1, 1);
		uint32_t ds = c[k].ds, n = c[k].dims, bad = 0;
		unsigned char page[2 * 128 * 2 + 1]; /* and one byte past the rows */
		char *pp[1] = { (char *)page };
		struct rc_err e = { 0 };
		char want[96];

		g.dtype = ds == 1 ? KV_DT_FP8 : KV_DT_BF16;
		g.layers = g.kv_heads = 1;
		g.head_dim = n;
		g.src_page_tokens = g.dst_page_tokens = 2;
		memset(page, 0, sizeof(page));
		kv_fill(&g, true, 0, 5, 0, 1, 2, pp);
		for (uint32_t t = 0; t < 2; t++)
			for (uint32_t d = 0; d < n; d++) {
				const unsigned char *p = page + (t * n + d) * ds;
				uint32_t v = kv_content(5, 0, 1, t, 0, d, ds);

				bad += (ds == 1 ? p[0] : (uint32_t)(p[0] | p[1] << 8)) != v;
			}
		CHECK_EQ_U64(bad, 0);
		CHECK(page[2 * n * ds] == 0); /* nothing past the rows */
		CHECK(kv_check(&g, 0, 5, 0, 1, 2, pp, &e) == 0);
		page[(n + c[k].dim) * ds + ds - 1] ^= 0x01;
		CHECK(kv_check(&g, 0, 5, 0, 1, 2, pp, &e) == -EBADMSG);
		snprintf(want, sizeof(want), "token 1 head 0 dim %u: found 0x%x, expected 0x%x",
			 c[k].dim, kv_content(5, 0, 1, 1, 0, c[k].dim, ds) ^ 1u << 8 * (ds - 1),
			 kv_content(5, 0, 1, 1, 0, c[k].dim, ds));
		CHECK(strstr(e.msg, want) != NULL);
	}
}

/* Where bytes land, worked out by hand (not from the layout code that
 * simulate() shares with the engine): 4 KV heads of 2 bf16 dims (4-byte
 * rows), TP 1 -> 2, source pages of 4 tokens, destination pages of 3,
 * 5 tokens. Destination rank 1 holds global heads 2 and 3. */
static void hand_offsets(void)
{
	struct kv_geom g = { .layout = KV_LAYOUT_PAGED,
			     .dtype = KV_DT_BF16,
			     .layers = 1,
			     .kv_heads = 4,
			     .head_dim = 2,
			     .src_tp = 1,
			     .dst_tp = 2,
			     .src_page_tokens = 4,
			     .dst_page_tokens = 3 };
	/* {src_page, src_off, dst_page, dst_off, len} of the route 0 -> 1.
	 * NHD (token, head, dim): a token's two heads are 8 adjacent bytes at
	 * source offset (t%4*4 + 2)*4 and destination offset (t%3*2)*4.
	 * HND (head, token, dim): a head's tokens run on, up to a page end. */
	static const struct kv_seg nhd[] = { { 0, 8, 0, 0, 8 },
					     { 0, 24, 0, 8, 8 },
					     { 0, 40, 0, 16, 8 },
					     { 0, 56, 1, 0, 8 },
					     { 1, 8, 1, 8, 8 } };
	static const struct kv_seg hnd[] = { { 0, 32, 0, 0, 12 },  { 0, 44, 1, 0, 4 },
					     { 0, 48, 0, 12, 12 }, { 0, 60, 1, 12, 4 },
					     { 1, 32, 1, 4, 4 },   { 1, 48, 1, 16, 4 } };
	/* Destination rank 1, {token, global head, dim, NHD offset, HND offset},
	 * page = token / 3: NHD (t%3*2 + h-2)*4 + d*2, HND ((h-2)*3 + t%3)*4 + d*2. */
	static const uint32_t at[][5] = { { 0, 2, 0, 0, 0 },
					  { 2, 2, 0, 16, 8 },
					  { 4, 3, 1, 14, 18 },
					  { 1, 2, 1, 10, 6 },
					  { 3, 2, 1, 2, 2 } };
	struct kv_route r[KV_MAX_ROUTES], *r1 = NULL;
	int n;

	n = kv_routes(&g, r, KV_MAX_ROUTES);
	for (int k = 0; k < n; k++)
		if (r[k].src == 0 && r[k].dst == 1)
			r1 = &r[k];
	CHECK(r1 != NULL);
	if (!r1)
		return;
	CHECK_EQ_U64(kv_page_bytes(&g, true), 3 * 2 * 4);
	for (int pl = 0; pl < 2; pl++) {
		const struct kv_seg *want = pl ? hnd : nhd;
		size_t nwant = pl ? sizeof(hnd) / sizeof(hnd[0]) : sizeof(nhd) / sizeof(nhd[0]),
		       ns = 0;
		unsigned char pages[2][24];
		char *pp[2] = { (char *)pages[0], (char *)pages[1] };
		struct kv_seg *s = NULL;

		g.page_layout = (enum kv_page_layout)pl;
		CHECK(kv_segments(&g, r1, 5, &s, &ns, NULL) == 0);
		CHECK_EQ_U64(ns, nwant);
		for (size_t j = 0; s && j < ns && j < nwant; j++) {
			CHECK_EQ_U64(s[j].src_page, want[j].src_page);
			CHECK_EQ_U64(s[j].src_off, want[j].src_off);
			CHECK_EQ_U64(s[j].dst_page, want[j].dst_page);
			CHECK_EQ_U64(s[j].dst_off, want[j].dst_off);
			CHECK_EQ_U64(s[j].len, want[j].len);
		}
		free(s);
		memset(pages, 0, sizeof(pages));
		kv_fill(&g, true, 1, 9, 0, 1, 5, pp);
		for (size_t j = 0; j < sizeof(at) / sizeof(at[0]); j++) {
			uint32_t v = kv_content(9, 0, 1, at[j][0], at[j][1], at[j][2], 2);
			const unsigned char *p = pages[at[j][0] / 3] + at[j][pl ? 4 : 3];

			CHECK_EQ_U64((uint32_t)(p[0] | p[1] << 8), v);
		}
	}
}

/* Writes with and without packing, for hand_offsets' routes, worked out
 * by hand; the auto choice at its edges; the 64 KiB cap on a merged write. */
static void packing(void)
{
	struct kv_seg nhd[] = { { 0, 8, 0, 0, 8 },
				{ 0, 24, 0, 8, 8 },
				{ 0, 40, 0, 16, 8 },
				{ 0, 56, 1, 0, 8 },
				{ 1, 8, 1, 8, 8 } };
	struct kv_seg hnd[] = { { 0, 32, 0, 0, 12 }, { 0, 44, 1, 0, 4 }, { 0, 48, 0, 12, 12 },
				{ 0, 60, 1, 12, 4 }, { 1, 32, 1, 4, 4 }, { 1, 48, 1, 16, 4 } };
	struct kv_seg big[] = { { 0, 0, 0, 0, 40000 }, { 1, 0, 0, 40000, 40000 } };
	enum kv_pack p;

	/* nhd: no two rows touch on the source; packed, a destination page
	 * each (3 rows, then 2). */
	CHECK_EQ_U64(kv_seg_writes(nhd, 5, false), 5);
	kv_segments_dst_order(nhd, 5);
	CHECK_EQ_U64(kv_seg_writes(nhd, 5, true), 2);
	/* hnd: page 0 is one run; page 1 holds bytes 0-8 and 12-20. */
	CHECK_EQ_U64(kv_seg_writes(hnd, 6, false), 6);
	kv_segments_dst_order(hnd, 6);
	CHECK_EQ_U64(hnd[1].dst_page, 0);
	CHECK_EQ_U64(hnd[2].dst_off, 0);
	CHECK_EQ_U64(hnd[3].dst_off, 4);
	CHECK_EQ_U64(kv_seg_writes(hnd, 6, true), 3);
	CHECK_EQ_U64(kv_seg_writes(big, 2, true), 2);
	CHECK_EQ_U64(kv_seg_writes(big, 1, true), 1);
	/* Gathered: nhd's destination page 0 takes three pieces of the source
	 * (rows at 8, 24 and 40), page 1 two: at most two a write, page 0 goes
	 * as two; three or more, as the copy; 0 and 1 mean the copy. */
	CHECK_EQ_U64(kv_gather_writes(nhd, 5, 2, 0), 3);
	CHECK_EQ_U64(kv_gather_writes(nhd, 5, 3, 0), 2);
	CHECK_EQ_U64(kv_gather_writes(nhd, 5, 32, 0), 2);
	CHECK_EQ_U64(kv_gather_writes(nhd, 5, 1, 0), 2);
	CHECK_EQ_U64(kv_gather_writes(nhd, 5, 0, 0), 2);
	CHECK_EQ_U64(kv_gather_writes(big, 2, 32, 0), 2); /* the 64 KiB cap holds */
	{
		/* Segments that follow one another in the source make one piece;
		 * with src_page_bytes 16, source pages 0 and 1 follow too. */
		struct kv_seg run[] = { { 0, 0, 0, 0, 8 },
					{ 0, 8, 0, 8, 8 },
					{ 0, 32, 0, 16, 8 },
					{ 0, 48, 0, 24, 8 } };
		struct kv_seg pages[] = { { 0, 8, 0, 0, 8 }, { 1, 0, 0, 8, 8 }, { 1, 12, 0, 16, 4 } };

		CHECK_EQ_U64(kv_gather_writes(run, 2, 1, 0), 1);
		CHECK_EQ_U64(kv_gather_writes(run, 3, 2, 0), 1);
		CHECK_EQ_U64(kv_gather_writes(run, 4, 2, 0), 2);
		CHECK_EQ_U64(kv_gather_writes(run, 4, 3, 0), 1);
		CHECK_EQ_U64(kv_gather_writes(pages, 3, 2, 0), 2);
		CHECK_EQ_U64(kv_gather_writes(pages, 3, 2, 16), 1);
	}

	CHECK(kv_pack_choose(KV_PACK_AUTO, 40, 5, 2) == KV_PACK_ALWAYS);
	CHECK(kv_pack_choose(KV_PACK_AUTO, 40, 6, 3) == KV_PACK_ALWAYS); /* halved exactly */
	CHECK(kv_pack_choose(KV_PACK_AUTO, 40, 5, 3) == KV_PACK_NEVER);
	CHECK(kv_pack_choose(KV_PACK_AUTO, 4 * KV_PACK_SMALL, 4, 1) == KV_PACK_NEVER);
	CHECK(kv_pack_choose(KV_PACK_AUTO, 4 * KV_PACK_SMALL - 1, 4, 1) == KV_PACK_ALWAYS);
	CHECK(kv_pack_choose(KV_PACK_ALWAYS, 40, 5, 5) == KV_PACK_ALWAYS);
	CHECK(kv_pack_choose(KV_PACK_NEVER, 40, 5, 1) == KV_PACK_NEVER);
	CHECK(kv_pack_parse("always", &p) == 0 && p == KV_PACK_ALWAYS);
	CHECK(kv_pack_parse("sometimes", &p) == -EINVAL);
	CHECK(!strcmp(kv_pack_name(KV_PACK_NEVER), "never"));
}

static void transfer(void)
{
	struct kv_geom g;
	static const uint32_t tps[][2] = { { 1, 1 },  { 4, 2 },  { 2, 4 },  { 8, 1 },
					   { 4, 16 }, { 16, 2 }, { 16, 16 } };

	for (int pl = 0; pl < 2; pl++) {
		for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
			g = llama(tps[i][0], tps[i][1]);
			g.page_layout = (enum kv_page_layout)pl;
			g.head_dim = 8;
			g.src_page_tokens = 4;
			g.dst_page_tokens = 6;
			CHECK(simulate(&g, 23) == 0);
		}
	}
	g = (struct kv_geom){ .layout = KV_LAYOUT_MLA,
			      .dtype = KV_DT_FP8,
			      .layers = 4,
			      .kv_heads = 1,
			      .head_dim = 24,
			      .src_tp = 2,
			      .dst_tp = 3,
			      .src_page_tokens = 8,
			      .dst_page_tokens = 4 };
	CHECK(simulate(&g, 17) == 0);
	/* Content depends on every coordinate. */
	CHECK(kv_content(1, 2, 0, 4, 5, 6, 2) != kv_content(1, 2, 1, 4, 5, 6, 2));
	CHECK(kv_content(1, 2, 0, 4, 5, 6, 2) != kv_content(2, 2, 0, 4, 5, 6, 2));
	CHECK(kv_content(1, 2, 0, 4, 5, 6, 2) != kv_content(1, 2, 0, 4, 5, 7, 2));
}

int main(void)
{
	real_models();
	tp_maps();
	coalescing();
	bad_geometry();
	hand_offsets();
	row_content();
	packing();
	transfer();
	CHECK_DONE();
}
