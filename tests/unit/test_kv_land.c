// SPDX-License-Identifier: MIT
/* Landing (kv_land.c): which routes land, the landing offsets, the writes
 * the senders post, and a whole layer half moved through landing pages and
 * unpacked, checked byte for byte. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/kv.h>

#include "check.h"

static struct kv_geom nhd(uint32_t src_tp, uint32_t dst_tp, uint32_t spt, uint32_t dpt)
{
	return (struct kv_geom){ .layout = KV_LAYOUT_PAGED, .page_layout = KV_PAGE_NHD,
				 .dtype = KV_DT_BF16, .layers = 4, .kv_heads = 8, .head_dim = 16,
				 .src_tp = src_tp, .dst_tp = dst_tp, .src_page_tokens = spt,
				 .dst_page_tokens = dpt };
}

static void choices(void)
{
	struct kv_route r[KV_MAX_ROUTES];
	struct kv_geom g = nhd(4, 2, 16, 16);
	int n = kv_routes(&g, r, KV_MAX_ROUTES);

	/* TP 4 -> 2, nhd: half of every destination row: lands. */
	CHECK(n == 4 && kv_land_applies(&g, &r[1]) && kv_land_choose(KV_PACK_AUTO, &g, &r[1]));
	CHECK(!kv_land_choose(KV_PACK_NEVER, &g, &r[1]));
	/* Route 1 holds heads 2-3 of decode rank 0 (32 bytes a head): token 3's
	 * piece at 3 * 128 + 64 lands at 16 tokens * 64 bytes + 3 * 64. */
	CHECK_EQ_U64(kv_land_off(&g, &r[1], 3 * 128 + 64), 16 * 64 + 3 * 64);
	CHECK_EQ_U64(kv_land_off(&g, &r[1], 3 * 128 + 64 + 5), 16 * 64 + 3 * 64 + 5);
	CHECK_EQ_U64(kv_land_off(&g, &r[0], 2 * 128), 2 * 64);
	/* TP 2 -> 4 and 1 -> 1: whole destination rows, nothing to land. */
	g = nhd(2, 4, 16, 16);
	n = kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(!kv_land_applies(&g, &r[0]) && !kv_land_choose(KV_PACK_ALWAYS, &g, &r[0]));
	g = nhd(1, 1, 16, 16);
	kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(!kv_land_applies(&g, &r[0]));
	/* hnd: a head is a plane already. */
	g = nhd(4, 2, 16, 16);
	g.page_layout = KV_PAGE_HND;
	kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(!kv_land_applies(&g, &r[0]));
	/* Pieces of 16 KiB and more: auto writes them where they are. */
	g = nhd(4, 2, 16, 16);
	g.head_dim = 4096;
	kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(kv_land_applies(&g, &r[0]) && !kv_land_choose(KV_PACK_AUTO, &g, &r[0]) &&
	      kv_land_choose(KV_PACK_ALWAYS, &g, &r[0]));
}

/*
 * One layer half from every source rank through landing pages (each route
 * its own part of them, written by memcpy over the landing segments), then
 * unpacked into scattered pool pages and checked. unpack_routes: how many
 * routes of each decode rank to unpack (fewer: the check must fail).
 * Returns the destination ranks whose check failed; *writes the writes the
 * senders post.
 */
