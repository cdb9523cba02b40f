// SPDX-License-Identifier: MIT
/*
 * KV-cache geometry: which heads each TP rank holds, who sends what to
 * whom, the coalesced segments of a layer and the deterministic content
 * both sides agree on (the plan's figures: kv_plan.c). Pure arithmetic:
 * no device.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/kv.h>
#include <rdmactl/kv_core.h>

#include "kv_int.h"

static const char *const dtype_names[] = { "bf16", "fp16", "fp8" };
static const char *const layout_names[] = { "paged", "mla" };
static const char *const page_layout_names[] = { "nhd", "hnd" };

static int word_parse(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -EINVAL;
}

const char *kv_dtype_name(enum kv_dtype d)
{
	return dtype_names[d];
}
const char *kv_layout_name(enum kv_layout l)
{
	return layout_names[l];
}
const char *kv_page_layout_name(enum kv_page_layout l)
{
	return page_layout_names[l];
}

int kv_dtype_parse(const char *s, enum kv_dtype *d)
{
	int i = word_parse(s, dtype_names, 3);

	if (i < 0)
		return i;
	*d = (enum kv_dtype)i;
	return 0;
}

int kv_layout_parse(const char *s, enum kv_layout *l)
{
	int i = word_parse(s, layout_names, 2);

	if (i < 0)
		return i;
	*l = (enum kv_layout)i;
	return 0;
}

int kv_page_layout_parse(const char *s, enum kv_page_layout *l)
{
	int i = word_parse(s, page_layout_names, 2);

	if (i < 0)
		return i;
	*l = (enum kv_page_layout)i;
	return 0;
}

uint32_t kv_dtype_size(enum kv_dtype d)
{
	return d == KV_DT_FP8 ? 1 : 2;
}

uint32_t kv_halves(const struct kv_geom *g)
{
	return g->layout == KV_LAYOUT_MLA ? 1 : 2;
}

static uint32_t model_heads(const struct kv_geom *g)
{
	return g->layout == KV_LAYOUT_MLA ? 1 : g->kv_heads;
}

uint32_t kv_row_bytes(const struct kv_geom *g)
{
	return g->head_dim * kv_dtype_size(g->dtype);
}

static int check_tp(const struct kv_geom *g, uint32_t tp, const char *side, struct rc_err *err)
{
	const char *param = strcmp(side, "src") ? "dst_tp" : "src_tp";

	if (tp < 1 || tp > KV_MAX_TP)
		return rc_err_param(err, param, EINVAL, "%s %u: expected 1 to %d", param, tp,
				    KV_MAX_TP);
	if (g->layout == KV_LAYOUT_PAGED && g->kv_heads % tp && tp % g->kv_heads)
		return rc_err_param(err, param, EINVAL,
				    "%s %u does not fit %u KV heads: the TP degree must divide "
				    "the head count, or be a multiple of it (replicas)",
				    param, tp, g->kv_heads);
	return 0;
}

int kv_geom_check(const struct kv_geom *g, struct rc_err *err)
{
	uint64_t page;
	int rc;

	if (g->layers < 1 || g->layers > KV_MAX_LAYERS)
		return rc_err_param(err, "layers", EINVAL, "layers %u: expected 1 to %d", g->layers,
				    KV_MAX_LAYERS);
	if (g->layout == KV_LAYOUT_PAGED && (g->kv_heads < 1 || g->kv_heads > KV_MAX_HEADS))
		return rc_err_param(err, "kv_heads", EINVAL, "kv_heads %u: expected 1 to %d",
				    g->kv_heads, KV_MAX_HEADS);
	if (g->layout == KV_LAYOUT_MLA && g->kv_heads != 1)
		return rc_err_set(err, EINVAL,
				  "the MLA layout has no KV heads (one latent per token)");
	if (g->head_dim < 1 || g->head_dim > KV_MAX_DIM)
		return rc_err_param(err, g->layout == KV_LAYOUT_MLA ? "latent_dim" : "head_dim",
				    EINVAL, "%s %u: expected 1 to %d",
				    g->layout == KV_LAYOUT_MLA ? "latent_dim" : "head_dim",
				    g->head_dim, KV_MAX_DIM);
	if ((rc = check_tp(g, g->src_tp, "src", err)) || (rc = check_tp(g, g->dst_tp, "dst", err)))
		return rc;
	if (g->src_page_tokens < 1 || g->src_page_tokens > KV_MAX_PAGE_TOKENS)
		return rc_err_param(err, "src_page_tokens", EINVAL,
				    "src_page_tokens %u: expected 1 to %d tokens per page",
				    g->src_page_tokens, KV_MAX_PAGE_TOKENS);
	if (g->dst_page_tokens < 1 || g->dst_page_tokens > KV_MAX_PAGE_TOKENS)
		return rc_err_param(err, "dst_page_tokens", EINVAL,
				    "dst_page_tokens %u: expected 1 to %d tokens per page",
				    g->dst_page_tokens, KV_MAX_PAGE_TOKENS);
	page = kv_page_bytes(g, false) > kv_page_bytes(g, true) ? kv_page_bytes(g, false)
								: kv_page_bytes(g, true);
	if (page > UINT32_MAX)
		return rc_err_set(err, EINVAL, "a page of %llu bytes is too large (at most 4 GiB)",
				  (unsigned long long)page);
	return 0;
}

void kv_rank_heads(const struct kv_geom *g, uint32_t tp, uint32_t rank, struct kv_heads *h)
{
	uint32_t n = model_heads(g);

	if (tp <= n) {
		h->count = n / tp;
		h->first = rank * h->count;
	} else {
		h->count = 1;
		h->first = rank * n / tp;
	}
}

uint64_t kv_page_bytes(const struct kv_geom *g, bool dst)
{
	struct kv_heads h;

	kv_rank_heads(g, dst ? g->dst_tp : g->src_tp, 0, &h);
	return (uint64_t)(dst ? g->dst_page_tokens : g->src_page_tokens) * h.count * kv_row_bytes(g);
}

uint64_t kv_bytes_per_token(const struct kv_geom *g)
{
	return (uint64_t)g->layers * kv_halves(g) * model_heads(g) * kv_row_bytes(g);
}

uint32_t kv_pages_for(const struct kv_geom *g, bool dst, uint32_t tokens)
{
	uint32_t pt = dst ? g->dst_page_tokens : g->src_page_tokens;

	return (uint32_t)(((uint64_t)tokens + pt - 1) / pt);
}

/* The source rank that sends head h to destination rank d: the one that
 * holds it, or among several replicas, one picked by d to spread the load. */
