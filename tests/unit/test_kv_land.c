// SPDX-License-Identifier: MIT
/* Landing (kv_land.c): which routes land, the landing runs and blocks, the
 * writes the senders post, and a whole layer half moved through a landing
 * run and unpacked into scattered pool pages, checked byte for byte. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/kv.h>
#include <rdmactl/kv_core.h>

#include "check.h"
#include "kv_recv.h"

static struct kv_geom nhd(uint32_t src_tp, uint32_t dst_tp, uint32_t spt, uint32_t dpt)
{
	return (struct kv_geom){ .layout = KV_LAYOUT_PAGED,
				 .page_layout = KV_PAGE_NHD,
				 .dtype = KV_DT_BF16,
				 .layers = 4,
				 .kv_heads = 8,
				 .head_dim = 16,
				 .src_tp = src_tp,
				 .dst_tp = dst_tp,
				 .src_page_tokens = spt,
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
	/* Route 1 holds heads 2-3 of decode rank 0 (32 bytes a head, rows of
	 * 128): its block is [token][2 heads], 64 bytes a token, across pages.
	 * Token 3 of page 0 at 3 * 64; token 3 of page 2 is token 35. */
	CHECK_EQ_U64(kv_land_off(&g, &r[1], 0, 3 * 128 + 64), 3 * 64);
	CHECK_EQ_U64(kv_land_off(&g, &r[1], 2, 3 * 128 + 64 + 5), 35 * 64 + 5);
	CHECK_EQ_U64(kv_land_off(&g, &r[0], 1, 2 * 128), 18 * 64);
	/* A unit: a page of tokens of both routes (16 x 4 heads x 32 bytes).
	 * A request of 40 tokens whose run starts at unit 3 of a landing area
	 * of 10 units per layer half: layer 2, V is run 5; route 0's block
	 * first, route 1's after its 40 tokens x 64 bytes. */
	CHECK_EQ_U64(kv_land_unit(&g, 0), 2048);
	CHECK_EQ_U64(kv_land_block(&g, &r[0], 40, 10, 3, 2, 1), (5 * 10 + 3) * 2048);
	CHECK_EQ_U64(kv_land_block(&g, &r[1], 40, 10, 3, 2, 1), (5 * 10 + 3) * 2048 + 40 * 64);
	CHECK_EQ_U64(kv_land_block(&g, &r[3], 40, 10, 0, 0, 0), 40 * 64);
	/* TP 2 -> 4 and 1 -> 1: whole destination rows, nothing to land. */
	g = nhd(2, 4, 16, 16);
	n = kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(!kv_land_applies(&g, &r[0]) && !kv_land_choose(KV_PACK_ALWAYS, &g, &r[0]));
	CHECK_EQ_U64(kv_land_unit(&g, 0), 0);
	g = nhd(1, 1, 16, 16);
	kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(!kv_land_applies(&g, &r[0]));
	/* hnd: a head is a plane already. */
	g = nhd(4, 2, 16, 16);
	g.page_layout = KV_PAGE_HND;
	kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(!kv_land_applies(&g, &r[0]));
	CHECK_EQ_U64(kv_land_unit(&g, 0), 0);
	/* Pieces of 16 KiB and more: auto writes them where they are. */
	g = nhd(4, 2, 16, 16);
	g.head_dim = 4096;
	kv_routes(&g, r, KV_MAX_ROUTES);
	CHECK(kv_land_applies(&g, &r[0]) && !kv_land_choose(KV_PACK_AUTO, &g, &r[0]) &&
	      kv_land_choose(KV_PACK_ALWAYS, &g, &r[0]));
}

/*
 * The serve engine's unpacking (kvr_unpack_step, kv_recv_land.c, built into
 * this test): its pool pages are this test's, the pages of (LAYER, HALF)
 * the decode rank's scattered pages, every other layer half's one junk
 * page; the end of a request (kvr_all_landed) is counted.
 */
