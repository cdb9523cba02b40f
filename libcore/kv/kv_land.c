// SPDX-License-Identifier: MIT
/*
 * Landing: a route whose pieces split every destination token row writes
 * them, contiguous across the request's pages, into its block of the
 * request's run in the landing area, and the decode rank unpacks them into
 * the pool pages once the layer is in. Both sides take the same decision
 * from the geometry (kv_land_choose) and the same offsets (kv_land_block,
 * kv_land_off). Pure arithmetic and copies: no device.
 */
#include <string.h>

#include <rdmactl/kv.h>
#include <rdmactl/kv_core.h>

/* Heads of the route's decode rank: the width of its token rows. */
static uint32_t dst_heads(const struct kv_geom *g, const struct kv_route *r)
{
	struct kv_heads h;

	kv_rank_heads(g, g->dst_tp, r->dst, &h);
	return h.count;
}

bool kv_land_applies(const struct kv_geom *g, const struct kv_route *r)
{
	return g->layout == KV_LAYOUT_PAGED && g->page_layout == KV_PAGE_NHD &&
	       r->nheads < dst_heads(g, r);
}

bool kv_land_choose(enum kv_pack want, const struct kv_geom *g, const struct kv_route *r)
{
	if (want == KV_PACK_NEVER || !kv_land_applies(g, r))
		return false;
	return want == KV_PACK_ALWAYS || (uint64_t)r->nheads * kv_row_bytes(g) < KV_PACK_SMALL;
}

/* Heads of the routes into dst where landing applies, below head offset
 * below of the decode rank (UINT32_MAX: all of them). */
static uint32_t land_heads(const struct kv_geom *g, uint32_t dst, uint32_t below)
{
	struct kv_route r[KV_MAX_ROUTES];
	int n = kv_routes(g, r, KV_MAX_ROUTES);
	uint32_t heads = 0;

	for (int i = 0; i < n; i++)
		if (r[i].dst == dst && r[i].dst_head_off < below && kv_land_applies(g, &r[i]))
			heads += r[i].nheads;
	return heads;
}

uint64_t kv_land_unit(const struct kv_geom *g, uint32_t dst)
{
	return (uint64_t)g->dst_page_tokens * land_heads(g, dst, UINT32_MAX) * kv_row_bytes(g);
}

uint64_t kv_land_block(const struct kv_geom *g, const struct kv_route *r, uint32_t tokens,
		       uint32_t units, uint32_t at, uint32_t layer, uint32_t half)
{
	uint64_t run = ((uint64_t)layer * kv_halves(g) + half) * units + at;

	return run * kv_land_unit(g, r->dst) +
	       (uint64_t)land_heads(g, r->dst, r->dst_head_off) * tokens * kv_row_bytes(g);
}

uint32_t kv_land_off(const struct kv_geom *g, const struct kv_route *r, uint32_t dst_page,
		     uint32_t dst_off)
{
	uint32_t rb = kv_row_bytes(g), row = dst_heads(g, r) * rb;
	uint32_t t = dst_page * g->dst_page_tokens + dst_off / row;

	return t * r->nheads * rb + (dst_off % row - r->dst_head_off * rb);
}

void kv_land_segments(const struct kv_geom *g, const struct kv_route *r, struct kv_seg *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		s[i].dst_off = kv_land_off(g, r, s[i].dst_page, s[i].dst_off);
		s[i].dst_page = 0;
	}
}

void kv_land_unpack(const struct kv_geom *g, const struct kv_route *r, const char *block,
		    char *pool, uint32_t page, uint32_t tokens)
{
	uint32_t rb = kv_row_bytes(g), piece = r->nheads * rb, row = dst_heads(g, r) * rb;

	block += (size_t)page * g->dst_page_tokens * piece;
	pool += (size_t)r->dst_head_off * rb;
	for (uint32_t t = 0; t < tokens; t++)
		memcpy(pool + (size_t)t * row, block + (size_t)t * piece, piece);
}