static uint32_t source_of(const struct kv_geom *g, uint32_t h, uint32_t d)
{
	uint32_t n = model_heads(g), rs;

	if (g->src_tp <= n)
		return h / (n / g->src_tp);
	rs = g->src_tp / n;
	return h * rs + d % rs;
}

int kv_routes(const struct kv_geom *g, struct kv_route *r, int max)
{
	int n = 0;

	for (uint32_t d = 0; d < g->dst_tp; d++) {
		struct kv_heads dh, sh;

		kv_rank_heads(g, g->dst_tp, d, &dh);
		for (uint32_t h = dh.first; h < dh.first + dh.count; h++) {
			uint32_t s = source_of(g, h, d);

			if (n && r[n - 1].dst == d && r[n - 1].src == s &&
			    r[n - 1].head + r[n - 1].nheads == h) {
				r[n - 1].nheads++;
				continue;
			}
			if (n >= max)
				return -ENOSPC;
			kv_rank_heads(g, g->src_tp, s, &sh);
			r[n++] = (struct kv_route){ .src = s,
						    .dst = d,
						    .head = h,
						    .nheads = 1,
						    .src_head_off = h - sh.first,
						    .dst_head_off = h - dh.first };
		}
	}
	return n;
}

uint64_t kv_route_sources(const struct kv_route *r, int n, uint32_t dst)
{
	uint64_t set = 0;

	for (int i = 0; i < n; i++)
		if (r[i].dst == dst)
			set |= 1ULL << r[i].src;
	return set;
}

uint64_t kv_route_bytes(const struct kv_geom *g, const struct kv_route *r, uint32_t tokens)
{
	return (uint64_t)tokens * r->nheads * kv_row_bytes(g);
}