#define LAYER 3
#define HALF 1
static struct {
	char *const *pages; /* by page id, this decode rank's */
	char *junk;
	int all_landed;
} pool;

char *kvr_page_addr(struct kv_receiver *r, uint32_t layer, uint32_t half, uint32_t page)
{
	(void)r;
	return layer == LAYER && half == HALF ? pool.pages[page] : pool.junk;
}

void kvr_all_landed(struct kv_receiver *r, struct rreq *q)
{
	(void)r;
	(void)q;
	pool.all_landed++;
}

/*
 * One layer half from every source rank through a landing run (each route
 * its block, written by memcpy over the landing segments at the offsets
 * kv_land_block gives, the run at unit 1 of dp + 1 per layer half), then
 * unpacked into scattered pool pages by the engine's step and checked.
 * unpack_routes: how many routes of each decode rank land (the others are
 * left in their blocks: the check must fail). Returns the destination
 * ranks whose check failed; *writes the writes the senders post (each at
 * most KV_WRITE_MAX bytes).
 */
static int move(const struct kv_geom *g, uint32_t tokens, int unpack_routes, uint64_t *writes)
{
	struct kv_route r[KV_MAX_ROUTES];
	uint32_t sp = kv_pages_for(g, false, tokens), dp = kv_pages_for(g, true, tokens),
		 units = dp + 1;
	uint64_t sb = kv_page_bytes(g, false), db = kv_page_bytes(g, true);
	uint64_t lb = (uint64_t)g->layers * kv_halves(g) * units * db; /* per decode rank, at most */
	int n = kv_routes(g, r, KV_MAX_ROUTES), bad = 0, done[KV_MAX_TP] = { 0 };
	char **src = calloc(g->src_tp * sp, sizeof(char *));
	char **dst = calloc(g->dst_tp * dp, sizeof(char *));
	char **byid = calloc(dp, sizeof(char *));
	uint32_t *ids = calloc(dp, sizeof(uint32_t));
	char *spool = calloc((size_t)g->src_tp * sp, sb);
	char *dpool = malloc((size_t)g->dst_tp * dp * db);
	char *land = malloc((size_t)(g->dst_tp * lb));
	struct kv_receiver *rx = calloc(g->dst_tp, sizeof(*rx));
	struct rc_err e;

	pool.junk = malloc(db);
	memset(dpool, 0xa5, (size_t)g->dst_tp * dp * db);
	memset(land, 0x5a, (size_t)(g->dst_tp * lb));
	*writes = 0;
	for (uint32_t s = 0; s < g->src_tp; s++) {
		for (uint32_t i = 0; i < sp; i++)
			src[s * sp + i] = spool + (s * sp + i) * sb;
		kv_fill(g, false, s, 7, LAYER, HALF, tokens, &src[s * sp]);
	}
	/* Logical page i is physical dp-1-i: the request's page ids. */
	for (uint32_t d = 0; d < g->dst_tp; d++)
		for (uint32_t i = 0; i < dp; i++)
			dst[d * dp + i] = dpool + (d * dp + dp - 1 - i) * db;
	for (uint32_t i = 0; i < dp; i++)
		ids[i] = dp - 1 - i;
	for (int k = 0; k < n; k++) {
		char *block = land + r[k].dst * lb +
			      kv_land_block(g, &r[k], tokens, units, 1, LAYER, HALF);
		struct kv_seg *s;
		size_t ns;

		CHECK(kv_land_applies(g, &r[k]));
		CHECK(kv_land_unit(g, r[k].dst) <= db);
		CHECK(kv_segments(g, &r[k], tokens, &s, &ns, NULL) == 0);
		kv_land_segments(g, &r[k], s, ns);
		*writes += kv_post_writes(s, ns, false, sb);
		for (size_t j = 0; j < ns; j++) {
			/* Inside the route's block, and the block inside the run. */
			CHECK(s[j].dst_page == 0 &&
			      s[j].dst_off + s[j].len <= kv_route_bytes(g, &r[k], tokens));
			memcpy(block + s[j].dst_off,
			       src[r[k].src * sp + s[j].src_page] + s[j].src_off, s[j].len);
		}
		CHECK(kv_land_block(g, &r[k], tokens, units, 1, LAYER, HALF) +
			      kv_route_bytes(g, &r[k], tokens) <=
		      (((uint64_t)LAYER * kv_halves(g) + HALF) * units + 1 + dp) *
			      kv_land_unit(g, r[k].dst));
		free(s);
		/* The decode rank's receiver: the route from its source rank,
		 * which lands unless unpack_routes of this rank's do already. */
		rx[r[k].dst].from[r[k].src] = r[k];
		if (done[r[k].dst]++ < unpack_routes)
			rx[r[k].dst].reqs[0].land |= 1ULL << r[k].src;
	}
	for (uint32_t d = 0; d < g->dst_tp; d++) {
		struct kv_receiver *x = &rx[d];
		struct rreq *q = &x->reqs[0];

		/* The request's LAYER landed, the ones before it were unpacked:
		 * the step unpacks it, the request's last layer. */
		x->g = g;
		x->pool.buf = land + d * lb;
		x->land_off = 0;
		x->land_units = units;
		q->used = true;
		q->tokens = tokens;
		q->npages = dp;
		q->pages = ids;
		q->land_at = 1;
		q->unpacked = LAYER;
		q->layers_landed = LAYER + 1;
		for (uint32_t i = 0; i < dp; i++)
			byid[ids[i]] = dst[d * dp + i];
		pool.pages = byid;
		pool.all_landed = 0;
		for (int i = 0; i < 100000 && kvr_unpack_step(x); i++)
			;
		/* no route lands: the step leaves the request alone */
		CHECK(q->land ? q->unpacked == LAYER + 1 && pool.all_landed == 1
			      : pool.all_landed == 0);
		if (kv_check(g, d, 7, LAYER, HALF, tokens, &dst[d * dp], &e))
			bad++;
	}
	free(src);
	free(dst);
	free(byid);
	free(ids);
	free(dpool);
	free(spool);
	free(land);
	free(rx);
	free(pool.junk);
	return bad;
}

