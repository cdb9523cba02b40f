// SPDX-License-Identifier: MIT
/*
 * Landing: a route whose pieces split every destination token row writes
 * them, contiguous, into a landing page shaped like the pool page, and the
 * decode rank unpacks them into the pool page once the layer is in. Both
 * sides take the same decision from the geometry (kv_land_choose) and the
 * same offsets (kv_land_off). Pure arithmetic and copies: no device.
 */
#include <string.h>

#include <rdmactl/kv.h>

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

uint32_t kv_land_off(const struct kv_geom *g, const struct kv_route *r, uint32_t dst_off)
{
	uint32_t rb = kv_row_bytes(g), row = dst_heads(g, r) * rb, t = dst_off / row;

	return r->dst_head_off * g->dst_page_tokens * rb + t * r->nheads * rb +
	       (dst_off % row - r->dst_head_off * rb);
}

void kv_land_segments(const struct kv_geom *g, const struct kv_route *r, struct kv_seg *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		s[i].dst_off = kv_land_off(g, r, s[i].dst_off);
}

void kv_land_unpack(const struct kv_geom *g, const struct kv_route *r, const char *land, char *pool,
		    uint32_t tokens)
{
	uint32_t rb = kv_row_bytes(g), piece = r->nheads * rb, row = dst_heads(g, r) * rb;

	land += (size_t)r->dst_head_off * g->dst_page_tokens * rb;
	pool += (size_t)r->dst_head_off * rb;
	for (uint32_t t = 0; t < tokens; t++)
		memcpy(pool + (size_t)t * row, land + (size_t)t * piece, piece);
}