/* Offset of (token in page, head in rank) inside a page. */
static uint64_t elem_off(const struct kv_geom *g, uint32_t page_tokens, uint32_t rank_heads,
			 uint32_t tok, uint32_t head)
{
	uint64_t row = kv_row_bytes(g);

	if (g->page_layout == KV_PAGE_HND)
		return ((uint64_t)head * page_tokens + tok) * row;
	return ((uint64_t)tok * rank_heads + head) * row;
}

struct seg_list {
	struct kv_seg *v;
	size_t n, cap;
};

static int seg_add(struct seg_list *l, uint32_t sp, uint32_t so, uint32_t dp, uint32_t dof,
		   uint32_t len)
{
	struct kv_seg *last = l->n ? &l->v[l->n - 1] : NULL;

	if (last && last->src_page == sp && last->dst_page == dp &&
	    last->src_off + last->len == so && last->dst_off + last->len == dof) {
		last->len += len;
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct kv_seg *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct kv_seg){ sp, so, dp, dof, len };
	return 0;
}

int kv_segments(const struct kv_geom *g, const struct kv_route *r, uint32_t tokens,
		struct kv_seg **out, size_t *n, struct rc_err *err)
{
	uint32_t spt = g->src_page_tokens, dpt = g->dst_page_tokens, row = kv_row_bytes(g);
	struct kv_heads sh, dh;
	struct seg_list l = { 0 };
	int rc = 0;