static void transfer(void)
{
	struct kv_geom g = nhd(4, 2, 16, 16);
	uint64_t w;

	CHECK(move(&g, 64, 2, &w) == 0);
	/* A route's 64 tokens x 64 bytes lie contiguous on both sides (its
	 * source rank's pages hold its heads only, one after the other): one
	 * write per route, across the 4 destination pages. */
	CHECK_EQ_U64(w, 4);
	/* Unequal pages, a partial last page: still one write per route. */
	g = nhd(4, 2, 4, 8);
	CHECK(move(&g, 19, 2, &w) == 0);
	CHECK_EQ_U64(w, 4);
	/* The last destination page filled exactly: 24 tokens in 3 pages of 8
	 * (6 full source pages), and 40 in 5 (the last source page half full). */
	CHECK(move(&g, 24, 2, &w) == 0);
	CHECK_EQ_U64(w, 4);
	g = nhd(4, 2, 16, 8);
	CHECK(move(&g, 40, 2, &w) == 0);
	CHECK_EQ_U64(w, 4);
	g = nhd(8, 1, 32, 16);
	CHECK(move(&g, 50, 8, &w) == 0);
	CHECK_EQ_U64(w, 8);
	/* The benchmark's geometry: 128 dims, 32-token source pages, 16-token
	 * destination ones, 512 tokens: a route's 256 KiB go in writes of
	 * KV_WRITE_MAX (64 KiB), 4 a route, where page by page took 32. */
	g = nhd(4, 2, 32, 16);
	g.head_dim = 128;
	CHECK(move(&g, 512, 2, &w) == 0);
	CHECK_EQ_U64(w, 4 * (512 * 512 / KV_WRITE_MAX));
	/* A partial last source page and a run over 64 KiB that does not
	 * divide: 100 tokens x 512 bytes = 51200 bytes a route, one write. */
	CHECK(move(&g, 100, 2, &w) == 0);
	CHECK_EQ_U64(w, 4);
	g = nhd(4, 2, 16, 16);
	/* A route left in its landing block: its decode rank fails the check. */
	CHECK(move(&g, 64, 1, &w) == 2);
	CHECK(move(&g, 64, 0, &w) == 2);
}