static int move(const struct kv_geom *g, uint32_t tokens, int unpack_routes, uint64_t *writes)
{
	struct kv_route r[KV_MAX_ROUTES];
	uint32_t sp = kv_pages_for(g, false, tokens), dp = kv_pages_for(g, true, tokens);
	uint64_t sb = kv_page_bytes(g, false), db = kv_page_bytes(g, true);
	int n = kv_routes(g, r, KV_MAX_ROUTES), bad = 0, done[KV_MAX_TP] = { 0 };
	char **src = calloc(g->src_tp * sp, sizeof(char *));
	char **dst = calloc(g->dst_tp * dp, sizeof(char *));
	char *spool = calloc((size_t)g->src_tp * sp, sb);
	char *dpool = malloc((size_t)g->dst_tp * dp * db);
	char *land = malloc((size_t)g->dst_tp * dp * db);
	struct rc_err e;

	memset(dpool, 0xa5, (size_t)g->dst_tp * dp * db);
	memset(land, 0x5a, (size_t)g->dst_tp * dp * db);
	*writes = 0;
	for (uint32_t s = 0; s < g->src_tp; s++) {
		for (uint32_t i = 0; i < sp; i++)
			src[s * sp + i] = spool + (s * sp + i) * sb;
		kv_fill(g, false, s, 7, 3, 1, tokens, &src[s * sp]);
	}
	/* Logical page i is physical dp-1-i, landing page alike. */
	for (uint32_t d = 0; d < g->dst_tp; d++)
		for (uint32_t i = 0; i < dp; i++)
			dst[d * dp + i] = dpool + (d * dp + dp - 1 - i) * db;
	for (int k = 0; k < n; k++) {
		struct kv_seg *s;
		size_t ns;

		CHECK(kv_land_applies(g, &r[k]));
		CHECK(kv_segments(g, &r[k], tokens, &s, &ns, NULL) == 0);
		kv_land_segments(g, &r[k], s, ns);
		*writes += kv_post_writes(s, ns, false, sb);
		for (size_t j = 0; j < ns; j++) {
			size_t at = (size_t)(dst[r[k].dst * dp + s[j].dst_page] - dpool);

			CHECK(s[j].dst_off + s[j].len <= db);
			memcpy(land + at + s[j].dst_off, src[r[k].src * sp + s[j].src_page] + s[j].src_off,
			       s[j].len);
		}
		free(s);
		if (done[r[k].dst]++ >= unpack_routes)
			continue;
		for (uint32_t i = 0; i < dp; i++) {
			size_t at = (size_t)(dst[r[k].dst * dp + i] - dpool);
			uint32_t t = tokens - i * g->dst_page_tokens;

			kv_land_unpack(g, &r[k], land + at, dpool + at,
				       t < g->dst_page_tokens ? t : g->dst_page_tokens);
		}
	}
	for (uint32_t d = 0; d < g->dst_tp; d++)
		if (kv_check(g, d, 7, 3, 1, tokens, &dst[d * dp], &e))
			bad++;
	free(src);
	free(dst);
	free(dpool);
	free(spool);
	free(land);
	return bad;
}

static void transfer(void)
{
	struct kv_geom g = nhd(4, 2, 16, 16);
	uint64_t w;

	CHECK(move(&g, 64, 2, &w) == 0);
	/* One write per destination page and route: 4 pages, 4 routes. */
	CHECK_EQ_U64(w, 16);
	/* Unequal pages, a partial last page, 8 sources into 1. */
	g = nhd(4, 2, 4, 8);
	CHECK(move(&g, 19, 2, &w) == 0);
	/* Source pages of 4 tokens follow one another: one write per
	 * destination page (8 + 8 + 3 tokens) and route. */
	CHECK_EQ_U64(w, 3 * 4);
	g = nhd(8, 1, 32, 16);
	CHECK(move(&g, 50, 8, &w) == 0);
	g = nhd(4, 2, 16, 16);
	/* A route left in its landing pages: its decode rank fails the check. */
	CHECK(move(&g, 64, 1, &w) == 2);
	CHECK(move(&g, 64, 0, &w) == 2);
}

/* Protocol 3: HELLO carries --land, WELCOME the landing area; a connect
 * request of protocol 2 is told apart from garbage. */
static void protocol(void)
{
	struct kv_msg in = { .type = KV_MSG_HELLO }, out;
	struct kv_hello_pd pd = { .rank = 1, .qp = 0, .nqps = 1, .session = 7 };
	unsigned char buf[KV_MSG_MAX], pdb[KV_PD_LEN];
	uint32_t v2 = htole32(KV_PD_MAGIC_V2);
	int len;

	in.u.hello.g = nhd(4, 2, 16, 16);
	in.u.hello.land = KV_PACK_NEVER;
	len = kv_msg_encode(&in, buf, sizeof(buf));
	CHECK(len > 0 && kv_msg_decode(buf, (size_t)len, &out, NULL, 0) == 0);
	CHECK(out.u.hello.land == KV_PACK_NEVER);
	buf[len - 4] = 3; /* no such choice */
	CHECK(kv_msg_decode(buf, (size_t)len, &out, NULL, 0) == -EBADMSG);
	in = (struct kv_msg){ .type = KV_MSG_WELCOME };
	in.u.welcome.land = 0x7f0000100000ULL;
	len = kv_msg_encode(&in, buf, sizeof(buf));
	CHECK(len > 0 && kv_msg_decode(buf, (size_t)len, &out, NULL, 0) == 0);
	CHECK_EQ_U64(out.u.welcome.land, 0x7f0000100000ULL);
	CHECK(kv_pd_encode(&pd, pdb, sizeof(pdb)) == KV_PD_LEN);
	CHECK(kv_pd_decode(pdb, sizeof(pdb), &pd) == 0);
	memcpy(pdb, &v2, sizeof(v2));
	CHECK(kv_pd_decode(pdb, sizeof(pdb), &pd) == -EPROTO);
	pdb[0] ^= 0x10;
	CHECK(kv_pd_decode(pdb, sizeof(pdb), &pd) == -EBADMSG);
}

int main(void)
{
	choices();
	transfer();
	protocol();
	CHECK_DONE();
}