	kv_rank_heads(g, g->src_tp, r->src, &sh);
	kv_rank_heads(g, g->dst_tp, r->dst, &dh);
	/* Walk the source in memory order, so that runs grow forward. */
	for (uint32_t sp = 0; !rc && sp < kv_pages_for(g, false, tokens); sp++) {
		uint32_t t0 = sp * spt, t1 = t0 + spt < tokens ? t0 + spt : tokens;
		bool hnd = g->page_layout == KV_PAGE_HND;
		uint32_t outer = hnd ? r->nheads : t1 - t0, inner = hnd ? t1 - t0 : r->nheads;

		for (uint32_t a = 0; !rc && a < outer; a++) {
			for (uint32_t b = 0; !rc && b < inner; b++) {
				uint32_t t = t0 + (hnd ? b : a), i = hnd ? a : b;

				rc = seg_add(&l, sp,
					     (uint32_t)elem_off(g, spt, sh.count, t % spt,
								r->src_head_off + i),
					     t / dpt,
					     (uint32_t)elem_off(g, dpt, dh.count, t % dpt,
								r->dst_head_off + i),
					     row);
			}
		}
	}
	if (rc) {
		free(l.v);
		return rc_err_set(err, ENOMEM, "out of memory for %zu segments", l.n);
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t row_seed(uint32_t req, uint32_t layer, uint32_t half, uint32_t token, uint32_t head)
{
	return mix64(((uint64_t)req << 32 | (uint64_t)layer << 1 | half) ^
		     mix64((uint64_t)token << 32 | head));
}

#define WORD_STEP 0x9e3779b97f4a7c15ULL
#define WORD_MUL 0xd6e8feb86659fd93ULL

/* Word j of a row's content: 8 bytes, little-endian in memory. */
static inline uint64_t word_at(uint64_t seed, uint64_t j)
{
	uint64_t w = (seed ^ j * WORD_STEP) * WORD_MUL;

	return htole64(w ^ w >> 32);
}

/* Byte b of a row's content. */
static unsigned char byte_at(uint64_t seed, uint32_t b)
{
	uint64_t w = word_at(seed, b / 8);

	return ((const unsigned char *)&w)[b % 8];
}

/* Element i of a row of ds-byte elements (little-endian). */
static uint32_t elem_of(uint64_t seed, uint32_t i, uint32_t ds)
{
	uint32_t v = 0;

	for (uint32_t k = ds; k-- > 0;)
		v = v << 8 | byte_at(seed, i * ds + k);
	return v;
}

/* A row of n bytes: the bytes of its words in order, the last word's
 * first n % 8 if n is no multiple of 8. Eight bytes a step, four steps a
 * pass: the fill is most of what a request costs the sender's CPU and the
 * check the receiver's with --verify. An emulated CPU (the SoftRoCE guest)
 * fills a row a byte at a time twenty times slower than a word at a time,
 * and a word a pass a third slower than four. */
static void fill_row(unsigned char *p, uint64_t seed, uint32_t n)
{
	uint32_t j = 0;

	for (; j + 32 <= n; j += 32) {
		uint64_t w[4] = { word_at(seed, j / 8), word_at(seed, j / 8 + 1),
				  word_at(seed, j / 8 + 2), word_at(seed, j / 8 + 3) };

		memcpy(p + j, w, sizeof(w));
	}
	for (; j + 8 <= n; j += 8) {
		uint64_t w = word_at(seed, j / 8);

		memcpy(p + j, &w, 8);
	}
	for (; j < n; j++)
		p[j] = byte_at(seed, j);
}

/* The first byte of the row of n bytes that is not fill_row's, or n. */
static uint32_t check_row(const unsigned char *p, uint64_t seed, uint32_t n)
{
	uint32_t j = 0;

	for (; j + 32 <= n; j += 32) {
		uint64_t g[4];

		memcpy(g, p + j, sizeof(g));
		if ((g[0] ^ word_at(seed, j / 8)) | (g[1] ^ word_at(seed, j / 8 + 1)) |
		    (g[2] ^ word_at(seed, j / 8 + 2)) | (g[3] ^ word_at(seed, j / 8 + 3)))
			break; /* the word loop finds which */
	}
	for (; j + 8 <= n; j += 8) {
		uint64_t w = word_at(seed, j / 8), got;

		memcpy(&got, p + j, 8);
		if (got != w)
			break;
	}
	for (; j < n; j++)
		if (p[j] != byte_at(seed, j))
			return j;
	return n;
}

uint32_t kv_content(uint32_t req, uint32_t layer, uint32_t half, uint32_t token, uint32_t head,
		    uint32_t dim, uint32_t elem_bytes)
{
	return elem_of(row_seed(req, layer, half, token, head), dim, elem_bytes);
}

/* Visit every element row of one rank's pages: fill, or compare. */
static int walk(const struct kv_geom *g, bool dst, uint32_t rank, uint32_t req, uint32_t layer,
		uint32_t half, uint32_t t0, uint32_t tokens, char *const *pages, bool check,
		struct rc_err *err)
{
	uint32_t pt = dst ? g->dst_page_tokens : g->src_page_tokens, ds = kv_dtype_size(g->dtype);
	uint32_t n = g->head_dim * ds; /* bytes a row */
	struct kv_heads h;

	kv_rank_heads(g, dst ? g->dst_tp : g->src_tp, rank, &h);
	for (uint32_t t = t0; t < tokens; t++) {
		for (uint32_t i = 0; i < h.count; i++) {
			unsigned char *p = (unsigned char *)pages[t / pt] +
					   elem_off(g, pt, h.count, t % pt, i);
			uint64_t seed = row_seed(req, layer, half, t, h.first + i);
			uint32_t bad, d, v, got;

			if (!check) {
				fill_row(p, seed, n);
				continue;
			}
			bad = check_row(p, seed, n);
			if (bad == n)
				continue;
			d = bad / ds; /* the element of the first wrong byte */
			p += (size_t)d * ds;
			got = ds == 2 ? (uint32_t)(p[0] | p[1] << 8) : p[0];
			v = elem_of(seed, d, ds);
			return rc_err_set(err, EBADMSG,
					  "request %u layer %u %s token %u head %u dim %u: "
					  "found 0x%x, expected 0x%x",
					  req, layer,
					  g->layout == KV_LAYOUT_MLA ? "latent"
					  : half                     ? "V"
								     : "K",
					  t, h.first + i, d, got, v);
		}
	}
	return 0;
}

void kv_fill(const struct kv_geom *g, bool dst, uint32_t rank, uint32_t req, uint32_t layer,
	     uint32_t half, uint32_t tokens, char *const *pages)
{
	walk(g, dst, rank, req, layer, half, 0, tokens, pages, false, NULL);
}

int kv_check(const struct kv_geom *g, uint32_t rank, uint32_t req, uint32_t layer, uint32_t half,
	     uint32_t tokens, char *const *pages, struct rc_err *err)
{
	return walk(g, true, rank, req, layer, half, 0, tokens, pages, true, err);
}

#define SLICE_TOKENS 8 /* the clock is read between runs of this many tokens */

int kv_walk_slice(const struct kv_walk *w, struct kv_cursor *c, double budget_s, struct rc_err *err)
{
	const struct kv_geom *g = w->g;
	double end = rc_now() + budget_s;
	char **pp = malloc((size_t)w->npages * sizeof(char *));
	int rc = 0;

	if (!pp)
		return rc_err_set(err, ENOMEM, "out of memory");
	while (c->layer < g->layers) {
		uint32_t t1 =
			c->token + SLICE_TOKENS < w->tokens ? c->token + SLICE_TOKENS : w->tokens;

		for (uint32_t i = 0; i < w->npages; i++)
			pp[i] = w->page(w->arg, c->layer, c->half, i);
		rc = walk(g, w->dst, w->rank, w->req, c->layer, c->half, c->token, t1, pp, w->check,
			  err);
		if (rc)
			break;
		c->token = t1;
		if (c->token == w->tokens) {
			c->token = 0;
			if (++c->half == kv_halves(g)) {
				c->half = 0;
				c->layer++;
			}
		}
		if (rc_now() >= end)
			break;
	}
	free(pp);
	return rc ? rc : c->layer == g->layers;
}

static const char *const pack_names[] = { "auto", "always", "never" };

const char *kv_pack_name(enum kv_pack p)
{
	return pack_names[p];
}

int kv_pack_parse(const char *s, enum kv_pack *p)
{
	int i = word_parse(s, pack_names, 3);

	if (i < 0)
		return i;
	*p = (enum kv_pack)i;
	return 0;
}

static int seg_dst_cmp(const void *a, const void *b)
{
	const struct kv_seg *x = a, *y = b;

	if (x->dst_page != y->dst_page)
		return x->dst_page < y->dst_page ? -1 : 1;
	return x->dst_off < y->dst_off ? -1 : x->dst_off > y->dst_off;
}

void kv_segments_dst_order(struct kv_seg *s, size_t n)
{
	qsort(s, n, sizeof(*s), seg_dst_cmp);
}

uint64_t kv_seg_writes(const struct kv_seg *s, size_t n, bool packed)
{
	return kv_post_writes(s, n, packed, 0);
}

/* src_page_bytes 0: source pages count as apart; else they follow one
 * another. Packed, max_sge 0: a copy, any number of pieces a write; else a
 * gather of at most max_sge pieces (a piece: source-contiguous segments). */
static uint64_t writes_of(const struct kv_seg *s, size_t n, bool packed, uint64_t src_page_bytes,
			  uint32_t max_sge)
{
	uint64_t writes = 0, len = 0;
	uint32_t pieces = 0;

	for (size_t i = 0; i < n; i++) {
		const struct kv_seg *p = i ? &s[i - 1] : NULL;
		bool src_next =
			src_page_bytes
				? p && p->src_page * src_page_bytes + p->src_off + p->len ==
						  s[i].src_page * src_page_bytes + s[i].src_off
				: p && p->src_page == s[i].src_page &&
					  p->src_off + p->len == s[i].src_off;
		bool dst_next = p && p->dst_page == s[i].dst_page &&
				p->dst_off + p->len == s[i].dst_off &&
				len + s[i].len <= KV_WRITE_MAX;
		bool joins = dst_next && (src_next || (packed && (!max_sge || pieces < max_sge)));

		if (joins) {
			pieces += !src_next;
			len += s[i].len;
			continue;
		}
		writes++;
		len = s[i].len;
		pieces = 1;
	}
	return writes;
}

uint64_t kv_post_writes(const struct kv_seg *s, size_t n, bool packed, uint64_t src_page_bytes)
{
	return writes_of(s, n, packed, src_page_bytes, 0);
}

uint64_t kv_gather_writes(const struct kv_seg *s, size_t n, uint32_t max_sge,
			  uint64_t src_page_bytes)
{
	return writes_of(s, n, true, src_page_bytes, max_sge > 1 ? max_sge : 0);
}

enum kv_pack kv_pack_choose(enum kv_pack want, uint64_t bytes, uint64_t writes_never,
			    uint64_t writes_packed)
{
	if (want != KV_PACK_AUTO)
		return want;
	if (!writes_never || bytes / writes_never >= KV_PACK_SMALL ||
	    writes_packed * 2 > writes_never)
		return KV_PACK_NEVER;
	return KV_PACK_ALWAYS;
}