/* Protocol 4: HELLO carries --land, WELCOME the landing area, ALLOC the
 * request's landing run; a connect request of protocol 2 to 5 is told
 * apart from garbage. */
static void protocol(void)
{
	struct kv_msg in = { .type = KV_MSG_HELLO }, out;
	struct kv_hello_pd pd = { .rank = 1, .qp = 0, .nqps = 1, .session = 7 };
	unsigned char buf[KV_MSG_MAX], pdb[KV_PD_LEN];
	uint32_t v2 = htole32(KV_PD_MAGIC_V2), v3 = htole32(KV_PD_MAGIC_V3),
		 v4 = htole32(KV_PD_MAGIC_V4), v5 = htole32(KV_PD_MAGIC_V5);
	uint32_t pages[KV_MAX_REQ_PAGES], got[KV_MAX_REQ_PAGES];
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
	in.u.welcome.land_units = 77;
	len = kv_msg_encode(&in, buf, sizeof(buf));
	CHECK(len > 0 && kv_msg_decode(buf, (size_t)len, &out, NULL, 0) == 0);
	CHECK_EQ_U64(out.u.welcome.land, 0x7f0000100000ULL);
	CHECK_EQ_U64(out.u.welcome.land_units, 77);
	/* The largest ALLOC, its run and pages, fits a message. */
	for (uint32_t i = 0; i < KV_MAX_REQ_PAGES; i++)
		pages[i] = KV_MAX_REQ_PAGES - i;
	in = (struct kv_msg){ .type = KV_MSG_ALLOC, .req = 9 };
	in.u.alloc.slot = 5;
	in.u.alloc.gen = 2;
	in.u.alloc.npages = KV_MAX_REQ_PAGES;
	in.u.alloc.pages = pages;
	in.u.alloc.land = 1234;
	len = kv_msg_encode(&in, buf, sizeof(buf));
	CHECK(len > 0 && kv_msg_decode(buf, (size_t)len, &out, got, KV_MAX_REQ_PAGES) == 0);
	CHECK(out.u.alloc.land == 1234 && out.u.alloc.npages == KV_MAX_REQ_PAGES &&
	      !memcmp(got, pages, sizeof(pages)));
	in.u.alloc.land = KV_LAND_NONE;
	len = kv_msg_encode(&in, buf, sizeof(buf));
	CHECK(len > 0 && kv_msg_decode(buf, (size_t)len, &out, got, KV_MAX_REQ_PAGES) == 0);
	CHECK(out.u.alloc.land == KV_LAND_NONE);
	CHECK(kv_pd_encode(&pd, pdb, sizeof(pdb)) == KV_PD_LEN);
	CHECK(kv_pd_decode(pdb, sizeof(pdb), &pd) == 0);
	memcpy(pdb, &v5, sizeof(v5));
	CHECK(kv_pd_decode(pdb, sizeof(pdb), &pd) == -EPROTO);
	memcpy(pdb, &v4, sizeof(v4));
	CHECK(kv_pd_decode(pdb, sizeof(pdb), &pd) == -EPROTO);
	memcpy(pdb, &v3, sizeof(v3));
	CHECK(kv_pd_decode(pdb, sizeof(pdb), &pd) == -EPROTO);
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
